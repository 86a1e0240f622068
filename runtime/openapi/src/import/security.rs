//! Security schemes to the `http` backend: API keys in headers or the query, HTTP bearer and
//! basic credentials, and OAuth 2 / OpenID Connect access tokens, each read from the Secret key
//! that `--secret SCHEME=secretName/key` names (never from the spec, never inline). Pure.

use super::ImportError;
use super::load::{Documents, Version};
use super::select::Operation;
use super::summary::Reason;
use mcp_declaration::{HttpParam, SecretKeyRef};
use serde_json::{Map, Value};

/// Credentials an operation sends.
#[derive(Debug, Default)]
pub(super) struct Auth {
    /// Headers.
    pub headers: Vec<HttpParam>,
    /// Query parameters.
    pub query: Vec<HttpParam>,
}

/// The security schemes the spec defines.
fn schemes(docs: &Documents) -> Option<&Map<String, Value>> {
    let root = docs.root();
    match docs.version {
        Version::Swagger2 => root.get("securityDefinitions"),
        _ => root
            .get("components")
            .and_then(|c| c.get("securitySchemes")),
    }
    .and_then(Value::as_object)
}

/// Refuses `--secret` mappings for schemes the spec does not define.
pub(super) fn check_options(
    docs: &Documents,
    secrets: &[(String, SecretKeyRef)],
) -> Result<(), ImportError> {
    let defined = schemes(docs);
    for (scheme, _) in secrets {
        if !defined.is_some_and(|d| d.contains_key(scheme)) {
            let known: Vec<&str> = defined
                .map(|d| d.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Err(ImportError::Option(format!(
                "--secret {scheme}=...: the spec defines no security scheme `{scheme}` (it defines: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    Ok(())
}

/// The credentials `op` needs: the first alternative of its security requirement whose every
/// scheme is mapped to a Secret (an empty alternative means no credentials).
pub(super) fn map(
    docs: &Documents,
    op: &Operation,
    secrets: &[(String, SecretKeyRef)],
) -> Result<Auth, Reason> {
    let Some(requirement) = op
        .op
        .get("security")
        .or_else(|| docs.root().get("security"))
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())
    else {
        return Ok(Auth::default());
    };
    let mut first_problem = None;
    for alternative in requirement {
        let Some(names) = alternative.as_object() else {
            continue;
        };
        let mut auth = Auth::default();
        let mut problem = None;
        for name in names.keys() {
            if let Err(reason) = add(docs, name, secrets, &mut auth) {
                problem = Some(reason);
                break;
            }
        }
        match problem {
            None => return Ok(auth),
            Some(reason) => {
                first_problem.get_or_insert(reason);
            }
        }
    }
    Err(first_problem.unwrap_or_else(|| {
        Reason::new(
            "security",
            "a security requirement that is not a list of objects".into(),
        )
    }))
}

fn add(
    docs: &Documents,
    name: &str,
    secrets: &[(String, SecretKeyRef)],
    auth: &mut Auth,
) -> Result<(), Reason> {
    let scheme = schemes(docs)
        .and_then(|s| s.get(name))
        .ok_or_else(|| Reason::new("security", format!("undefined security scheme `{name}`")))?;
    let (_, scheme) = docs
        .deref(&docs.main_location().file, scheme)
        .map_err(|err| Reason::new("unresolvable $ref", err.to_string()))?;
    let field = |k: &str| scheme.get(k).and_then(Value::as_str).unwrap_or_default();
    let kind = field("type");
    let secret = secrets
        .iter()
        .find(|(scheme, _)| scheme == name)
        .map(|(_, secret)| secret.clone());
    let unsupported = |what: String| Err(Reason::new("unsupported security", what));
    let param = |param_name: &str, prefix: Option<&str>, secret: SecretKeyRef| HttpParam {
        name: param_name.to_owned(),
        secret_key_ref: Some(secret),
        prefix: prefix.map(str::to_owned),
        ..Default::default()
    };
    let prefix = match (kind, field("scheme").to_ascii_lowercase().as_str()) {
        ("apiKey", _) => None,
        ("http", "bearer") | ("oauth2" | "openIdConnect", _) => Some("Bearer "),
        ("http", "basic") | ("basic", _) => Some("Basic "),
        ("http", other) => return unsupported(format!("HTTP auth scheme `{other}` (`{name}`)")),
        (other, _) => return unsupported(format!("security scheme type `{other}` (`{name}`)")),
    };
    if kind == "apiKey" && !matches!(field("in"), "header" | "query") {
        return unsupported(format!("API key in `{}` (`{name}`)", field("in")));
    }
    let Some(secret) = secret else {
        return Err(Reason::new(
            "security",
            format!("needs --secret {name}=SECRET/KEY for security scheme `{name}` ({kind})"),
        ));
    };
    if kind == "apiKey" && field("in") == "query" {
        auth.query.push(param(field("name"), None, secret));
    } else if kind == "apiKey" {
        auth.headers.push(param(field("name"), None, secret));
    } else {
        auth.headers.push(param("Authorization", prefix, secret));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const SPEC: &str = "openapi: 3.0.3\nsecurity: [{key: []}, {token: []}]\npaths:\n  /a:\n    get: {}\n  \
        /b:\n    get: {security: [{}]}\n  /c:\n    get: {security: [{mtls: []}]}\ncomponents:\n  securitySchemes:\n    \
        key: {type: apiKey, in: query, name: api_key}\n    token: {type: http, scheme: bearer}\n    \
        mtls: {type: mutualTLS}\n";

    fn secret(name: &str) -> SecretKeyRef {
        SecretKeyRef {
            name: name.into(),
            key: "k".into(),
        }
    }

    #[test]
    fn the_first_satisfiable_alternative_wins() {
        let docs = Documents::parse(SPEC, Path::new(".")).unwrap();
        let ops = super::super::select::operations(&docs).unwrap();
        let auth = map(&docs, &ops[0], &[("token".into(), secret("t"))]).unwrap();
        assert_eq!(auth.headers[0].name, "Authorization");
        assert_eq!(auth.headers[0].prefix.as_deref(), Some("Bearer "));
        assert_eq!(auth.headers[0].secret_key_ref, Some(secret("t")));
        let auth = map(
            &docs,
            &ops[0],
            &[("key".into(), secret("k")), ("token".into(), secret("t"))],
        )
        .unwrap();
        assert_eq!(auth.query[0].name, "api_key");
        assert!(auth.headers.is_empty());
        let err = map(&docs, &ops[0], &[]).unwrap_err();
        assert!(err.detail.contains("needs --secret key="), "{err:?}");
        // `security: [{}]`: no credentials needed.
        assert!(map(&docs, &ops[1], &[]).unwrap().headers.is_empty());
        assert_eq!(
            map(&docs, &ops[2], &[]).unwrap_err().kind,
            "unsupported security"
        );
    }

    #[test]
    fn unknown_schemes_in_options_are_refused() {
        let docs = Documents::parse(SPEC, Path::new(".")).unwrap();
        let err = check_options(&docs, &[("tokn".into(), secret("t"))]).unwrap_err();
        assert!(
            err.to_string().contains("it defines: key, token, mtls"),
            "{err}"
        );
    }
}
