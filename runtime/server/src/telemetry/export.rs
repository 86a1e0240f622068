//! The OTLP exporter's HTTP client: the runtime's own reqwest (rustls) client, so tracing adds
//! no second HTTP or TLS stack. Network I/O. The SDK calls it from its batch thread; the request
//! runs as a task on the serving Tokio runtime and the thread waits for its answer.

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use std::time::Duration;

/// Longest wait for a collector to take one batch.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest collector answer read (answers are a few bytes of protobuf; anything bigger is not
/// a collector).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Sends export requests through reqwest on the serving runtime.
#[derive(Debug)]
pub(super) struct ExportClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl ExportClient {
    /// A client whose requests run on `runtime`.
    pub(super) fn new(runtime: tokio::runtime::Handle) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { client, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request.map(reqwest::Body::from))?;
            let mut response = client.execute(request).await?;
            let mut answer = Response::builder().status(response.status());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(HttpError::from(format!(
                        "the collector's answer exceeds {MAX_ANSWER_BYTES} bytes"
                    )));
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, HttpError>(answer.body(Bytes::from(body))?)
        });
        task.await?
    }
}
