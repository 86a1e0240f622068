//! Compile rules of `http.auth`, each refusal naming its field path. Pure except for the
//! temporary secrets directory.

use crate::compile::http::tests::{compiled_with, errors};
use crate::{ClientAuth, Grant, parse_manifest};
use std::path::PathBuf;

const AUTH: &str =
    "  auth: {issuer: 'https://idp.example.com', audiences: ['https://mcp.example.com']}\n";

/// A tool whose `http.auth` is `auth` (flow YAML).
fn tool(auth: &str) -> String {
    format!(
        "  tools:\n  - name: t\n    http:\n      url: https://api.example.com/me\n      auth: {auth}\n"
    )
}

const SECRET_CLIENT: &str = "{id: kube-mcp, secretKeyRef: {name: idp, key: secret}}";

/// The least `jwtBearer.assertion`.
const ASSERTION: &str = "{secretKeyRef: {name: svc-key, key: key.pem}, issuer: svc}";

#[test]
fn a_token_exchange_compiles_with_its_defaults() {
    let spec = format!(
        "{AUTH}{}",
        tool(&format!(
            "{{tokenExchange: {{tokenUrl: 'https://idp.example.com/token', client: {SECRET_CLIENT}, audience: tracker, scope: 'issues:read'}}}}"
        ))
    );
    let compiled = compiled_with(&spec, None).unwrap();
    let auth = auth_of(&compiled);
    assert_eq!(auth.grant, Grant::TokenExchange);
    assert_eq!(auth.header.as_str(), "authorization");
    assert_eq!(auth.prefix, "Bearer ");
    assert_eq!(auth.audience.as_deref(), Some("tracker"));
    assert!(matches!(auth.client_auth, ClientAuth::Secret(_)));
}

#[test]
fn token_exchange_needs_spec_auth() {
    let found = errors(&tool(&format!(
        "{{tokenExchange: {{tokenUrl: 'https://idp.example.com/token', client: {SECRET_CLIENT}}}}}"
    )));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "spec.tools[0].http.auth.tokenExchange");
    assert!(found[0].1.starts_with("needs spec.auth"), "{found:?}");
    // Client credentials need no caller.
    let spec = tool(&format!(
        "{{clientCredentials: {{tokenUrl: 'https://idp.example.com/token', client: {SECRET_CLIENT}}}}}"
    ));
    assert!(compiled_with(&spec, None).is_ok());
}

#[test]
fn exactly_one_grant() {
    for auth in [
        "{}".to_owned(),
        format!(
            "{{tokenExchange: {{tokenUrl: 'https://a/t', client: {SECRET_CLIENT}}}, clientCredentials: {{tokenUrl: 'https://a/t', client: {SECRET_CLIENT}}}}}"
        ),
        format!(
            "{{clientCredentials: {{tokenUrl: 'https://a/t', client: {SECRET_CLIENT}}}, jwtBearer: {{tokenUrl: 'https://a/t', assertion: {ASSERTION}}}}}"
        ),
    ] {
        let found = errors(&format!("{AUTH}{}", tool(&auth)));
        assert_eq!(found.len(), 1, "{auth}: {found:?}");
        assert_eq!(found[0].0, "spec.tools[0].http.auth");
        assert_eq!(
            found[0].1,
            "declare exactly one of `tokenExchange`, `clientCredentials` or `jwtBearer`"
        );
    }
}

#[test]
fn the_token_url_is_https_unless_loopback() {
    let url = |u: &str| {
        format!(
            "{AUTH}{}",
            tool(&format!(
                "{{clientCredentials: {{tokenUrl: '{u}', client: {SECRET_CLIENT}}}}}"
            ))
        )
    };
    for bad in [
        "http://idp.example.com/token",
        "http://10.0.0.1/t",
        "ftp://x/t",
        "/token",
        "https://u:p@idp/t",
    ] {
        let found = errors(&url(bad));
        assert_eq!(found.len(), 1, "{bad}: {found:?}");
        assert_eq!(
            found[0].0, "spec.tools[0].http.auth.clientCredentials.tokenUrl",
            "{bad}"
        );
    }
    for good in [
        "https://idp.example.com/token",
        "http://127.0.0.1:5556/oauth/token",
        "http://[::1]:1/t",
        "http://localhost/t",
    ] {
        assert!(compiled_with(&url(good), None).is_ok(), "{good}");
    }
}

#[test]
fn exactly_one_client_authentication() {
    let client = |c: &str| {
        format!(
            "{AUTH}{}",
            tool(&format!(
                "{{tokenExchange: {{tokenUrl: 'https://idp/t', client: {c}}}}}"
            ))
        )
    };
    let found = errors(&client("{id: a}"));
    assert_eq!(found[0].0, "spec.tools[0].http.auth.tokenExchange.client");
    let found = errors(&client(
        "{id: a, secretKeyRef: {name: s, key: k}, privateKeyJwt: {secretKeyRef: {name: s, key: p}}}",
    ));
    assert_eq!(found[0].0, "spec.tools[0].http.auth.tokenExchange.client");
    let found = errors(&client(
        "{id: a, secretKeyRef: {name: s, key: k}, serviceAccountToken: {audience: idp}}",
    ));
    assert_eq!(found[0].0, "spec.tools[0].http.auth.tokenExchange.client");
    assert!(
        compiled_with(
            &client("{id: a, serviceAccountToken: {audience: idp}}"),
            None
        )
        .is_ok()
    );
    let found = errors(&client("{id: '', secretKeyRef: {name: s, key: k}}"));
    assert_eq!(
        found[0].0,
        "spec.tools[0].http.auth.tokenExchange.client.id"
    );
    // An algorithm outside the enum is refused by the schema (and here by serde).
    let text = format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{}",
        client("{id: a, privateKeyJwt: {secretKeyRef: {name: s, key: p}, alg: HS256}}")
    );
    assert!(parse_manifest(&text, PathBuf::new()).is_err());
}

#[test]
fn the_header_is_checked() {
    let spec = format!(
        "{AUTH}  tools:\n  - name: t\n    http:\n      url: https://api.example.com/me\n      headers: [{{name: authorization, value: x}}]\n      auth: {{tokenExchange: {{tokenUrl: 'https://idp/t', client: {SECRET_CLIENT}}}}}\n"
    );
    let found = errors(&spec);
    assert_eq!(found[0].0, "spec.tools[0].http.auth.header", "{found:?}");
}

/// A resource (`kind` `resources`) or template whose `http` has `extra` fields and `grant`.
fn read(kind: &str, grant: &str, extra: &str) -> String {
    let item = match kind {
        "resources" => "name: r\n    uri: 'docs://r'",
        _ => "name: r\n    uriTemplate: 'docs://r/{id}'",
    };
    format!(
        "{AUTH}  {kind}:\n  - {item}\n    http:\n      url: https://api.example.com/r\n{extra}      auth: {{{grant}: {{tokenUrl: 'https://idp/t', client: {SECRET_CLIENT}}}}}\n"
    )
}

#[test]
fn resources_and_templates_read_as_each_caller_are_never_shared() {
    let per_caller = |spec: &str, kind: &str| {
        let compiled = compiled_with(spec, None).unwrap();
        let http = match kind {
            "resources" => compiled.resources[0].http.clone(),
            _ => compiled.resource_templates[0].http.clone(),
        };
        http.unwrap().per_caller()
    };
    for kind in ["resources", "resourceTemplates"] {
        assert!(per_caller(&read(kind, "tokenExchange", ""), kind), "{kind}");
        for field in ["cacheTtlMs: 1000", "pollIntervalMs: 5000"] {
            let found = errors(&read(kind, "tokenExchange", &format!("      {field}\n")));
            let name = field.split(':').next().unwrap();
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0].0, format!("spec.{kind}[0].http.{name}"));
            assert!(found[0].1.contains("each read is made as its caller"));
        }
        // One token for every caller: cached and polled like any read.
        let shared = read(
            kind,
            "clientCredentials",
            "      cacheTtlMs: 1000\n      pollIntervalMs: 5000\n",
        );
        assert!(!per_caller(&shared, kind), "{kind}");
    }
}

#[test]
fn secrets_are_read_and_their_names_listed() {
    let dir = std::env::temp_dir().join(format!("kube-mcp-http-auth-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("idp")).unwrap();
    std::fs::write(dir.join("idp/secret"), "s3cret-value\n").unwrap();
    std::fs::write(dir.join("idp/key"), "not a key\n").unwrap();
    let spec = format!(
        "{AUTH}{}",
        tool(&format!(
            "{{tokenExchange: {{tokenUrl: 'https://idp/t', client: {SECRET_CLIENT}}}}}"
        ))
    );
    let compiled = compiled_with(&spec, Some(&dir)).unwrap();
    let http = compiled.tool("t").unwrap().http.as_ref().unwrap();
    let ClientAuth::Secret(secret) = &http.auth.as_ref().unwrap().client_auth else {
        panic!("a secret client");
    };
    assert_eq!(secret.expose(), "s3cret-value");
    // Never sent upstream, so not scrubbed from its answers (partial matches of a short secret
    // would mangle them: `kube-mcp` is half of `kube-mcp-secret`).
    assert!(http.secrets.is_empty());
    let spec = format!(
        "{AUTH}{}",
        tool(
            "{tokenExchange: {tokenUrl: 'https://idp/t', client: {id: a, privateKeyJwt: {secretKeyRef: {name: idp, key: key}}}}}"
        )
    );
    let found: Vec<String> = compiled_with(&spec, Some(&dir))
        .unwrap_err()
        .errors
        .into_iter()
        .map(|e| format!("{}: {}", e.path, e.message))
        .collect();
    assert_eq!(
        found,
        [
            "spec.tools[0].http.auth.tokenExchange.client.privateKeyJwt.secretKeyRef: does not hold a PEM private key"
        ]
    );
    let manifest = parse_manifest(
        &format!("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"),
        PathBuf::new(),
    )
    .unwrap();
    assert!(manifest.declaration.secret_refs().contains("idp"));
    let problems = crate::cluster_problems(&manifest.declaration, &[]);
    assert_eq!(problems[0].path, "spec.tools[0].http", "{problems:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_actor_is_for_token_exchange_only_and_its_secret_is_listed() {
    let spec = format!(
        "{AUTH}{}",
        tool(&format!(
            "{{tokenExchange: {{tokenUrl: 'https://idp/t', client: {SECRET_CLIENT}, actor: {{client: {{id: sid1, secretKeyRef: {{name: actor, key: secret}}}}}}}}}}"
        ))
    );
    let compiled = compiled_with(&spec, None).unwrap();
    let auth = auth_of(&compiled);
    let actor = auth.actor.as_ref().unwrap();
    assert_eq!(
        (actor.grant, actor.client_id.as_str()),
        (Grant::ClientCredentials, "sid1")
    );
    // Another actor is another token: the exchange's cache key names it.
    assert!(auth.cache_key.contains("sid1"));
    let manifest = parse_manifest(
        &format!("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"),
        PathBuf::new(),
    )
    .unwrap();
    assert!(manifest.declaration.secret_refs().contains("actor"));
    let found = errors(&tool(&format!(
        "{{clientCredentials: {{tokenUrl: 'https://idp/t', client: {SECRET_CLIENT}, actor: {{client: {SECRET_CLIENT}}}}}}}"
    )));
    assert_eq!(
        found,
        [(
            "spec.tools[0].http.auth.clientCredentials.actor".to_owned(),
            "applies to tokenExchange only".to_owned()
        )]
    );
    let found = errors(&format!(
        "{AUTH}{}",
        tool(&format!(
            "{{tokenExchange: {{tokenUrl: 'https://idp/t', client: {SECRET_CLIENT}, actor: {{client: {{id: sid1}}}}}}}}"
        ))
    ));
    assert_eq!(
        found[0].0,
        "spec.tools[0].http.auth.tokenExchange.actor.client"
    );
}

/// A tool whose `http` has `field: [param]` (flow YAML).
fn tool_params(field: &str, param: &str) -> String {
    format!(
        "  tools:\n  - name: t\n    http:\n      url: https://api.example.com/me\n      {field}: [{param}]\n"
    )
}

#[test]
fn claim_headers_need_callers_with_tokens() {
    let header = "{name: X-User, claim: email}";
    assert!(compiled_with(&format!("{AUTH}{}", tool_params("headers", header)), None).is_ok());
    let found = errors(&tool_params("headers", header));
    assert_eq!(
        found[0].0, "spec.tools[0].http.headers[0].claim",
        "{found:?}"
    );
    assert!(found[0].1.starts_with("needs spec.auth"), "{found:?}");
    let found = errors(&format!(
        "{AUTH}{}",
        tool_params("query", "{name: user, claim: sub}")
    ));
    assert_eq!(found[0].0, "spec.tools[0].http.query[0].claim", "{found:?}");
    assert_eq!(found[0].1, "applies to headers only");
    for (param, path, message) in [
        (
            "{name: X-User, claim: sub, value: x}",
            "spec.tools[0].http.headers[0]",
            "declare exactly one of `value`, `arg`, `secretKeyRef` or `claim`",
        ),
        (
            "{name: X-User, claim: 'org..id'}",
            "spec.tools[0].http.headers[0].claim",
            "must be a claim name or a dotted path (`org.id`)",
        ),
    ] {
        let found = errors(&format!("{AUTH}{}", tool_params("headers", param)));
        assert_eq!((found[0].0.as_str(), found[0].1.as_str()), (path, message));
    }
}

/// The compiled `auth` of tool `t`.
fn auth_of(compiled: &crate::Compiled) -> &crate::CompiledAuth {
    compiled
        .tool("t")
        .unwrap()
        .http
        .as_ref()
        .unwrap()
        .auth
        .as_ref()
        .unwrap()
}

#[test]
fn a_jwt_bearer_grant_compiles_with_its_defaults_and_needs_no_caller() {
    // No spec.auth: the assertion names the runtime's subject, not the caller.
    let spec = tool(&format!(
        "{{jwtBearer: {{tokenUrl: 'https://idp.example.com/token', assertion: {ASSERTION}, scope: openid}}}}"
    ));
    let compiled = compiled_with(&spec, None).unwrap();
    let auth = auth_of(&compiled);
    assert_eq!(auth.grant, Grant::JwtBearer);
    assert!(matches!(auth.client_auth, ClientAuth::None));
    assert_eq!(auth.client_id, "");
    assert_eq!(auth.scope.as_deref(), Some("openid"));
    let assertion = auth.assertion.as_ref().unwrap();
    assert_eq!(
        (
            assertion.issuer.as_str(),
            assertion.subject.as_str(),
            assertion.audience.as_str(),
            assertion.key_id.as_deref(),
            assertion.alg,
        ),
        (
            "svc",
            "svc",
            "https://idp.example.com/token",
            None,
            crate::types::JwtAlgorithm::RS256
        )
    );
    // Everything declared, and a client beside the assertion.
    let spec = tool(&format!(
        "{{jwtBearer: {{tokenUrl: 'https://idp.example.com/token', client: {SECRET_CLIENT}, audience: tracker, assertion: {{secretKeyRef: {{name: svc-key, key: key.pem}}, alg: ES256, keyId: k1, issuer: svc, subject: alice, audience: 'https://idp.example.com'}}}}}}"
    ));
    let compiled = compiled_with(&spec, None).unwrap();
    let auth = auth_of(&compiled);
    assert!(matches!(auth.client_auth, ClientAuth::Secret(_)));
    assert_eq!(auth.client_id, "kube-mcp");
    let assertion = auth.assertion.as_ref().unwrap();
    assert_eq!(
        (
            assertion.subject.as_str(),
            assertion.audience.as_str(),
            assertion.key_id.as_deref(),
            assertion.alg,
        ),
        (
            "alice",
            "https://idp.example.com",
            Some("k1"),
            crate::types::JwtAlgorithm::ES256
        )
    );
    // Another subject is another token.
    assert!(auth.cache_key.contains("alice"), "{}", auth.cache_key);
    // The key's Secret and the client's are listed, for spec.secrets and admission.
    let manifest = parse_manifest(
        &format!("apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{spec}"),
        PathBuf::new(),
    )
    .unwrap();
    let refs = manifest.declaration.secret_refs();
    assert!(refs.contains("svc-key") && refs.contains("idp"), "{refs:?}");
}

#[test]
fn a_jwt_bearer_assertion_is_checked() {
    let grant = |assertion: &str, rest: &str| {
        tool(&format!(
            "{{jwtBearer: {{tokenUrl: 'https://idp/t', assertion: {assertion}{rest}}}}}"
        ))
    };
    let found = errors(&grant("{secretKeyRef: {name: k, key: p}, issuer: ''}", ""));
    assert_eq!(
        found,
        [(
            "spec.tools[0].http.auth.jwtBearer.assertion.issuer".to_owned(),
            "must not be empty".to_owned()
        )]
    );
    let found = errors(&grant(
        "{secretKeyRef: {name: k, key: p}, issuer: svc, subject: '', audience: '', keyId: ''}",
        ", scope: ''",
    ));
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.tools[0].http.auth.jwtBearer.assertion.subject",
            "spec.tools[0].http.auth.jwtBearer.assertion.audience",
            "spec.tools[0].http.auth.jwtBearer.assertion.keyId",
            "spec.tools[0].http.auth.jwtBearer.scope",
        ],
        "{found:?}"
    );
    // A malformed Secret reference, a client without authentication.
    let found = errors(&grant(
        "{secretKeyRef: {name: K_, key: p}, issuer: svc}",
        "",
    ));
    assert_eq!(
        found[0].0,
        "spec.tools[0].http.auth.jwtBearer.assertion.secretKeyRef"
    );
    let found = errors(&grant(ASSERTION, ", client: {id: a}"));
    assert_eq!(found[0].0, "spec.tools[0].http.auth.jwtBearer.client");
    // The token URL rules are the other grants'.
    let found = errors(&tool(&format!(
        "{{jwtBearer: {{tokenUrl: 'http://idp.example.com/t', assertion: {ASSERTION}}}}}"
    )));
    assert_eq!(
        found,
        [(
            "spec.tools[0].http.auth.jwtBearer.tokenUrl".to_owned(),
            "must be https (http only on a loopback address such as 127.0.0.1)".to_owned()
        )]
    );
    // An algorithm outside the enum is refused by the schema (and here by serde).
    let text = format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: t}}\nspec:\n{}",
        grant(
            "{secretKeyRef: {name: k, key: p}, issuer: svc, alg: HS256}",
            ""
        )
    );
    assert!(parse_manifest(&text, PathBuf::new()).is_err());
    // With the files: a key that is not PEM.
    let dir = std::env::temp_dir().join(format!("kube-mcp-jwt-bearer-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("svc-key")).unwrap();
    std::fs::write(dir.join("svc-key/key.pem"), "not a key\n").unwrap();
    let found: Vec<String> = compiled_with(
        &tool(&format!(
            "{{jwtBearer: {{tokenUrl: 'https://idp/t', assertion: {ASSERTION}}}}}"
        )),
        Some(&dir),
    )
    .unwrap_err()
    .errors
    .into_iter()
    .map(|e| format!("{}: {}", e.path, e.message))
    .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        [
            "spec.tools[0].http.auth.jwtBearer.assertion.secretKeyRef: does not hold a PEM private key"
        ]
    );
}

#[test]
fn a_service_account_token_client_reads_the_file_named_by_its_audience() {
    let spec = format!(
        "{AUTH}{}",
        tool(
            "{tokenExchange: {tokenUrl: 'https://idp/t', client: {id: a, serviceAccountToken: {audience: 'https://idp.example.com'}}, actor: {client: {id: b, serviceAccountToken: {audience: actor-aud}}}}}"
        )
    );
    let compiled = compiled_with(&spec, None).unwrap();
    let auth = auth_of(&compiled);
    let ClientAuth::ServiceAccountToken { audience, path } = &auth.client_auth else {
        panic!("{:?}", auth.client_auth);
    };
    assert_eq!(audience, "https://idp.example.com");
    assert_eq!(
        path,
        &crate::service_account_token_path(
            std::path::Path::new(crate::DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR),
            "https://idp.example.com"
        )
    );
    let actor = auth.actor.as_ref().unwrap();
    assert!(matches!(
        &actor.client_auth,
        ClientAuth::ServiceAccountToken { audience, .. } if audience == "actor-aud"
    ));
    // The kind of client and the token's audience are part of the cache key: another client
    // never reuses the token.
    assert!(
        auth.cache_key
            .contains(r#"["service_account_token","https://idp.example.com"]"#),
        "{}",
        auth.cache_key
    );
}

#[test]
fn a_service_account_token_audience_is_printable_and_bounded() {
    let client = |audience: &str| {
        format!(
            "{AUTH}{}",
            tool(&format!(
                "{{tokenExchange: {{tokenUrl: 'https://idp/t', client: {{id: a, serviceAccountToken: {{audience: {audience}}}}}}}}}"
            ))
        )
    };
    let path = "spec.tools[0].http.auth.tokenExchange.client.serviceAccountToken.audience";
    for bad in [
        "''".to_owned(),
        "' '".to_owned(),
        "\"a\\nb\"".to_owned(),
        format!("'{}'", "a".repeat(513)),
        "'https://kubernetes.default.svc.cluster.local/'".to_owned(),
        "api".to_owned(),
    ] {
        let found = errors(&client(&bad));
        assert_eq!(found.len(), 1, "{bad}: {found:?}");
        assert_eq!(found[0].0, path, "{bad}");
    }
    assert!(compiled_with(&client(&format!("'{}'", "a".repeat(512))), None).is_ok());
}
