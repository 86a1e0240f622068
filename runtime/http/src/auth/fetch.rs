//! Bounded JSON fetches from the authorization server (metadata, keys, introspection): a short
//! timeout, no redirects, a size cap, and errors that name the URL but never a secret. I/O.

use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;
use url::Url;

/// Largest metadata, key set or introspection answer read.
const MAX_BYTES: usize = 256 * 1024;
/// Longest wait for one answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a fetch failed (the message is for logs; it holds the URL, never a token or secret).
#[derive(Debug, thiserror::Error)]
#[error("{url}: {message}")]
pub struct FetchError {
    /// What was fetched.
    pub url: String,
    /// What went wrong.
    pub message: String,
}

/// The HTTP client of the auth module: no redirects (a redirect could lead key fetches off the
/// issuer's host), bounded in time.
pub(super) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .build()
        // The builder fails only when the TLS backend cannot initialise; fall back to the
        // default client, which then reports the same failure on each request.
        .unwrap_or_default()
}

/// GETs `url` as JSON.
pub(super) async fn get_json(client: &reqwest::Client, url: &Url) -> Result<Value, FetchError> {
    let request = client
        .get(url.clone())
        .header(http::header::ACCEPT, "application/json");
    read_json(url, request).await
}

/// Sends `request` and reads a JSON answer of at most [`MAX_BYTES`].
pub(super) async fn read_json(
    url: &Url,
    request: reqwest::RequestBuilder,
) -> Result<Value, FetchError> {
    let fail = |message: String| FetchError {
        url: url.to_string(),
        message,
    };
    let response = request
        .send()
        .await
        .map_err(|err| fail(format!("request failed: {}", without_url(&err))))?;
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("answered {status}")));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|err| fail(format!("reading failed: {}", without_url(&err))))?;
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(fail(format!("answer larger than {MAX_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|err| fail(format!("not JSON: {err}")))
}

fn without_url(err: &reqwest::Error) -> String {
    let mut message = err.to_string();
    if let Some(url) = err.url() {
        message = message.replace(url.as_str(), "");
    }
    message
}
