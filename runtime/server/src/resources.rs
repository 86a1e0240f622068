//! `resources/read` of fixed resources and resource templates (declared, or fetched from an
//! upstream HTTP API, with an optional cache), and whether a URI is readable (for subscriptions). Upstream reads
//! do network I/O; the rest is pure.

use super::Served;
use super::read_cache::ReadCache;
use super::request::Target;
use crate::backends::http;
use crate::metrics::Metrics;
use mcp_declaration::{Compiled, CompiledHttp, ResolvedUri, UriItem};
use mcp_protocol::McpError;
use serde_json::{Value, json};

/// Reads the resource the request resolved: a fixed one, or the template that matched its URI.
pub(crate) async fn read(
    decl: &Served,
    metrics: &Metrics,
    cache: &ReadCache,
    target: &Target,
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
    let contents = contents(decl, metrics, Some(cache), resolved).await?;
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
    contents(decl, metrics, None, &resolved).await
}

/// The contents entry of a resolved URI; `cache` is skipped by the subscription poller. The
/// cache keys on the canonical URI, which names one item: an entry is only ever served for
/// the item (and rules) that filled it.
async fn contents(
    decl: &Served,
    metrics: &Metrics,
    cache: Option<&ReadCache>,
    resolved: &ResolvedUri,
) -> Result<Value, McpError> {
    let uri = resolved.uri.as_str();
    match &resolved.item {
        UriItem::Resource(i) => {
            let resource = &decl.resources[*i];
            match &resource.http {
                None => Ok(resource.contents.clone()),
                Some(upstream) => {
                    let mime = resource.contents.get("mimeType").and_then(Value::as_str);
                    fetch(decl, metrics, cache, upstream, uri, mime, &json!({})).await
                }
            }
        }
        UriItem::Template(i, args) => {
            let template = &decl.resource_templates[*i];
            if let Some(upstream) = &template.http {
                let mime = template.mime_type.as_deref();
                return fetch(decl, metrics, cache, upstream, uri, mime, args).await;
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
    uri: &str,
    mime: Option<&str>,
    args: &Value,
) -> Result<Value, McpError> {
    let cache = cache.filter(|_| !upstream.cache_ttl.is_zero());
    if let Some(hit) = cache.and_then(|c| c.get(uri)) {
        return Ok(hit);
    }
    let contents = http::resource_contents(
        upstream,
        &decl.upstreams,
        &decl.templates,
        metrics,
        uri,
        mime,
        args,
    )
    .await?;
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
    http.map(|h| h.poll_interval)
}
