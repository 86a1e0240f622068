//! Compiling the named values of an `http` declaration (query parameters, headers, form fields)
//! and checking that every argument they reference exists. Reads referenced secret files (unless
//! no secrets directory is given).

use super::Compiler;
use super::http::Target;
use super::http_types::{CompiledParam, ParamValue};
use crate::secrets::{Secret, read_secret};
use crate::template::Text;
use crate::types::HttpParam;

/// Headers the runtime sets itself (or that could redirect a request), refused in `headers`.
pub const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
];

/// Longest `claim` path, and most parts in it.
const MAX_CLAIM_PATH: usize = 256;
const MAX_CLAIM_DEPTH: usize = 8;

impl Compiler<'_> {
    pub(super) fn params(
        &mut self,
        path: &str,
        params: &[HttpParam],
        arg_refs: &mut Vec<(String, String)>,
        secrets: &mut Vec<Secret>,
        headers: bool,
    ) -> Vec<CompiledParam> {
        let mut compiled = Vec::new();
        for (i, param) in params.iter().enumerate() {
            let param_path = format!("{path}[{i}]");
            if headers {
                let lower = param.name.to_ascii_lowercase();
                if http::header::HeaderName::from_bytes(param.name.as_bytes()).is_err() {
                    self.error(format!("{param_path}.name"), "is not a valid header name");
                } else if RESERVED_HEADERS.contains(&lower.as_str()) {
                    self.error(format!("{param_path}.name"), "is set by the runtime");
                }
            }
            let sources = [
                param.value.is_some(),
                param.arg.is_some(),
                param.secret_key_ref.is_some(),
                param.claim.is_some(),
            ];
            if sources.iter().filter(|&&s| s).count() != 1 {
                self.error(
                    &param_path,
                    "declare exactly one of `value`, `arg`, `secretKeyRef` or `claim`",
                );
                continue;
            }
            if param.prefix.is_some() && param.secret_key_ref.is_none() {
                self.error(
                    format!("{param_path}.prefix"),
                    "applies to `secretKeyRef` only",
                );
            }
            let value = if let Some(value) = &param.value {
                let Some(text) = self.text(&format!("{param_path}.value"), value) else {
                    continue;
                };
                if let (true, Text::Literal(literal)) = (headers, &text)
                    && http::header::HeaderValue::from_str(literal).is_err()
                {
                    self.error(format!("{param_path}.value"), "is not a valid header value");
                }
                ParamValue::Text(text)
            } else if let Some(arg) = &param.arg {
                arg_refs.push((format!("{param_path}.arg"), arg.clone()));
                ParamValue::Arg(arg.clone())
            } else if let Some(reference) = &param.secret_key_ref {
                let Some((sent, raw)) =
                    self.secret(&param_path, reference, param.prefix.as_deref(), headers)
                else {
                    continue;
                };
                secrets.push(raw);
                ParamValue::Secret(sent)
            } else if let Some(claim) = &param.claim {
                let Some(claim) = self.claim(&format!("{param_path}.claim"), claim, headers) else {
                    continue;
                };
                ParamValue::Claim(claim)
            } else {
                continue;
            };
            compiled.push(CompiledParam {
                name: param.name.clone(),
                value,
            });
        }
        compiled
    }

    /// A `claim` reference: headers only, and only where callers bring validated tokens.
    fn claim(&mut self, path: &str, claim: &str, header: bool) -> Option<String> {
        if !header {
            self.error(path, "applies to headers only");
            return None;
        }
        if !self.authenticates {
            self.error(path, "needs spec.auth: without it callers bring no claims");
            return None;
        }
        let segments: Vec<&str> = claim.split('.').collect();
        if claim.len() > MAX_CLAIM_PATH || segments.len() > MAX_CLAIM_DEPTH {
            self.error(
                path,
                format!("must be at most {MAX_CLAIM_PATH} characters in {MAX_CLAIM_DEPTH} parts"),
            );
            return None;
        }
        if segments.iter().any(|s| s.is_empty()) {
            self.error(path, "must be a claim name or a dotted path (`org.id`)");
            return None;
        }
        Some(claim.to_owned())
    }

    pub(super) fn secret(
        &mut self,
        path: &str,
        reference: &crate::SecretKeyRef,
        prefix: Option<&str>,
        header: bool,
    ) -> Option<(Secret, Secret)> {
        let field = format!("{path}.secretKeyRef");
        let Some(dir) = self.options.secrets_dir.clone() else {
            // Validation without the pod's files (the operator): check the reference only.
            return crate::secrets::secret_path(std::path::Path::new("/"), reference)
                .map_err(|message| self.error(&field, message))
                .ok()
                .map(|_| (Secret::new(String::new()), Secret::new(String::new())));
        };
        let secret = read_secret(&dir, reference)
            .map_err(|message| self.error(&field, message))
            .ok()?;
        let value = format!("{}{}", prefix.unwrap_or_default(), secret.expose());
        if header && http::header::HeaderValue::from_str(&value).is_err() {
            self.error(
                &field,
                "the secret is not a valid header value (control characters?)",
            );
            return None;
        }
        Some((Secret::new(value), secret))
    }

    pub(super) fn check_args(&mut self, target: &Target, refs: &[(String, String)]) {
        let known = match target {
            Target::Tool {
                args: Some(args), ..
            } => args,
            Target::Resource { args, .. } => args,
            Target::Tool { args: None, .. } => return,
        };
        for (path, arg) in refs {
            let root = arg.split('.').next().unwrap_or_default();
            if !known.contains(root) {
                let what = match target {
                    Target::Tool { .. } => "a property of inputSchema",
                    Target::Resource { .. } => "a variable of the resource URI",
                };
                self.error(path, format!("`{arg}` is not {what}"));
            }
        }
    }
}
