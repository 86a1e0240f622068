//! Latency histograms that carry the trace of an observation as an OpenMetrics exemplar when
//! tracing is on, and are plain histograms (no exemplar lock, no label set) when it is off. The
//! choice is made per series when it is first used, which is after tracing was set up. No I/O.

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// The exemplar's label set: the trace of the observed request (32 hex digits, well under the
/// 128 characters OpenMetrics allows an exemplar's labels).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TraceLabel {
    /// The W3C trace id.
    pub trace_id: String,
}

/// One latency series (a clone is a handle on the same series).
#[derive(Clone, Debug)]
pub enum Latency {
    /// Tracing is off: a plain histogram.
    Plain(Histogram),
    /// Tracing is on: each bucket keeps the trace of its latest sampled observation.
    Traced(HistogramWithExemplars<TraceLabel>),
}

fn buckets() -> impl Iterator<Item = f64> {
    // 100 µs .. ~26 s
    exponential_buckets(0.0001, 2.0, 18)
}

impl Latency {
    /// A new series, with exemplars when tracing is on.
    pub fn new() -> Self {
        if crate::telemetry::enabled() {
            Self::Traced(HistogramWithExemplars::new(buckets()))
        } else {
            Self::Plain(Histogram::new(buckets()))
        }
    }

    /// Records `seconds`, with `trace_id` as the bucket's exemplar when there is one.
    pub fn observe(&self, seconds: f64, trace_id: Option<String>) {
        match self {
            Self::Plain(histogram) => histogram.observe(seconds),
            Self::Traced(histogram) => histogram.observe(
                seconds,
                trace_id.map(|trace_id| TraceLabel { trace_id }),
                None,
            ),
        }
    }
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl TypedMetric for Latency {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Latency {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        match self {
            Self::Plain(histogram) => histogram.encode(encoder),
            Self::Traced(histogram) => histogram.encode(encoder),
        }
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::registry::Registry;

    fn plain() -> Latency {
        Latency::Plain(Histogram::new(buckets()))
    }

    fn traced() -> Latency {
        Latency::Traced(HistogramWithExemplars::new(buckets()))
    }

    fn exposition(new: fn() -> Latency, trace_id: Option<&str>) -> String {
        let family = Family::<TraceLabel, Latency>::new_with_constructor(new);
        let mut registry = Registry::default();
        registry.register("t_duration", "test", family.clone());
        let series = family.get_or_create(&TraceLabel {
            trace_id: "series".into(),
        });
        series.observe(0.0003, trace_id.map(str::to_owned));
        series.observe(0.0004, None);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn traced_buckets_carry_the_trace_as_an_exemplar() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let text = exposition(traced, Some(trace));
        let exemplar = format!(" # {{trace_id=\"{trace}\"}} 0.0003");
        let lines: Vec<_> = text.lines().filter(|l| l.contains(" # {")).collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert!(lines[0].starts_with("t_duration_bucket{"), "{text}");
        assert!(lines[0].ends_with(&exemplar), "{text}");
        // An observation without a trace leaves its bucket without an exemplar.
        assert!(text.contains("t_duration_count{trace_id=\"series\"} 2"));
    }

    #[test]
    fn plain_and_untraced_observations_have_none() {
        for new in [plain as fn() -> Latency, traced] {
            let text = exposition(new, None);
            assert!(!text.contains(" # {"), "{text}");
            assert!(
                text.contains("t_duration_count{trace_id=\"series\"} 2"),
                "{text}"
            );
        }
        // Plain ignores a trace it is given (tracing is off).
        let text = exposition(plain, Some("ab"));
        assert!(!text.contains(" # {"), "{text}");
    }
}
