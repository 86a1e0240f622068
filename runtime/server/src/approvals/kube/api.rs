//! A minimal Kubernetes API client for the approval store: plain HTTPS with the pod's
//! ServiceAccount (in-cluster defaults, overridable by flags to run outside a cluster). The
//! token is read again for every request, as the kubelet rotates it, and never logged; every
//! request has a timeout and every answer a size bound. Does network and file I/O.

use super::super::store::StoreError;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where in-cluster credentials are mounted.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Longest wait for one API request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest answer read (a list of approvals for one call digest is small).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// Largest token file read.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;
/// Attempts of one request the API server answers with 429.
const ATTEMPTS: u32 = 4;
/// Wait before sending again when the 429 names none.
const DEFAULT_RETRY_WAIT: Duration = Duration::from_millis(500);
/// Longest wait before sending again, whatever `Retry-After` says: a caller is waiting.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(2);

/// How to reach the API server.
#[derive(Clone, Debug)]
pub struct KubeConfig {
    /// `https://host:port`.
    pub api_url: String,
    /// The bearer token's file (read per request).
    pub token_file: PathBuf,
    /// The CA bundle that signed the API server's certificate (`None`: the system roots).
    pub ca_file: Option<PathBuf>,
    /// The namespace approvals are created in.
    pub namespace: String,
}

impl KubeConfig {
    /// The in-cluster configuration, each part replaced by its override when given:
    /// `KUBERNETES_SERVICE_HOST`/`PORT` (from `env`) and the mounted ServiceAccount files.
    pub fn in_cluster(
        env: impl Fn(&str) -> Option<String>,
        api_url: Option<String>,
        token_file: Option<PathBuf>,
        ca_file: Option<PathBuf>,
        namespace: Option<String>,
    ) -> Result<Self, StoreError> {
        let dir = Path::new(SERVICE_ACCOUNT_DIR);
        let api_url = match api_url {
            Some(url) => url,
            None => {
                let host = env("KUBERNETES_SERVICE_HOST").ok_or_else(|| {
                    StoreError::Kube(
                        "KUBERNETES_SERVICE_HOST is not set (not in a pod): pass --kube-api-url"
                            .into(),
                    )
                })?;
                let port = env("KUBERNETES_SERVICE_PORT").unwrap_or_else(|| "443".into());
                // An IPv6 service address needs brackets in a URL.
                if host.contains(':') {
                    format!("https://[{host}]:{port}")
                } else {
                    format!("https://{host}:{port}")
                }
            }
        };
        if !api_url.starts_with("https://") {
            return Err(StoreError::Kube(format!(
                "the API server URL must be https:// (got {api_url})"
            )));
        }
        let namespace = match namespace {
            Some(namespace) => namespace,
            None => {
                let path = dir.join("namespace");
                std::fs::read_to_string(&path)
                    .map(|text| text.trim().to_owned())
                    .map_err(|err| {
                        StoreError::Kube(format!(
                            "cannot read the namespace from {} ({err}): pass --kube-namespace",
                            path.display()
                        ))
                    })?
            }
        };
        Ok(Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
            token_file: token_file.unwrap_or_else(|| dir.join("token")),
            ca_file: ca_file.or_else(|| Some(dir.join("ca.crt"))),
            namespace,
        })
    }
}

/// Requests to the API server.
#[derive(Clone, Debug)]
pub(super) struct Api {
    client: reqwest::Client,
    config: KubeConfig,
}

/// An answer: its status and JSON body.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Value,
}

impl Api {
    pub(super) fn new(config: KubeConfig) -> Result<Self, StoreError> {
        let mut builder = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        if let Some(ca_file) = &config.ca_file {
            let pem = std::fs::read(ca_file).map_err(|err| {
                StoreError::Kube(format!("cannot read {}: {err}", ca_file.display()))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|err| {
                StoreError::Kube(format!("{} is not a PEM bundle: {err}", ca_file.display()))
            })?;
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .build()
            .map_err(|err| StoreError::Kube(format!("cannot build the HTTPS client: {err}")))?;
        Ok(Self { client, config })
    }

    pub(super) fn namespace(&self) -> &str {
        &self.config.namespace
    }

    /// Sends `method path` with `body`; any answer with a JSON body comes back, whatever its
    /// status. An answer that says the request was not processed and may be sent again (429:
    /// throttled, or storage still initializing after the CRD appeared) is retried, at most
    /// [`ATTEMPTS`] times in all, waiting as `Retry-After` asks (at most [`MAX_RETRY_WAIT`]).
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, StoreError> {
        let mut attempt = 1;
        loop {
            let (answer, retry_after) = self.send_once(method.clone(), path, body).await?;
            match retry_after {
                Some(wait) if attempt < ATTEMPTS => {
                    attempt += 1;
                    tokio::time::sleep(wait).await;
                }
                _ => return Ok(answer),
            }
        }
    }

    /// One request; with its answer, how long to wait before sending it again when the API
    /// server asks for that.
    async fn send_once(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(Answer, Option<Duration>), StoreError> {
        let token = self.token()?;
        let mut request = self
            .client
            .request(method.clone(), format!("{}{path}", self.config.api_url))
            .bearer_auth(token)
            .header("Accept", "application/json");
        if let Some(body) = body {
            request = request.json(body);
        }
        let fail = |err: reqwest::Error| {
            // reqwest's text names the URL, never the headers: no token in it.
            StoreError::Kube(format!("{method} {path}: {err}"))
        };
        let mut response = request.send().await.map_err(fail)?;
        let status = response.status().as_u16();
        let retry_after = (status == 429).then(|| {
            response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map_or(DEFAULT_RETRY_WAIT, Duration::from_secs)
                .min(MAX_RETRY_WAIT)
        });
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(fail)? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(StoreError::Kube(format!(
                    "{method} {path}: answer larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((Answer { status, body }, retry_after))
    }

    fn token(&self) -> Result<String, StoreError> {
        let path = &self.config.token_file;
        let file = std::fs::File::open(path)
            .map_err(|err| StoreError::Kube(format!("cannot read {}: {err}", path.display())))?;
        let mut token = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_TOKEN_BYTES), &mut token)
            .map_err(|err| StoreError::Kube(format!("cannot read {}: {err}", path.display())))?;
        let token = token.trim();
        if token.is_empty() {
            return Err(StoreError::Kube(format!("{} is empty", path.display())));
        }
        Ok(token.to_owned())
    }
}

/// The API's own words for a refused request: its `Status` message, else the HTTP status.
pub(super) fn refused(what: &str, answer: &Answer) -> StoreError {
    let message = answer
        .body
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message");
    StoreError::Kube(format!("{what}: HTTP {}: {message}", answer.status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_cluster_defaults_come_from_the_environment() {
        let env = |name: &str| match name {
            "KUBERNETES_SERVICE_HOST" => Some("10.96.0.1".to_owned()),
            "KUBERNETES_SERVICE_PORT" => Some("443".to_owned()),
            _ => None,
        };
        let config = KubeConfig::in_cluster(env, None, None, None, Some("ops".into())).unwrap();
        assert_eq!(config.api_url, "https://10.96.0.1:443");
        assert!(config.token_file.ends_with("serviceaccount/token"));
        let v6 = |name: &str| (name == "KUBERNETES_SERVICE_HOST").then(|| "fd00::1".to_owned());
        let config = KubeConfig::in_cluster(v6, None, None, None, Some("ops".into())).unwrap();
        assert_eq!(config.api_url, "https://[fd00::1]:443");
        let none = |_: &str| None;
        let err = KubeConfig::in_cluster(none, None, None, None, Some("ops".into())).unwrap_err();
        assert!(err.to_string().contains("--kube-api-url"), "{err}");
        let err = KubeConfig::in_cluster(
            none,
            Some("http://127.0.0.1:6443".into()),
            None,
            None,
            Some("ops".into()),
        )
        .unwrap_err();
        assert!(err.to_string().contains("https://"), "{err}");
    }
}
