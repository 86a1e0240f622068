//! Verify step: asks the server's Service, with a real stateless MCP request (`server/discover`
//! in the 2026-07-28 era) sent through the API server's service proxy, which declaration the
//! pods serve: the runtime reports the hash the operator stamped into the manifest, and what it
//! counts. I/O (one request, bounded in time and size); `parse` is pure.

use crate::resource::Counts;
use kube::Client;
use serde_json::{Value, json};
use std::time::Duration;

/// `_meta` key under which the runtime reports the declaration it serves.
pub use mcp_declaration::SERVED_META;
/// The protocol version of the request (stateless era: no session to open or close).
const PROTOCOL_VERSION: &str = mcp_protocol::MODERN_VERSION;
/// Longest wait for the answer.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// What a replica says it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The hash stamped into the manifest it loaded (`None`: it loaded one without a stamp).
    pub hash: Option<String>,
    /// What its declaration holds.
    pub counts: Counts,
}

/// Why the question went unanswered.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The request failed: nothing listens, the proxy refused, or the answer was an error.
    #[error("no MCP answer through Service {service}")]
    Request {
        /// `namespace/name:port` of the Service.
        service: String,
        /// What failed.
        #[source]
        source: kube::Error,
    },
    /// No answer within [`TIMEOUT`].
    #[error("no MCP answer through Service {service} within {TIMEOUT:?}")]
    Timeout {
        /// `namespace/name:port` of the Service.
        service: String,
    },
    /// The answer was not a `server/discover` result with the runtime's report.
    #[error("unexpected answer through Service {service}: {reason}")]
    Answer {
        /// `namespace/name:port` of the Service.
        service: String,
        /// What was wrong with it.
        reason: String,
    },
}

/// The request body: `server/discover` with the stateless era's required `_meta`.
pub fn request_body() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": mcp_protocol::methods::SERVER_DISCOVER,
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp-operator", "version": env!("CARGO_PKG_VERSION")},
        }},
    })
}

/// The Host of the request: the Service's DNS name (without the cluster domain, which the
/// runtime allows as well).
pub fn service_host(namespace: &str, name: &str) -> String {
    format!("{name}.{namespace}.svc")
}

/// Reads the runtime's report from a `server/discover` answer.
pub fn parse(answer: &Value) -> Result<Served, String> {
    if let Some(error) = answer.get("error") {
        return Err(format!("JSON-RPC error {error}"));
    }
    let report = answer
        .pointer("/result/_meta")
        .and_then(|meta| meta.get(SERVED_META))
        .ok_or_else(|| format!("no `_meta[\"{SERVED_META}\"]` in the result (a runtime too old to report what it serves?)"))?;
    let count = |key: &str| {
        report
            .get(key)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("`{key}` missing from the report"))
    };
    Ok(Served {
        hash: report
            .get("hash")
            .and_then(Value::as_str)
            .map(str::to_owned),
        counts: Counts {
            tools: count("tools")?,
            resources: count("resources")?,
            resource_templates: count("resourceTemplates")?,
            prompts: count("prompts")?,
        },
    })
}

/// Asks the Service `name` in `namespace` (port `http`, MCP endpoint under `prefix`) what it
/// serves, through the API server's service proxy (which works from inside the cluster and out).
pub async fn ask(
    client: &Client,
    namespace: &str,
    name: &str,
    prefix: &str,
) -> Result<Served, VerifyError> {
    let service = format!("{namespace}/{name}:http");
    let uri = format!("/api/v1/namespaces/{namespace}/services/{name}:http/proxy{prefix}/mcp");
    let body = serde_json::to_vec(&request_body()).unwrap_or_default();
    let request = http::Request::post(uri)
        // The proxy passes the Host it was sent on to the pod, whose runtime accepts only the
        // names the operator lists in `--allowed-host` (DNS-rebinding protection): the
        // Service's own name is one of them, the API server's address is not.
        .header("host", service_host(namespace, name))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "server/discover")
        .body(body)
        .map_err(|e| VerifyError::Answer {
            service: service.clone(),
            reason: e.to_string(),
        })?;
    let answer = tokio::time::timeout(TIMEOUT, client.request::<Value>(request))
        .await
        .map_err(|_| VerifyError::Timeout {
            service: service.clone(),
        })?
        .map_err(|source| VerifyError::Request {
            service: service.clone(),
            source,
        })?;
    parse(&answer).map_err(|reason| VerifyError::Answer { service, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_report_of_a_discover_result() {
        let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "complete",
            "_meta": {SERVED_META: {"hash": "00ff", "tools": 2, "resources": 1, "resourceTemplates": 0, "prompts": 3}},
        }});
        assert_eq!(
            parse(&answer),
            Ok(Served {
                hash: Some("00ff".into()),
                counts: Counts {
                    tools: 2,
                    resources: 1,
                    resource_templates: 0,
                    prompts: 3
                },
            })
        );
    }

    #[test]
    fn an_error_or_a_result_without_report_is_not_an_answer() {
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}});
        assert!(parse(&error).unwrap_err().starts_with("JSON-RPC error"));
        let old = json!({"jsonrpc": "2.0", "id": 1, "result": {"_meta": {}}});
        assert!(parse(&old).unwrap_err().contains("too old"));
    }

    #[test]
    fn the_request_is_a_stateless_discover() {
        let body = request_body();
        assert_eq!(body["method"], "server/discover");
        assert_eq!(
            body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            PROTOCOL_VERSION
        );
    }
}
