//! `resources/read` of fixed resources and resource templates (declared, or fetched from an
//! upstream HTTP API, with an optional cache), and whether a URI is readable (for subscriptions). Upstream reads
//! do network I/O; the rest is pure.

use super::Served;
use super::params::ResourceUri;
use super::read_cache::ReadCache;
use crate::backends::http;
use crate::metrics::Metrics;
use mcp_declaration::{Compiled, CompiledHttp};
use mcp_protocol::McpError;
use serde_json::{Map, Value, json};

/// Reads a resource: a fixed one by URI, else the first template that matches.
pub async fn read(
    decl: &Served,
    metrics: &Metrics,
    cache: &ReadCache,
    params: &Value,
) -> Result<Value, McpError> {
    let ResourceUri { uri } = ResourceUri::parse(params)?;
    let contents = contents(decl, metrics, Some(cache), uri).await?;
    Ok(json!({"contents": [contents]}))
}

/// The contents entry of `uri`; `cache` is skipped by the subscription poller.
pub async fn contents(
    decl: &Served,
    metrics: &Metrics,
    cache: Option<&ReadCache>,
    uri: &str,
) -> Result<Value, McpError> {
    if let Some(resource) = decl.resource(uri) {
        return match &resource.http {
            None => Ok(resource.contents.clone()),
            Some(upstream) => {
                let mime = resource.contents.get("mimeType").and_then(Value::as_str);
                fetch(decl, metrics, cache, upstream, uri, mime, &json!({})).await
            }
        };
    }
    for template in &decl.resource_templates {
        let Some(values) = template.uri.matches(uri) else {
            continue;
        };
        let args: Map<String, Value> = values
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let args = Value::Object(args);
        if let Some(upstream) = &template.http {
            let mime = template.mime_type.as_deref();
            return fetch(decl, metrics, cache, upstream, uri, mime, &args).await;
        }
        let Some(text) = &template.text else {
            continue;
        };
        let text = decl
            .templates
            .render(text, &args)
            .map_err(|err| McpError::Internal(err.to_string()))?;
        let mut contents = json!({"uri": uri, "text": text});
        if let Some(mime_type) = &template.mime_type {
            contents["mimeType"] = json!(mime_type);
        }
        return Ok(contents);
    }
    Err(McpError::ResourceNotFound {
        uri: uri.to_owned(),
    })
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
pub fn poll_interval(decl: &Compiled, uri: &str) -> Option<std::time::Duration> {
    let http = match decl.resource(uri) {
        Some(resource) => resource.http.as_ref(),
        None => decl
            .resource_templates
            .iter()
            .find(|t| t.uri.matches(uri).is_some())
            .and_then(|t| t.http.as_ref()),
    };
    http.map(|h| h.poll_interval)
}

/// Whether this server can read `uri` (a fixed resource, or a template matches it).
pub fn check_readable(decl: &Compiled, uri: &str) -> Result<(), McpError> {
    if decl.resource(uri).is_some()
        || decl
            .resource_templates
            .iter()
            .any(|t| t.uri.matches(uri).is_some())
    {
        Ok(())
    } else {
        Err(McpError::ResourceNotFound {
            uri: uri.to_owned(),
        })
    }
}
