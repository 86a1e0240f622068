//! W3C trace context in: the parent of a request span, from `params._meta` (`traceparent`,
//! `tracestate`, as MCP 2026-07-28 carries them) or from the HTTP headers. Pure.

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::Value;

/// `params._meta` read as a carrier of string fields.
struct Meta<'a>(&'a serde_json::Map<String, Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The remote parent named in `params._meta`, if it names a valid one.
pub fn parent_from_meta(params: &Value) -> Option<Context> {
    let meta = params.get("_meta")?.as_object()?;
    meta.get("traceparent")?;
    valid(TraceContextPropagator::new().extract(&Meta(meta)))
}

/// The remote parent named in the `traceparent` header, if valid (`None` as well when tracing
/// and auditing are off, so an unobserved request pays for nothing).
pub fn parent_from_headers(headers: &http::HeaderMap) -> Option<Context> {
    if !(super::enabled() || crate::audit::enabled()) || !headers.contains_key("traceparent") {
        return None;
    }
    let carrier = opentelemetry_http::HeaderExtractor(headers);
    valid(TraceContextPropagator::new().extract(&carrier))
}

fn valid(cx: Context) -> Option<Context> {
    cx.span().span_context().is_valid().then_some(cx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    #[test]
    fn reads_the_parent_from_meta() {
        let cx = parent_from_meta(&json!({"_meta": {"traceparent": PARENT, "tracestate": "a=b"}}))
            .unwrap();
        let span = cx.span();
        let parent = span.span_context();
        assert_eq!(
            parent.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        assert_eq!(parent.span_id().to_string(), "b7ad6b7169203331");
        assert!(parent.is_remote() && parent.is_sampled());
        assert_eq!(parent.trace_state().header(), "a=b");
    }

    #[test]
    fn ignores_missing_or_malformed_parents() {
        assert!(parent_from_meta(&json!({})).is_none());
        assert!(parent_from_meta(&json!({"_meta": {}})).is_none());
        assert!(parent_from_meta(&json!({"_meta": {"traceparent": 7}})).is_none());
        for bad in [
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-zzzz6b7169203331-01",
            "garbage",
        ] {
            assert!(parent_from_meta(&json!({"_meta": {"traceparent": bad}})).is_none());
        }
    }
}
