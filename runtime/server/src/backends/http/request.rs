//! Building one upstream request from validated arguments: URL expansion, query parameters,
//! headers (secrets marked sensitive) and the body. Pure; errors never contain secret values.

use mcp_declaration::{
    BodyKind, CompiledHttp, CompiledParam, ParamValue, Templates, lookup, scalar_text,
};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

/// A request ready to send (and to send again on retry).
#[derive(Debug)]
pub(super) struct Prepared {
    /// Full URL.
    pub url: Url,
    /// Headers.
    pub headers: HeaderMap,
    /// Body bytes.
    pub body: Option<Vec<u8>>,
}

/// One resolved parameter value; `sensitive` when it holds a secret.
struct Resolved {
    text: String,
    sensitive: bool,
}

/// Builds the request for `args`.
pub(super) fn prepare(
    http: &CompiledHttp,
    templates: &Templates,
    args: &Value,
    claims: Option<&Map<String, Value>>,
) -> Result<Prepared, String> {
    let mut url = http.url.expand(args)?;
    let query = resolve_all(&http.query, templates, args, claims)?;
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in &query {
            pairs.append_pair(name, &value.text);
        }
    }
    let mut headers = HeaderMap::new();
    for (name, resolved) in resolve_all(&http.headers, templates, args, claims)? {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name `{name}` is not valid"))?;
        let mut value = HeaderValue::from_str(&resolved.text).map_err(|_| {
            format!("the value of header `{name}` is not a valid header value (line breaks?)")
        })?;
        // Sensitive values are hidden from `Debug` output and from HTTP/2 header compression.
        value.set_sensitive(resolved.sensitive || header == reqwest::header::AUTHORIZATION);
        headers.append(header, value);
    }
    if !headers.contains_key(ACCEPT) {
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, */*;q=0.5"),
        );
    }
    let body = match &http.body {
        None => None,
        Some(body) => {
            let bytes = match &body.kind {
                BodyKind::Json(json) => json
                    .render(templates, args)
                    .map_err(|err| err.to_string())?
                    .map(|value| value.to_string().into_bytes()),
                BodyKind::Form(fields) => {
                    let mut form = form_urlencoded::Serializer::new(String::new());
                    for (name, value) in resolve_all(fields, templates, args, claims)? {
                        form.append_pair(&name, &value.text);
                    }
                    Some(form.finish().into_bytes())
                }
                BodyKind::Text(text) => Some(
                    templates
                        .render(text, args)
                        .map_err(|err| err.to_string())?
                        .into_bytes(),
                ),
            };
            if bytes.is_some() && !headers.contains_key(CONTENT_TYPE) {
                let content_type = HeaderValue::from_str(&body.content_type)
                    .map_err(|_| "the declared content type is not a valid header value")?;
                headers.insert(CONTENT_TYPE, content_type);
            }
            bytes
        }
    };
    Ok(Prepared { url, headers, body })
}

/// Resolves parameters to `(name, value)` pairs: an absent or null argument gives none, an
/// array one per item, an object its JSON text.
fn resolve_all(
    params: &[CompiledParam],
    templates: &Templates,
    args: &Value,
    claims: Option<&Map<String, Value>>,
) -> Result<Vec<(String, Resolved)>, String> {
    let mut out = Vec::new();
    for param in params {
        let name = param.name.clone();
        match &param.value {
            ParamValue::Text(text) => {
                let text = templates
                    .render(text, args)
                    .map_err(|err| err.to_string())?;
                out.push((
                    name,
                    Resolved {
                        text,
                        sensitive: false,
                    },
                ));
            }
            ParamValue::Claim(path) => {
                let text = match claims.and_then(|claims| claim(claims, path)) {
                    Some(value @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                        scalar_text(value)
                    }
                    Some(_) => {
                        return Err(format!(
                            "the caller's `{path}` claim is not a string, number or boolean, \
                             so it cannot be sent in the `{name}` header"
                        ));
                    }
                    None => {
                        return Err(format!(
                            "the caller's token has no `{path}` claim, which this call sends \
                             upstream in the `{name}` header"
                        ));
                    }
                };
                out.push((
                    name,
                    Resolved {
                        text,
                        sensitive: false,
                    },
                ));
            }
            ParamValue::Secret(secret) => out.push((
                name,
                Resolved {
                    text: secret.expose().to_owned(),
                    sensitive: true,
                },
            )),
            ParamValue::Arg(path) => match lookup(args, path) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => out.extend(items.iter().map(|item| {
                    (
                        name.clone(),
                        Resolved {
                            text: scalar_text(item),
                            sensitive: false,
                        },
                    )
                })),
                Some(value) => out.push((
                    name,
                    Resolved {
                        text: scalar_text(value),
                        sensitive: false,
                    },
                )),
            },
        }
    }
    Ok(out)
}

/// The claim at dotted `path` of a caller's token.
fn claim<'a>(claims: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    match path.split_once('.') {
        None => claims.get(path),
        Some((first, rest)) => lookup(claims.get(first)?, rest),
    }
}

/// The headers of a follow-up request of a job (status, result, cancel), made without the
/// call's arguments: the declared headers that do not depend on them (secrets, literal values,
/// the caller's claims), and `Accept`. Headers rendered from arguments are not sent again.
pub(super) fn follow_up_headers(
    http: &CompiledHttp,
    claims: Option<&Map<String, Value>>,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for param in &http.headers {
        let (text, sensitive) = match &param.value {
            ParamValue::Secret(secret) => (secret.expose().to_owned(), true),
            ParamValue::Text(mcp_declaration::Text::Literal(text)) => (text.clone(), false),
            ParamValue::Claim(path) => match claims.and_then(|claims| claim(claims, path)) {
                Some(value @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                    (scalar_text(value), false)
                }
                // Checked when the job started, for this same caller.
                _ => continue,
            },
            ParamValue::Text(_) | ParamValue::Arg(_) => continue,
        };
        let header = HeaderName::from_bytes(param.name.as_bytes())
            .map_err(|_| format!("header name `{}` is not valid", param.name))?;
        let mut value = HeaderValue::from_str(&text).map_err(|_| {
            format!(
                "the value of header `{}` is not a valid header value",
                param.name
            )
        })?;
        value.set_sensitive(sensitive || header == reqwest::header::AUTHORIZATION);
        headers.append(header, value);
    }
    if !headers.contains_key(ACCEPT) {
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, */*;q=0.5"),
        );
    }
    Ok(headers)
}
