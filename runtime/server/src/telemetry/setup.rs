//! Turning tracing on: which endpoint (flag, then the standard variables), the exporter over the
//! runtime's HTTP client, the batch processor (bounded queue) and the resource. No I/O until
//! spans are exported.

use super::TRACER;
use super::export::ExportClient;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};
use std::time::Duration;

/// The instrumentation scope of the runtime's spans.
const SCOPE: &str = "mcp-runtime";
/// Path of the traces signal under an OTLP/HTTP base URL.
const TRACES_PATH: &str = "/v1/traces";
/// The one OTLP protocol this build speaks.
const PROTOCOL: &str = "http/protobuf";
/// Longest wait for the last spans at shutdown.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Why tracing could not be turned on.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The endpoint is not an http(s) URL.
    #[error("--otlp-endpoint {0:?} is not an http:// or https:// URL")]
    Endpoint(String),
    /// A protocol other than OTLP/HTTP protobuf was asked for.
    #[error("{variable}={value:?}: only {PROTOCOL} is supported")]
    Protocol {
        /// The variable that asked.
        variable: &'static str,
        /// What it asked for.
        value: String,
    },
    /// The exporter refused its configuration (such as an invalid endpoint variable).
    #[error("cannot set up the OTLP exporter")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
    /// The export client could not be built.
    #[error("cannot build the OTLP HTTP client")]
    Client(#[source] reqwest::Error),
}

/// Where spans go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The traces URL from `--otlp-endpoint` (`/v1/traces` appended to the base URL).
    Flag(String),
    /// The exporter reads `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`.
    Environment,
}

/// Decides whether tracing is on and where spans go, from the flag and the environment (`env`
/// reads a variable). `None`: tracing stays off.
pub fn endpoint(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Endpoint>, TelemetryError> {
    let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    let chosen = match flag.map(str::trim).filter(|f| !f.is_empty()) {
        Some(base) => {
            let url = reqwest::Url::parse(base)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
                .ok_or_else(|| TelemetryError::Endpoint(base.to_owned()))?;
            let base = url.as_str().trim_end_matches('/');
            Endpoint::Flag(format!("{base}{TRACES_PATH}"))
        }
        None if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() =>
        {
            Endpoint::Environment
        }
        None => return Ok(None),
    };
    for variable in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(value) = set(variable) {
            if value.trim() != PROTOCOL {
                return Err(TelemetryError::Protocol { variable, value });
            }
            // The signal-specific variable wins over the general one.
            break;
        }
    }
    Ok(Some(chosen))
}

/// The installed tracer provider; [`Telemetry::shutdown`] exports what is still queued.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Exports the queued spans (bounded wait) and stops the exporter. Blocks: call it off the
    /// async workers (`spawn_blocking`) or after serving ended.
    pub fn shutdown(self) {
        if let Err(err) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(error = %err, "spans may have been lost at shutdown");
        }
    }
}

/// Turns tracing on for this process when `endpoint` says so. Must run inside the Tokio runtime
/// that serves (exports run on it). A second call changes nothing and returns `None`.
pub fn init(endpoint: Option<Endpoint>) -> Result<Option<Telemetry>, TelemetryError> {
    let Some(endpoint) = endpoint else {
        return Ok(None);
    };
    let client =
        ExportClient::new(tokio::runtime::Handle::current()).map_err(TelemetryError::Client)?;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client);
    if let Endpoint::Flag(url) = &endpoint {
        exporter = exporter.with_endpoint(url.clone());
    }
    let exporter = exporter.build().map_err(TelemetryError::Exporter)?;
    // The batch processor's queue is bounded (OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default): when the
    // collector cannot keep up, new spans are dropped rather than held.
    let processor = BatchSpanProcessor::builder(exporter).build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource())
        .build();
    if TRACER.set(provider.tracer(SCOPE)).is_err() {
        let _ = provider.shutdown();
        return Ok(None);
    }
    let endpoint = match &endpoint {
        Endpoint::Flag(url) => url.as_str(),
        Endpoint::Environment => "from OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT",
    };
    tracing::info!(endpoint, "tracing on: exporting spans over OTLP/HTTP");
    Ok(Some(Telemetry { provider }))
}

/// The SDK's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), named `mcp-runtime` when
/// neither names the service.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    if named {
        builder.build()
    } else {
        builder.with_service_name(SCOPE).build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn off_unless_an_endpoint_is_named() {
        assert_eq!(endpoint(None, env(&[])).unwrap(), None);
        assert_eq!(
            endpoint(None, env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])).unwrap(),
            None
        );
        assert_eq!(
            endpoint(None, env(&[("OTEL_SERVICE_NAME", "x")])).unwrap(),
            None
        );
    }

    #[test]
    fn the_flag_is_a_base_url_and_wins_over_the_environment() {
        let vars = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://other:4318")]);
        assert_eq!(
            endpoint(Some("http://127.0.0.1:4318/"), vars).unwrap(),
            Some(Endpoint::Flag("http://127.0.0.1:4318/v1/traces".into()))
        );
        assert_eq!(
            endpoint(Some("https://otel.example.com/otlp"), env(&[])).unwrap(),
            Some(Endpoint::Flag(
                "https://otel.example.com/otlp/v1/traces".into()
            ))
        );
        for bad in ["127.0.0.1:4318", "ftp://x", "http://"] {
            assert!(matches!(
                endpoint(Some(bad), env(&[])),
                Err(TelemetryError::Endpoint(_))
            ));
        }
    }

    #[test]
    fn the_standard_variables_turn_it_on_or_off() {
        for var in [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ] {
            assert_eq!(
                endpoint(None, env(&[(var, "http://c:4318")])).unwrap(),
                Some(Endpoint::Environment)
            );
        }
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert_eq!(
            endpoint(
                Some("http://c:4318"),
                env(&[on, ("OTEL_SDK_DISABLED", "TRUE")])
            )
            .unwrap(),
            None
        );
        assert_eq!(
            endpoint(None, env(&[on, ("OTEL_TRACES_EXPORTER", "none")])).unwrap(),
            None
        );
    }

    #[test]
    fn refuses_protocols_it_does_not_speak() {
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        let grpc = endpoint(None, env(&[on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]));
        assert!(matches!(grpc, Err(TelemetryError::Protocol { .. })));
        let specific = env(&[
            on,
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert_eq!(
            endpoint(None, specific).unwrap(),
            Some(Endpoint::Environment)
        );
    }
}
