//! One question to one pod: `GET /declaration` on its admin port, straight to the pod's IP
//! (`--verify=pods`, the operator running in the cluster) or through the API server's pod proxy
//! (`--verify=apiserver-proxy`, an operator running outside it). Bounded in time (connect and
//! total) and in size. I/O.

use super::report::{self, MAX_BYTES, Report};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper::body::Bytes;
use kube::Client;
use std::time::Duration;
use tokio::net::TcpStream;

/// Longest wait for a TCP connection to a pod: a pod that accepts nothing within this is as
/// good as unreachable (a dropped SYN, a policy that drops packets).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest a whole question may take, connection included.
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(5);

/// The pod to ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub pod: String,
    /// The pod's IP.
    pub ip: String,
    /// The runtime's admin port.
    pub port: u16,
}

/// How pods are reached.
#[derive(Clone)]
pub enum Prober {
    /// Straight to the pod IP.
    Pods,
    /// Through the API server's pod proxy (`pods/proxy`), with the operator's credentials.
    ApiServerProxy(Client),
}

impl Prober {
    /// Asks `target` what it serves; the error is one line a person can act on.
    pub async fn ask(&self, target: &Target) -> Result<Report, String> {
        let body = tokio::time::timeout(TOTAL_TIMEOUT, async {
            match self {
                Self::Pods => direct(target).await,
                Self::ApiServerProxy(client) => proxied(client, target).await,
            }
        })
        .await
        .map_err(|_| format!("no answer within {TOTAL_TIMEOUT:?}"))??;
        report::parse(&body)
    }
}

/// `host:port` of a pod, IPv6 in brackets.
pub fn authority(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

async fn direct(target: &Target) -> Result<Vec<u8>, String> {
    let authority = authority(&target.ip, target.port);
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&authority))
        .await
        .map_err(|_| format!("cannot connect to {authority} within {CONNECT_TIMEOUT:?}"))?
        .map_err(|error| format!("cannot connect to {authority}: {error}"))?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| format!("{authority}: {error}"))?;
    // The connection is driven beside the request and dropped with it (one request each: at a
    // re-check every few minutes, keeping thousands of idle connections open would cost more).
    let driver = tokio::spawn(connection);
    let request = http::Request::get(report::PATH)
        .header(http::header::HOST, &authority)
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|error| error.to_string())?;
    let result = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| format!("GET http://{authority}{}: {error}", report::PATH))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_BYTES)
            .collect()
            .await
            .map_err(|error| format!("GET http://{authority}{}: {error}", report::PATH))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "GET http://{authority}{} answered {status}",
                report::PATH
            ));
        }
        Ok(body.to_vec())
    }
    .await;
    driver.abort();
    result
}

async fn proxied(client: &Client, target: &Target) -> Result<Vec<u8>, String> {
    let uri = format!(
        "/api/v1/namespaces/{}/pods/{}:{}/proxy{}",
        target.namespace,
        target.pod,
        target.port,
        report::PATH
    );
    let request = http::Request::get(&uri)
        .body(Vec::new())
        .map_err(|error| error.to_string())?;
    let text = client
        .request_text(request)
        .await
        .map_err(|error| format!("GET {uri} through the API server: {}", short(&error)))?;
    if text.len() > MAX_BYTES {
        return Err(format!("GET {uri}: answer longer than {MAX_BYTES} bytes"));
    }
    Ok(text.into_bytes())
}

fn short(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(port: u16) -> Target {
        Target {
            namespace: "n".into(),
            pod: "p".into(),
            ip: "127.0.0.1".into(),
            port,
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_refused_at_once() {
        // Bind and close: the kernel has no listener on this port any more.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = std::time::Instant::now();
        let error = Prober::Pods.ask(&target(port)).await.unwrap_err();
        assert!(
            error.starts_with(&format!("cannot connect to 127.0.0.1:{port}: ")),
            "{error}"
        );
        assert!(started.elapsed() < CONNECT_TIMEOUT);
    }

    #[tokio::test]
    async fn a_pod_that_never_answers_is_given_up_on() {
        // Accepted by the kernel's backlog, never read: the request hangs until the total limit.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let started = std::time::Instant::now();
        let error = Prober::Pods.ask(&target(port)).await.unwrap_err();
        assert_eq!(error, format!("no answer within {TOTAL_TIMEOUT:?}"));
        assert!(started.elapsed() >= TOTAL_TIMEOUT);
        drop(listener);
    }

    #[test]
    fn ipv6_addresses_are_bracketed() {
        assert_eq!(authority("fd00::5", 9090), "[fd00::5]:9090");
        assert_eq!(authority("10.0.0.5", 9090), "10.0.0.5:9090");
    }
}
