//! Compiling an `http` declaration: URL template with a fixed origin, parameters, body, secrets,
//! limits, response mappings (jq and templates), and one HTTP client per upstream. Every problem
//! is a field error. Reads referenced secret files (unless no secrets directory is given).

use super::Compiler;
use crate::jq::JqProgram;
use crate::json_body::JsonBody;
use crate::secrets::Secret;
use crate::types::{Http, HttpMethod, HttpResponse};
use crate::upstream_url::UrlTemplate;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::http_types::{
    BodyKind, CompiledBody, CompiledHttp, CompiledResponse, Grant, Retry, StatusMatch,
};

/// Limits of the `http` fields.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;
const MAX_TIMEOUT_MS: u64 = 120_000;
const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1 << 20;
const MAX_RESPONSE_BYTES: u64 = 16 << 20;
const DEFAULT_CONCURRENCY: u32 = 16;
const MAX_CONCURRENCY: u32 = 1_024;
const DEFAULT_BACKOFF_MS: u64 = 200;
const DEFAULT_POLL_MS: u64 = 30_000;
const MIN_POLL_MS: u64 = 1_000;

/// What an `http` block answers, and so which fields it may use.
pub(super) enum Target<'a> {
    /// A tool; `retry_allowed` when annotated read-only or idempotent; `args` are the declared
    /// argument names (`None`: not checked).
    Tool {
        label: &'a str,
        retry_allowed: bool,
        args: Option<HashSet<String>>,
    },
    /// A resource (fixed: no arguments) or resource template (its URI variables).
    Resource {
        label: String,
        args: HashSet<String>,
    },
}

impl Compiler<'_> {
    pub(super) fn http(
        &mut self,
        path: &str,
        http: &Http,
        target: Target,
    ) -> Option<Arc<CompiledHttp>> {
        let errors_before = self.errors.len();
        let (label, is_tool) = match &target {
            Target::Tool { label, .. } => ((*label).to_owned(), true),
            Target::Resource { label, .. } => (label.clone(), false),
        };
        let url = UrlTemplate::parse(&http.url)
            .and_then(
                |url| match crate::link_local::literal_link_local(url.origin()) {
                    Some(ip) if !self.options.allow_link_local_upstreams => Err(format!(
                        "the address {ip} {}",
                        crate::link_local::LINK_LOCAL_REFUSED
                    )),
                    _ => Ok(url),
                },
            )
            .map_err(|message| self.error(format!("{path}.url"), message))
            .ok();
        let mut arg_refs: Vec<(String, String)> = Vec::new();
        if let Some(url) = &url {
            arg_refs.extend(
                url.variables()
                    .map(|v| (format!("{path}.url"), v.to_owned())),
            );
        }
        let mut secrets: Vec<Secret> = Vec::new();
        let query = self.params(
            &format!("{path}.query"),
            &http.query,
            &mut arg_refs,
            &mut secrets,
            false,
        );
        let headers = self.params(
            &format!("{path}.headers"),
            &http.headers,
            &mut arg_refs,
            &mut secrets,
            true,
        );
        let body = http.body.as_ref().and_then(|body| {
            let body_path = format!("{path}.body");
            let declared = [
                body.json.is_some(),
                body.form.is_some(),
                body.text.is_some(),
            ];
            if declared.iter().filter(|&&d| d).count() != 1 {
                self.error(
                    &body_path,
                    "declare exactly one of `json`, `form` or `text`",
                );
                return None;
            }
            let kind = if let Some(json) = &body.json {
                let json_path = format!("{body_path}.json");
                let compiled = JsonBody::compile(&mut self.templates, &json_path, json)
                    .map_err(|(p, m)| self.error(p, m))
                    .ok()?;
                arg_refs.extend(
                    compiled
                        .arg_paths()
                        .into_iter()
                        .map(|a| (json_path.clone(), a.to_owned())),
                );
                BodyKind::Json(compiled)
            } else if let Some(form) = &body.form {
                BodyKind::Form(self.params(
                    &format!("{body_path}.form"),
                    form,
                    &mut arg_refs,
                    &mut secrets,
                    false,
                ))
            } else {
                BodyKind::Text(self.text(&format!("{body_path}.text"), body.text.as_deref()?)?)
            };
            let content_type = body.content_type.clone().unwrap_or_else(|| {
                match kind {
                    BodyKind::Json(_) => "application/json",
                    BodyKind::Form(_) => "application/x-www-form-urlencoded",
                    BodyKind::Text(_) => "text/plain; charset=utf-8",
                }
                .to_owned()
            });
            if http::header::HeaderValue::from_str(&content_type).is_err() {
                self.error(
                    format!("{body_path}.contentType"),
                    "is not a valid header value",
                );
            }
            Some(CompiledBody { kind, content_type })
        });
        if matches!(http.method, HttpMethod::Get | HttpMethod::Head) && http.body.is_some() {
            self.error(format!("{path}.body"), "GET and HEAD requests take no body");
        }
        self.check_args(&target, &arg_refs);

        let timeout_ms = http.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
            self.error(
                format!("{path}.timeoutMs"),
                format!("must be 1-{MAX_TIMEOUT_MS}"),
            );
        }
        let max_response_bytes = http
            .max_response_bytes
            .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
        if max_response_bytes == 0 || max_response_bytes > MAX_RESPONSE_BYTES {
            self.error(
                format!("{path}.maxResponseBytes"),
                format!("must be 1-{MAX_RESPONSE_BYTES}"),
            );
        }
        let concurrency = http.max_concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        if concurrency == 0 || concurrency > MAX_CONCURRENCY {
            self.error(
                format!("{path}.maxConcurrency"),
                format!("must be 1-{MAX_CONCURRENCY}"),
            );
        }
        let retry = http.retry.as_ref().map(|retry| {
            if let Target::Tool {
                retry_allowed: false,
                ..
            } = target
            {
                self.error(
                    format!("{path}.retry"),
                    "retries are only allowed for tools annotated readOnlyHint or idempotentHint",
                );
            }
            if !(2..=5).contains(&retry.attempts) {
                self.error(format!("{path}.retry.attempts"), "must be 2-5");
            }
            let backoff_ms = retry.backoff_ms.unwrap_or(DEFAULT_BACKOFF_MS);
            if backoff_ms > 10_000 {
                self.error(format!("{path}.retry.backoffMs"), "must be at most 10000");
            }
            Retry {
                attempts: retry.attempts,
                backoff: Duration::from_millis(backoff_ms),
            }
        });
        if is_tool {
            for (field, set) in [
                ("cacheTtlMs", http.cache_ttl_ms.is_some()),
                ("pollIntervalMs", http.poll_interval_ms.is_some()),
            ] {
                if set {
                    self.error(format!("{path}.{field}"), "applies to resources only");
                }
            }
        }
        let poll_ms = http.poll_interval_ms.unwrap_or(DEFAULT_POLL_MS);
        if poll_ms < MIN_POLL_MS {
            self.error(
                format!("{path}.pollIntervalMs"),
                format!("must be at least {MIN_POLL_MS}"),
            );
        }
        let auth = http
            .auth
            .as_ref()
            .and_then(|auth| self.http_auth(&format!("{path}.auth"), auth, &headers));
        if !is_tool
            && auth
                .as_ref()
                .is_some_and(|a| a.grant == Grant::TokenExchange)
        {
            // A read made as one caller must reach no other: not from the shared read cache,
            // and not through the poller, which reads as nobody.
            for (field, set) in [
                ("cacheTtlMs", http.cache_ttl_ms.is_some_and(|ms| ms > 0)),
                ("pollIntervalMs", http.poll_interval_ms.is_some()),
            ] {
                if set {
                    self.error(
                        format!("{path}.{field}"),
                        "cannot be used with auth.tokenExchange: each read is made as its caller",
                    );
                }
            }
        }
        let job = match (&http.r#async, is_tool) {
            (Some(job), true) => self.http_async(path, job),
            (Some(_), false) => {
                self.error(format!("{path}.async"), "applies to tools only");
                None
            }
            (None, _) => None,
        };
        let responses = self.responses(path, &http.responses, is_tool);
        let ca_bundle = self.ca_bundle(path, http);
        if self.errors.len() > errors_before {
            return None;
        }
        let compiled = Arc::new(CompiledHttp {
            label,
            method: method(http.method),
            url: url?,
            query,
            headers,
            body,
            timeout: Duration::from_millis(timeout_ms),
            retry,
            max_response_bytes,
            max_concurrency: concurrency as usize,
            ca_bundle,
            slot: self.upstreams.len(),
            responses,
            cache_ttl: Duration::from_millis(http.cache_ttl_ms.unwrap_or(0)),
            poll_interval: Duration::from_millis(poll_ms),
            secrets,
            auth,
            job,
        });
        self.upstreams.push(compiled.clone());
        Some(compiled)
    }

    fn responses(
        &mut self,
        path: &str,
        responses: &[HttpResponse],
        tool: bool,
    ) -> Vec<CompiledResponse> {
        let mut seen = HashSet::new();
        let mut compiled = Vec::new();
        for (i, response) in responses.iter().enumerate() {
            let response_path = format!("{path}.responses[{i}]");
            let Some(status) = StatusMatch::parse(&response.status) else {
                self.error(
                    format!("{response_path}.status"),
                    "must be a status code (100-599), a class such as `2xx`, or `default`",
                );
                continue;
            };
            if !seen.insert(status) {
                self.error(
                    format!("{response_path}.status"),
                    format!("duplicate status `{}`", response.status),
                );
            }
            let misplaced: &[(&str, bool)] = if tool {
                &[("text", response.text.is_some())]
            } else {
                &[
                    ("content", response.content.is_some()),
                    ("isError", response.is_error.is_some()),
                ]
            };
            for (field, set) in misplaced {
                if *set {
                    let owner = if tool { "resources" } else { "tools" };
                    self.error(
                        format!("{response_path}.{field}"),
                        format!("applies to {owner} only"),
                    );
                }
            }
            let jq = response.jq.as_ref().and_then(|source| {
                self.jq(source)
                    .map_err(|message| self.error(format!("{response_path}.jq"), message))
                    .ok()
            });
            let content = response
                .content
                .as_ref()
                .map(|blocks| self.blocks(&format!("{response_path}.content"), blocks));
            let text = response
                .text
                .as_ref()
                .and_then(|text| self.text(&format!("{response_path}.text"), text));
            compiled.push(CompiledResponse {
                status,
                jq,
                content,
                text,
                is_error: response.is_error,
            });
        }
        compiled
    }

    /// The compiled jq program `source`, compiled once per declaration however many answers
    /// use it (the same `Arc`).
    pub(super) fn jq(&mut self, source: &str) -> Result<Arc<JqProgram>, String> {
        if let Some(compiled) = self.jq.get(source) {
            return compiled.clone();
        }
        let compiled = JqProgram::compile(source).map(Arc::new);
        self.jq.insert(source.to_owned(), compiled.clone());
        compiled
    }

    /// The declared CA bundle, once it is known to hold certificates.
    fn ca_bundle(&mut self, path: &str, http: &Http) -> Option<String> {
        let pem = http.tls.as_ref().and_then(|tls| tls.ca_bundle.as_ref())?;
        // The same PEM reader rustls (the upstream client's TLS) uses, without the client itself.
        let certs: Result<Vec<CertificateDer<'_>>, _> =
            CertificateDer::pem_slice_iter(pem.as_bytes()).collect();
        match certs {
            Ok(certs) if !certs.is_empty() => Some(pem.clone()),
            _ => {
                self.error(format!("{path}.tls.caBundle"), "holds no PEM certificate");
                None
            }
        }
    }
}

pub(super) fn method(method: HttpMethod) -> http::Method {
    match method {
        HttpMethod::Get => http::Method::GET,
        HttpMethod::Post => http::Method::POST,
        HttpMethod::Put => http::Method::PUT,
        HttpMethod::Patch => http::Method::PATCH,
        HttpMethod::Delete => http::Method::DELETE,
        HttpMethod::Head => http::Method::HEAD,
    }
}

impl StatusMatch {
    fn parse(status: &str) -> Option<Self> {
        if status == "default" {
            return Some(Self::Default);
        }
        if let Some(class) = status
            .strip_suffix("xx")
            .or_else(|| status.strip_suffix("XX"))
        {
            return match class.parse::<u16>() {
                Ok(c @ 1..=5) if class.len() == 1 => Some(Self::Class(c)),
                _ => None,
            };
        }
        match status.parse::<u16>() {
            Ok(code @ 100..=599) => Some(Self::Code(code)),
            _ => None,
        }
    }
}

/// Used by `compile.rs` to build a `Target::Tool`'s argument set.
pub(super) fn declared_args(
    schema: &serde_json::Map<String, serde_json::Value>,
) -> Option<HashSet<String>> {
    schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|props| props.keys().cloned().collect())
}

#[cfg(test)]
pub(super) mod tests;
