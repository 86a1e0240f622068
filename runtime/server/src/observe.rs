//! Observing one dispatched request: its span when tracing is on, and for `tools/call` and
//! `resources/read` its audit record when auditing is on. When both are off, [`begin`] returns
//! `None` after two atomic loads and the request runs as before. No I/O here: spans go to the
//! exporter's queue, records to the audit writer's.

use super::RequestContext;
use super::request::{Request, Target};
use crate::Principal;
use crate::audit::{self, Record};
use crate::telemetry::{self, CallScope, RequestSpan};
use mcp_declaration::{Compiled, UriItem};
use mcp_protocol::methods;
use mcp_protocol::{Era, MODERN_VERSION, McpError};
use opentelemetry::KeyValue;
use opentelemetry::trace::TraceContextExt as _;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// Longest tool name or URI copied into a record (they come from the client).
const MAX_NAME: usize = 512;

/// What is being watched of one request.
pub(crate) struct Observation {
    scope: Arc<CallScope>,
    span: Option<RequestSpan>,
    record: Option<Record>,
    is_tool_call: bool,
    era: Era,
    started: Instant,
}

/// Starts observing a request, if tracing or auditing is on.
pub(crate) fn begin(
    ctx: &RequestContext,
    request: &Request,
    decl: &Compiled,
) -> Option<Observation> {
    let (method, params) = (request.method.as_str(), &request.params);
    let audited =
        audit::enabled() && matches!(method, methods::TOOLS_CALL | methods::RESOURCES_READ);
    if !telemetry::enabled() && !audited {
        return None;
    }
    let client_parent = telemetry::parent_from_meta(params).or_else(|| ctx.trace_parent.clone());
    let declared_name = declared_name(request, decl);
    let span = RequestSpan::start(
        match declared_name {
            Some(name) => format!("{method} {name}"),
            None => method.to_owned(),
        },
        client_parent.as_ref(),
        span_attributes(ctx, request, decl, declared_name),
    );
    let trace_id = span
        .as_ref()
        .map(RequestSpan::trace_id)
        .or_else(|| client_parent.map(|cx| cx.span().span_context().trace_id().to_string()));
    let record = audited.then(|| audit_record(ctx, request, decl, trace_id));
    Some(Observation {
        scope: CallScope::new(span.as_ref().map(|s| s.context().clone())),
        span,
        record,
        is_tool_call: method == methods::TOOLS_CALL,
        era: ctx.era,
        started: Instant::now(),
    })
}

impl Observation {
    /// The request span's trace id, when it is sampled.
    pub(crate) fn sampled_trace_id(&self) -> Option<String> {
        self.span.as_ref().and_then(RequestSpan::sampled_trace_id)
    }

    /// The scope the dispatch runs in.
    pub(crate) fn scope(&self) -> &Arc<CallScope> {
        &self.scope
    }

    /// Ends the observation with the request's result.
    pub(crate) fn finish(mut self, result: &Result<Value, McpError>) {
        let (outcome, code) = match result {
            Ok(value) if value.get("isError").and_then(Value::as_bool) == Some(true) => {
                ("failed", None)
            }
            Ok(_) => ("ok", None),
            Err(err) => ("refused", Some(err.code(self.era))),
        };
        self.end(outcome, code);
    }

    fn end(&mut self, outcome: &'static str, code: Option<i64>) {
        if let Some(span) = self.span.take() {
            let mut attributes = vec![KeyValue::new("kube_mcp.outcome", outcome)];
            if self.is_tool_call && code.is_none() {
                attributes.push(KeyValue::new("mcp.tool.is_error", outcome == "failed"));
            }
            let error = match (outcome, code) {
                (_, Some(code)) => {
                    attributes.push(KeyValue::new("error.type", code.to_string()));
                    attributes.push(KeyValue::new("rpc.jsonrpc.error_code", code));
                    Some("request refused")
                }
                ("failed", _) => {
                    attributes.push(KeyValue::new("error.type", "tool_error"));
                    Some("tool error")
                }
                ("cancelled", _) => Some("cancelled"),
                _ => None,
            };
            span.end(attributes, error);
        }
        if let Some(mut record) = self.record.take() {
            record.timestamp = audit::now();
            record.outcome = outcome;
            record.error_code = code;
            // Microsecond precision is plenty and keeps the lines short.
            record.duration_ms = (self.started.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
            if let Some(answer) = self.scope.upstream() {
                match answer.parse::<u16>() {
                    Ok(status) => record.upstream_status = Some(status),
                    Err(_) => record.upstream_error = Some(answer),
                }
            }
            record.approval = self.scope.approval();
            if let Some(token) = self.scope.token() {
                record.token_exchange = Some(token.outcome);
                record.upstream_audience = token.audience;
                record.upstream_act = token.act;
            }
            audit::write(&record);
        }
    }
}

impl Drop for Observation {
    /// A request dropped before it finished was cancelled (its client went away).
    fn drop(&mut self) {
        self.end("cancelled", None);
    }
}

fn protocol_version(era: Era) -> &'static str {
    match era {
        Era::Modern => MODERN_VERSION,
        Era::Legacy(version) => version.as_str(),
    }
}

/// The declared name of the tool a `tools/call`, or the prompt a `prompts/get`, resolved to.
fn declared_name<'d>(request: &Request, decl: &'d Compiled) -> Option<&'d str> {
    let descriptor = match (request.method.as_str(), &request.target) {
        (methods::TOOLS_CALL, Target::Tool(i)) => &decl.tools[*i].descriptor,
        (methods::TOOLS_CALL, Target::Meta(meta)) => return Some(meta.name()),
        (methods::PROMPTS_GET, Target::Prompt(i)) => &decl.prompts[*i].descriptor,
        _ => return None,
    };
    descriptor["name"].as_str()
}

/// The URI a `resources/read` resolved to, when it is a declared fixed resource (a templated
/// URI carries argument values).
fn declared_uri<'d>(request: &Request, decl: &'d Compiled) -> Option<&'d str> {
    match &request.target {
        Target::Resource(resolved) => match resolved.item {
            UriItem::Resource(i) => decl.resources[i].descriptor["uri"].as_str(),
            UriItem::Template(..) => None,
        },
        _ => None,
    }
}

/// What an audit record says of the URI a `resources/read` asked for: a fixed resource's URI;
/// for a templated one the template (its variables are arguments, which records never hold in
/// the clear) and a digest of the URI as the arguments digest; for an unknown one only the
/// digest.
fn audited_uri(request: &Request, decl: &Compiled) -> (Option<String>, Option<String>) {
    let asked = request.params.get("uri").and_then(Value::as_str);
    let digest = asked.map(|uri| audit::digest(&Value::String(uri.to_owned())));
    match &request.target {
        Target::Resource(resolved) => match resolved.item {
            UriItem::Resource(_) => (Some(resolved.uri.clone()), None),
            UriItem::Template(i, _) => (
                decl.resource_templates[i].descriptor["uriTemplate"]
                    .as_str()
                    .map(str::to_owned),
                digest,
            ),
        },
        _ => (None, digest),
    }
}

fn span_attributes(
    ctx: &RequestContext,
    request: &Request,
    decl: &Compiled,
    declared_name: Option<&str>,
) -> Vec<KeyValue> {
    let method = request.method.as_str();
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", method.to_owned()),
        KeyValue::new("mcp.protocol.version", protocol_version(ctx.era)),
        KeyValue::new(
            "kube_mcp.era",
            match ctx.era {
                Era::Modern => "stateless",
                Era::Legacy(_) => "session",
            },
        ),
    ];
    if let Some(session) = &ctx.session {
        attributes.push(KeyValue::new(
            "kube_mcp.session",
            audit::short_digest(&session.id),
        ));
    }
    if let Some(view) = request.view_name() {
        attributes.push(KeyValue::new("kube_mcp.view", view.to_owned()));
    }
    match (method, declared_name) {
        (methods::TOOLS_CALL, Some(name)) => {
            attributes.push(KeyValue::new("gen_ai.tool.name", name.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        (methods::PROMPTS_GET, Some(name)) => {
            attributes.push(KeyValue::new("gen_ai.prompt.name", name.to_owned()));
        }
        _ => {}
    }
    // Only declared fixed URIs: a templated URI carries argument values.
    if method == methods::RESOURCES_READ
        && let Some(uri) = declared_uri(request, decl)
    {
        attributes.push(KeyValue::new("mcp.resource.uri", uri.to_owned()));
    }
    attributes
}

fn audit_record(
    ctx: &RequestContext,
    request: &Request,
    decl: &Compiled,
    trace_id: Option<String>,
) -> Record {
    let session = ctx.session.as_ref().map(|s| s.id.as_str());
    record_of(
        request,
        decl,
        ctx.caller.as_deref(),
        ctx.era,
        session,
        trace_id,
    )
}

/// Audits a call the transport refused before any dispatch: a 403 for an item whose scopes or
/// token-only `allow` the caller lacks. No span exists for it; its record says `refused` with
/// the HTTP status instead of a JSON-RPC code.
pub(crate) fn refused_before_dispatch(
    request: &Request,
    caller: &Principal,
    era: Era,
    session: Option<&str>,
) {
    let method = request.method.as_str();
    if !audit::enabled() || !matches!(method, methods::TOOLS_CALL | methods::RESOURCES_READ) {
        return;
    }
    let decl: &Compiled = request.declaration();
    let mut record = record_of(request, decl, Some(caller), era, session, None);
    record.timestamp = audit::now();
    record.outcome = "refused";
    record.http_status = Some(403);
    audit::write(&record);
}

fn record_of(
    request: &Request,
    decl: &Compiled,
    caller: Option<&Principal>,
    era: Era,
    session: Option<&str>,
    trace_id: Option<String>,
) -> Record {
    let params = &request.params;
    let text = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .map(|s| s.chars().take(MAX_NAME).collect::<String>())
    };
    let method = request.method.as_str();
    let is_tool_call = method == methods::TOOLS_CALL;
    let (uri, uri_digest) = if is_tool_call {
        (None, None)
    } else {
        audited_uri(request, decl)
    };
    let (arguments_digest, redacted) = if is_tool_call {
        let args = params.get("arguments").cloned().unwrap_or(Value::Null);
        // An unknown tool has no schema to say which fields are sensitive: no digest.
        match &request.target {
            Target::Tool(i) => {
                let tool = &decl.tools[*i];
                let (redacted, paths) = audit::redact(&tool.descriptor["inputSchema"], &args);
                (Some(audit::digest(&redacted)), paths)
            }
            _ => (None, Vec::new()),
        }
    } else {
        (uri_digest, Vec::new())
    };
    Record {
        timestamp: String::new(),
        audit: if is_tool_call {
            methods::TOOLS_CALL
        } else {
            methods::RESOURCES_READ
        },
        server: decl.server_info["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        declaration: decl.hash.clone(),
        tool: if is_tool_call { text("name") } else { None },
        uri,
        principal: caller.map(principal),
        protocol_version: protocol_version(era),
        view: request.view_name().map(str::to_owned),
        session: session.map(audit::short_digest),
        arguments_digest,
        redacted,
        outcome: "ok",
        error_code: None,
        http_status: None,
        upstream_status: None,
        upstream_error: None,
        token_exchange: None,
        upstream_audience: None,
        upstream_act: Vec::new(),
        approval: None,
        duration_ms: 0.0,
        trace_id,
    }
}

/// Who is calling, when authentication is on: the validated token's issuer and subject (never
/// the token, nor its other claims).
fn principal(caller: &Principal) -> audit::Caller {
    audit::Caller {
        issuer: caller.issuer.chars().take(MAX_NAME).collect(),
        subject: caller
            .subject
            .as_ref()
            .map(|s| s.chars().take(MAX_NAME).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Served, Server, ServerSettings};
    use mcp_declaration::{CompileOptions, compile, parse_manifest};
    use serde_json::json;

    const MANIFEST: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: audited}
spec:
  resources:
    - {uri: "docs://readme", name: readme, text: "hi"}
  resourceTemplates:
    - {uriTemplate: "vault://item/{token}", name: item, text: "{{ args.token }}"}
  views:
    - {name: docs, path: /docs, resources: [readme]}
"#;

    fn record(uri: &str) -> String {
        record_in(uri, None)
    }

    fn record_in(uri: &str, view: Option<&str>) -> String {
        let manifest = parse_manifest(MANIFEST, ".".into()).unwrap();
        let compiled = compile(&manifest, &CompileOptions::default()).unwrap();
        let server = Server::new(
            Served::new(compiled).unwrap(),
            ServerSettings::default(),
            Arc::default(),
        );
        let request = server.request(methods::RESOURCES_READ.into(), json!({"uri": uri}), view);
        let decl = server.declaration();
        serde_json::to_string(&record_of(&request, &decl, None, Era::Modern, None, None)).unwrap()
    }

    #[test]
    fn templated_uris_are_recorded_as_their_template_and_a_digest() {
        let templated = record("vault://item/s3cr3t-value");
        assert!(!templated.contains("s3cr3t"), "{templated}");
        assert!(
            templated.contains(r#""uri":"vault://item/{token}""#),
            "{templated}"
        );
        assert!(
            templated.contains(r#""argumentsDigest":"sha256:"#),
            "{templated}"
        );
        let unknown = record("other://s3cr3t-value");
        assert!(
            !unknown.contains("s3cr3t") && !unknown.contains(r#""uri""#),
            "{unknown}"
        );
        let fixed = record("docs://readme");
        assert!(fixed.contains(r#""uri":"docs://readme""#), "{fixed}");
        assert!(!fixed.contains(r#""view""#), "{fixed}");
    }

    #[test]
    fn the_view_a_call_came_through_is_recorded() {
        let viewed = record_in("docs://readme", Some("docs"));
        assert!(viewed.contains(r#""view":"docs""#), "{viewed}");
    }
}
