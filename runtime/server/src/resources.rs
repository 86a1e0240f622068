//! `resources/read` of fixed resources and resource templates (declared, or fetched from an
//! upstream HTTP API, with an optional cache), and whether a URI is readable (for subscriptions). Upstream reads
//! do network I/O; the rest is pure.

use super::Served;
use super::read_cache::ReadCache;
use super::request::Target;
use crate::backends::http;
use crate::metrics::Metrics;
use crate::principal::Principal;
use mcp_declaration::{Compiled, CompiledHttp, ResolvedUri, UriItem};
use mcp_protocol::McpError;
use serde_json::{Value, json};

/// Reads the resource the request resolved: a fixed one, or the template that matched its URI.
pub(crate) async fn read(
    decl: &Served,
    metrics: &Metrics,
    cache: &ReadCache,
    target: &Target,
    caller: Option<&Principal>,
) -> Result<Value, McpError> {
    let resolved = match target {
        Target::Resource(resolved) => resolved,
        Target::Invalid(err) => return Err(err.clone()),
        _ => {
            return Err(McpError::Internal(
                "resources/read without a resource target".into(),
            ));
        }
    };
    let contents = contents(decl, metrics, Some(cache), resolved, caller).await?;
    Ok(json!({"contents": [contents]}))
}

/// The contents entry of `uri`, for the subscription poller (no cache).
pub(crate) async fn contents_of(
    decl: &Served,
    metrics: &Metrics,
    uri: &str,
) -> Result<Value, McpError> {
    let resolved = decl
        .resolve_uri(uri)
        .ok_or_else(|| McpError::ResourceNotFound {
            uri: uri.to_owned(),
        })?;
    contents(decl, metrics, None, &resolved, None).await
}

/// The contents entry of a resolved URI; `cache` is skipped by the subscription poller. The
/// cache keys on the canonical URI, which names one item: an entry is only ever served for
/// the item (and rules) that filled it.
async fn contents(
    decl: &Served,
    metrics: &Metrics,
    cache: Option<&ReadCache>,
    resolved: &ResolvedUri,
    caller: Option<&Principal>,
) -> Result<Value, McpError> {
    let uri = resolved.uri.as_str();
    match &resolved.item {
        UriItem::Resource(i) => {
            let resource = &decl.resources[*i];
            match &resource.http {
                None => Ok(resource.contents.clone()),
                Some(upstream) => {
                    let read = http::ResourceRead {
                        uri,
                        mime_type: resource.contents.get("mimeType").and_then(Value::as_str),
                        args: &json!({}),
                        caller,
                    };
                    fetch(decl, metrics, cache, upstream, read).await
                }
            }
        }
        UriItem::Template(i, args) => {
            let template = &decl.resource_templates[*i];
            if let Some(upstream) = &template.http {
                let read = http::ResourceRead {
                    uri,
                    mime_type: template.mime_type.as_deref(),
                    args,
                    caller,
                };
                return fetch(decl, metrics, cache, upstream, read).await;
            }
            let Some(text) = &template.text else {
                return Err(McpError::ResourceNotFound {
                    uri: uri.to_owned(),
                });
            };
            let text = decl
                .templates
                .render(text, args)
                .map_err(|err| McpError::Internal(err.to_string()))?;
            let mut contents = json!({"uri": uri, "text": text});
            if let Some(mime_type) = &template.mime_type {
                contents["mimeType"] = json!(mime_type);
            }
            Ok(contents)
        }
    }
}

async fn fetch(
    decl: &Served,
    metrics: &Metrics,
    cache: Option<&ReadCache>,
    upstream: &CompiledHttp,
    read: http::ResourceRead<'_>,
) -> Result<Value, McpError> {
    let uri = read.uri;
    // Compiling refuses a cache for reads made as each caller (`CompiledHttp::per_caller`).
    let cache = cache.filter(|_| !upstream.cache_ttl.is_zero());
    if let Some(hit) = cache.and_then(|c| c.get(uri)) {
        return Ok(hit);
    }
    let contents =
        http::resource_contents(upstream, &decl.upstreams, &decl.templates, metrics, read).await?;
    if let Some(cache) = cache {
        cache.put(uri, contents.clone(), upstream.cache_ttl);
    }
    Ok(contents)
}

/// The poll interval of an upstream-backed `uri`.
pub(crate) fn poll_interval(decl: &Compiled, uri: &str) -> Option<std::time::Duration> {
    let http = match decl.resolve_uri(uri)?.item {
        UriItem::Resource(i) => decl.resources[i].http.as_ref(),
        UriItem::Template(i, _) => decl.resource_templates[i].http.as_ref(),
    };
    http.filter(|h| !h.per_caller()).map(|h| h.poll_interval)
}

/// Whether `uri` is read from its upstream as each caller (token exchange): it has no contents
/// of its own to watch.
pub(crate) fn read_per_caller(decl: &Compiled, uri: &str) -> bool {
    let http = match decl.resolve_uri(uri).map(|r| r.item) {
        Some(UriItem::Resource(i)) => decl.resources[i].http.as_ref(),
        Some(UriItem::Template(i, _)) => decl.resource_templates[i].http.as_ref(),
        None => None,
    };
    http.is_some_and(|h| h.per_caller())
}
