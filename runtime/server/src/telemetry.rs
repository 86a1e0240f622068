//! OpenTelemetry tracing, off by default. `--otlp-endpoint` or the standard
//! `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` variables turn it on; spans then leave in batches over
//! OTLP/HTTP (protobuf) from a bounded queue, through the runtime's own HTTP client. The other
//! `OTEL_*` variables (service name, resource attributes, sampler, batch sizes, headers) are read
//! by the OpenTelemetry SDK as its specification says.
//!
//! Tracing is process-wide like logging: [`init`] installs the tracer once; when it was not
//! called, every hook in this module is one atomic load and does nothing.

mod call;
mod export;
mod propagate;
mod setup;

pub use call::{
    CallScope, RequestSpan, TokenNote, UpstreamSpan, current_trace_id, record_approval,
    record_token, record_upstream, upstream_span,
};
pub use propagate::{parent_from_headers, parent_from_meta};
pub use setup::{Endpoint, Telemetry, TelemetryError, endpoint, init};

use opentelemetry_sdk::trace::SdkTracer;
use std::sync::OnceLock;

/// The tracer, once [`init`] turned tracing on.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The tracer when tracing is on.
pub fn tracer() -> Option<&'static SdkTracer> {
    TRACER.get()
}

/// Whether tracing is on.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}
