//! Turning an upstream answer into a tool reply or resource contents: the most specific status
//! mapping, jq extraction (on a blocking thread, within the call's deadline), templates over
//! `args`, `status`, `headers`, `body` and `result`, and redaction of secrets. Calls `fetch`.

use super::{Answer, CallError, CallFor, Upstreams, credential, fetch_until, redact};
use crate::backends::{ToolReply, text_block};
use crate::metrics::Metrics;
use crate::principal::Principal;
use base64::Engine as _;
use mcp_declaration::{CompiledHttp, CompiledResponse, JqProgram, Secret, Templates};
use mcp_protocol::McpError;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::time::Instant;

/// Longest upstream body excerpt in an error.
const EXCERPT_BYTES: usize = 512;

/// Longest wait for a jq program (a runaway program keeps its thread, not the request).
const JQ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Answers a tool call from its upstream, for `caller` (whose token token exchange needs; it
/// is never sent upstream itself; and whose claims `claim` headers send).
pub async fn tool_reply(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    templates: &Templates,
    metrics: &Metrics,
    args: &Value,
    caller: Option<&Principal>,
) -> ToolReply {
    let subject = caller.and_then(|c| c.token.as_ref());
    let deadline = Instant::now() + http.timeout;
    let credential = match credential(http, upstreams, metrics, subject, deadline).await {
        Ok(credential) => credential,
        // Never a call without the declared credential, nor with another one.
        Err(message) => return ToolReply::error(message),
    };
    let call_for = CallFor {
        credential: credential.as_ref().map(|(header, _)| header),
        claims: caller.map(|c| &c.claims),
    };
    let reply = match fetch_until(
        http, upstreams, templates, metrics, args, deadline, call_for,
    )
    .await
    {
        Ok(answer) => map_tool(http, templates, args, answer).await,
        Err(err) => ToolReply::error(err.to_string()),
    };
    let token = credential.as_ref().map(|(_, token)| token);
    scrubbed(reply, &call_secrets(http, token, caller))
}

/// What a call's reply is scrubbed of: the declared secrets and, with `http.auth`, the token
/// obtained for it and the caller's own (borrowed without one: no copy per call).
pub(super) fn call_secrets<'a>(
    http: &'a CompiledHttp,
    token: Option<&Secret>,
    caller: Option<&Principal>,
) -> Cow<'a, [Secret]> {
    let Some(token) = token else {
        return Cow::Borrowed(&http.secrets);
    };
    let mut secrets = http.secrets.clone();
    secrets.push(token.clone());
    let subject = caller.and_then(|c| c.token.as_ref());
    secrets.extend(subject.map(|s| Secret::new(s.expose().to_owned())));
    Cow::Owned(secrets)
}

/// `reply` with every secret in its content and structured result redacted.
pub(super) fn scrubbed(mut reply: ToolReply, secrets: &[Secret]) -> ToolReply {
    reply
        .content
        .iter_mut()
        .for_each(|block| redact::value(block, secrets));
    if let Some(structured) = &mut reply.structured {
        redact::value(structured, secrets);
    }
    reply
}

pub(super) async fn map_tool(
    http: &CompiledHttp,
    templates: &Templates,
    args: &Value,
    answer: Answer,
) -> ToolReply {
    let status = answer.status;
    let Some(mapping) = http.response_for(status.as_u16()) else {
        return unmapped_tool(&answer, &http.secrets);
    };
    let result = match &mapping.jq {
        Some(jq) => match run_jq(jq, &answer.body).await {
            Ok(result) => Some(result),
            Err(message) => {
                return ToolReply::error(format!("upstream answered {status}; {message}"));
            }
        },
        None => None,
    };
    let vars = variables(args, &answer, result.as_ref());
    let content = match &mapping.content {
        Some(blocks) => {
            match blocks
                .iter()
                .map(|b| b.render_in(templates, &vars))
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(content) => content,
                Err(err) => return ToolReply::error(err.to_string()),
            }
        }
        None => match &result {
            Some(result) => vec![text_block(result.to_string())],
            None => vec![body_block(&answer)],
        },
    };
    ToolReply {
        content,
        structured: result,
        is_error: mapping.is_error.unwrap_or(!status.is_success()),
    }
}

/// No mapping: a 2xx answer as received (JSON also as the structured result), anything else an
/// error naming the status, with a bounded excerpt of the body.
pub(super) fn unmapped_tool(answer: &Answer, secrets: &[Secret]) -> ToolReply {
    if answer.refused_redirect {
        return ToolReply::error(format!(
            "upstream answered {} with a redirect to another host, which is refused",
            answer.status
        ));
    }
    if !answer.status.is_success() {
        return ToolReply::error(format!(
            "upstream answered {}: {}",
            answer.status,
            excerpt(&answer.body, secrets)
        ));
    }
    let structured = serde_json::from_slice::<Value>(&answer.body).ok();
    ToolReply {
        content: vec![body_block(answer)],
        structured,
        is_error: false,
    }
}

/// One read of an upstream-backed resource.
#[derive(Clone, Copy)]
pub struct ResourceRead<'a> {
    /// The URI read.
    pub uri: &'a str,
    /// The declared MIME type, else the upstream's `content-type`.
    pub mime_type: Option<&'a str>,
    /// A template's URI variables (`{}` for a fixed resource).
    pub args: &'a Value,
    /// As for [`tool_reply`]; the subscription poller has none.
    pub caller: Option<&'a Principal>,
}

/// Reads a resource from its upstream: contents for `read.uri`, or a protocol error.
pub async fn resource_contents(
    http: &CompiledHttp,
    upstreams: &Upstreams,
    templates: &Templates,
    metrics: &Metrics,
    read: ResourceRead<'_>,
) -> Result<Value, McpError> {
    let deadline = Instant::now() + http.timeout;
    // Never a read without the declared credential, nor with another one; the message is the
    // token error's, which holds no token.
    let ResourceRead {
        uri,
        mime_type,
        args,
        caller,
    } = read;
    let subject = caller.and_then(|c| c.token.as_ref());
    let credential = credential(http, upstreams, metrics, subject, deadline)
        .await
        .map_err(McpError::Internal)?;
    // The obtained token and the caller's own are scrubbed like the declared secrets.
    let secrets: Cow<'_, [Secret]> = match &credential {
        None => Cow::Borrowed(&http.secrets),
        Some((_, token)) => {
            let mut secrets = http.secrets.clone();
            secrets.push(token.clone());
            secrets.extend(subject.map(|s| Secret::new(s.expose().to_owned())));
            Cow::Owned(secrets)
        }
    };
    let call_for = CallFor {
        credential: credential.as_ref().map(|(header, _)| header),
        claims: caller.map(|c| &c.claims),
    };
    let upstream_error = |message: String| McpError::Internal(redact::text(&message, &secrets));
    let answer = fetch_until(
        http, upstreams, templates, metrics, args, deadline, call_for,
    )
    .await
    .map_err(|err: CallError| upstream_error(err.to_string()))?;
    let status = answer.status;
    let mapping: Option<&CompiledResponse> = http.response_for(status.as_u16());
    let mut contents = json!({"uri": uri});
    let declared_type = mime_type.map(str::to_owned).or_else(|| {
        answer
            .headers
            .get("content-type")
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    match mapping {
        None if status == reqwest::StatusCode::NOT_FOUND => {
            return Err(McpError::ResourceNotFound {
                uri: uri.to_owned(),
            });
        }
        None if answer.refused_redirect => {
            return Err(upstream_error(format!(
                "upstream answered {status} with a redirect to another host, which is refused"
            )));
        }
        None if !status.is_success() => {
            return Err(upstream_error(format!(
                "upstream answered {status}: {}",
                excerpt(&answer.body, &secrets)
            )));
        }
        None => match String::from_utf8(answer.body) {
            Ok(text) => contents["text"] = json!(text),
            Err(err) => {
                contents["blob"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(err.into_bytes()))
            }
        },
        Some(mapping) => {
            let result = match &mapping.jq {
                Some(jq) => Some(run_jq(jq, &answer.body).await.map_err(upstream_error)?),
                None => None,
            };
            let text = match (&mapping.text, &result) {
                (Some(text), _) => {
                    let vars = variables(args, &answer, result.as_ref());
                    templates
                        .render_in(text, &vars)
                        .map_err(|err| upstream_error(err.to_string()))?
                }
                (None, Some(result)) => result.to_string(),
                (None, None) => String::from_utf8_lossy(&answer.body).into_owned(),
            };
            contents["text"] = json!(text);
        }
    }
    if let Some(mime_type) = declared_type {
        contents["mimeType"] = json!(mime_type);
    }
    redact::value(&mut contents, &secrets);
    Ok(contents)
}

/// Template variables of a response mapping.
fn variables(args: &Value, answer: &Answer, result: Option<&Value>) -> Value {
    let body = serde_json::from_slice::<Value>(&answer.body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&answer.body).into_owned()));
    json!({
        "args": args,
        "status": answer.status.as_u16(),
        "headers": answer.headers,
        "body": body,
        "result": result,
    })
}

/// The body as a content block: images and audio as such, anything else as text.
fn body_block(answer: &Answer) -> Value {
    let content_type = answer
        .headers
        .get("content-type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mime = content_type.split(';').next().unwrap_or_default().trim();
    for kind in ["image", "audio"] {
        if mime.starts_with(&format!("{kind}/")) {
            let data = base64::engine::general_purpose::STANDARD.encode(&answer.body);
            return json!({"type": kind, "data": data, "mimeType": mime});
        }
    }
    text_block(String::from_utf8_lossy(&answer.body).into_owned())
}

/// The start of a body, cut on a character boundary. Secrets are scrubbed from the whole body
/// first, so a cut cannot leave part of one behind.
pub(super) fn excerpt(body: &[u8], secrets: &[Secret]) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    let scrubbed = redact::text(&String::from_utf8_lossy(body), secrets);
    let body = scrubbed.as_bytes();
    let text = String::from_utf8_lossy(&body[..body.len().min(EXCERPT_BYTES)]).into_owned();
    let text = text.trim_end_matches('\u{FFFD}').to_owned();
    if body.len() > EXCERPT_BYTES {
        format!("{text}… ({} bytes in all)", body.len())
    } else {
        text
    }
}

/// Runs a jq program on a blocking thread, bounded in time. When the call ends first (timeout,
/// or the client went away and this future was dropped) the run is told to stop.
pub(super) async fn run_jq(jq: &Arc<JqProgram>, body: &[u8]) -> Result<Value, String> {
    let (jq, body) = (jq.clone(), body.to_vec());
    let cancel = Arc::new(AtomicBool::new(false));
    let _stop_on_drop = StopOnDrop(cancel.clone());
    let task = tokio::task::spawn_blocking(move || jq.run(&body, &cancel));
    match tokio::time::timeout(JQ_TIMEOUT, task).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err("the jq program failed".into()),
        Err(_) => Err(format!(
            "the jq program ran longer than {} s",
            JQ_TIMEOUT.as_secs()
        )),
    }
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_bounded_and_cut_on_characters() {
        assert_eq!(excerpt(b"", &[]), "(empty body)");
        assert_eq!(excerpt(b"short", &[]), "short");
        let long = "é".repeat(400);
        let cut = excerpt(long.as_bytes(), &[]);
        assert!(cut.starts_with(&"é".repeat(256)), "{cut}");
        assert!(cut.ends_with("… (800 bytes in all)"), "{cut}");
    }

    #[test]
    fn images_stay_images() {
        let answer = Answer {
            status: reqwest::StatusCode::OK,
            headers: serde_json::Map::from_iter([(
                "content-type".to_owned(),
                json!("image/png; q=1"),
            )]),
            body: vec![1, 2, 3],
            refused_redirect: false,
        };
        assert_eq!(
            body_block(&answer),
            json!({"type": "image", "data": "AQID", "mimeType": "image/png"})
        );
    }
}
