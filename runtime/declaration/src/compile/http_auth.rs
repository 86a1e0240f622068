//! Compiling `http.auth`: exactly one grant, a token URL that is `https` (or `http` on a
//! loopback address), exactly one client authentication (none at all for a JWT bearer grant
//! without `client`), the assertion of a JWT bearer grant, the header the token goes into.
//! Token exchange needs `spec.auth`: without it there is no caller's token to exchange. Reads
//! the referenced secret files (unless no secrets directory is given).

use super::Compiler;
use super::http_types::{ClientAuth, CompiledAssertion, CompiledAuth, CompiledParam, Grant};
use crate::secrets::Secret;
use crate::service_account_tokens::{
    KUBERNETES_API_AUDIENCES, MAX_SERVICE_ACCOUNT_AUDIENCE_BYTES, service_account_token_path,
    token_dir_name,
};
use crate::types::{
    HttpAuth, JwtAlgorithm, JwtAssertion, OAuthActor, OAuthClient, OAuthGrant, SecretKeyRef,
};

/// What every grant declares, whichever grant declares it.
struct Requested<'a> {
    grant: Grant,
    field: &'static str,
    token_url: &'a str,
    client: Option<&'a OAuthClient>,
    audience: &'a Option<String>,
    resource: &'a Option<String>,
    scope: &'a Option<String>,
    actor: Option<&'a OAuthActor>,
    assertion: Option<&'a JwtAssertion>,
}

impl<'a> Requested<'a> {
    /// The one grant of `auth`, if exactly one is declared.
    fn of(auth: &'a HttpAuth) -> Option<Self> {
        let oauth = |grant, field, spec: &'a OAuthGrant| Self {
            grant,
            field,
            token_url: &spec.token_url,
            client: Some(&spec.client),
            audience: &spec.audience,
            resource: &spec.resource,
            scope: &spec.scope,
            actor: spec.actor.as_ref(),
            assertion: None,
        };
        match (
            &auth.token_exchange,
            &auth.client_credentials,
            &auth.jwt_bearer,
        ) {
            (Some(spec), None, None) => Some(oauth(Grant::TokenExchange, "tokenExchange", spec)),
            (None, Some(spec), None) => {
                Some(oauth(Grant::ClientCredentials, "clientCredentials", spec))
            }
            (None, None, Some(spec)) => Some(Self {
                grant: Grant::JwtBearer,
                field: "jwtBearer",
                token_url: &spec.token_url,
                client: spec.client.as_ref(),
                audience: &spec.audience,
                resource: &spec.resource,
                scope: &spec.scope,
                actor: None,
                assertion: Some(&spec.assertion),
            }),
            _ => None,
        }
    }
}

impl Compiler<'_> {
    /// The compiled `auth` of an `http` block at `path` whose headers are `headers`.
    pub(super) fn http_auth(
        &mut self,
        path: &str,
        auth: &HttpAuth,
        headers: &[CompiledParam],
    ) -> Option<CompiledAuth> {
        let errors_before = self.errors.len();
        let Some(spec) = Requested::of(auth) else {
            self.error(
                path,
                "declare exactly one of `tokenExchange`, `clientCredentials` or `jwtBearer`",
            );
            return None;
        };
        let (grant, field) = (spec.grant, spec.field);
        let grant_path = format!("{path}.{field}");
        if grant == Grant::TokenExchange && !self.authenticates {
            self.error(
                &grant_path,
                "needs spec.auth: without it callers bring no token to exchange",
            );
        }
        let token_url = self.token_url(&format!("{grant_path}.tokenUrl"), spec.token_url);
        let client_auth = match spec.client {
            Some(client) => self.client_auth(&grant_path, client, spec.token_url),
            None => Some(ClientAuth::None),
        };
        let client_id = spec.client.map(|c| c.id.clone()).unwrap_or_default();
        let assertion = spec
            .assertion
            .and_then(|assertion| self.assertion(&grant_path, assertion, spec.token_url));
        let actor = spec.actor.and_then(|actor| {
            let actor_path = format!("{grant_path}.actor");
            if grant != Grant::TokenExchange {
                self.error(&actor_path, "applies to tokenExchange only");
                return None;
            }
            if actor.scope.as_deref().is_some_and(str::is_empty) {
                self.error(format!("{actor_path}.scope"), "must not be empty");
            }
            let client_auth = self.client_auth(&actor_path, &actor.client, spec.token_url)?;
            let cache_key = serde_json::json!([
                "clientCredentials",
                spec.token_url,
                actor.client.id,
                client_kind(&client_auth),
                actor.scope,
            ])
            .to_string();
            Some(Box::new(CompiledAuth {
                grant: Grant::ClientCredentials,
                token_url: url::Url::parse(spec.token_url).ok()?,
                client_id: actor.client.id.clone(),
                client_auth,
                audience: None,
                resource: None,
                scope: actor.scope.clone(),
                header: http::header::AUTHORIZATION,
                prefix: String::new(),
                cache_key: cache_key.into(),
                actor: None,
                assertion: None,
            }))
        });
        for (name, value) in [
            ("audience", spec.audience),
            ("resource", spec.resource),
            ("scope", spec.scope),
        ] {
            if value.as_deref().is_some_and(str::is_empty) {
                self.error(format!("{grant_path}.{name}"), "must not be empty");
            }
        }
        if let Some(resource) = spec.resource
            && url::Url::parse(resource).is_err()
        {
            self.error(format!("{grant_path}.resource"), "must be an absolute URI");
        }
        let header_name = auth.header.as_deref().unwrap_or("Authorization");
        let header = match http::HeaderName::from_bytes(header_name.as_bytes()) {
            Ok(header) => Some(header),
            Err(_) => {
                self.error(format!("{path}.header"), "is not a valid header name");
                None
            }
        };
        if let Some(header) = &header
            && headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case(header.as_str()))
        {
            self.error(
                format!("{path}.header"),
                format!("`{header}` is also declared in `headers`: the token goes there alone"),
            );
        }
        let prefix = auth.prefix.clone().unwrap_or_else(|| "Bearer ".to_owned());
        if http::HeaderValue::from_str(&prefix).is_err() {
            self.error(format!("{path}.prefix"), "is not a valid header value");
        }
        if self.errors.len() > errors_before {
            return None;
        }
        let token_url = token_url?;
        let client_auth = client_auth?;
        if spec.assertion.is_some() && assertion.is_none() {
            return None;
        }
        let cache_key = serde_json::json!([
            field,
            token_url.as_str(),
            client_id,
            client_kind(&client_auth),
            spec.audience,
            spec.resource,
            spec.scope,
            actor.as_ref().map(|a| &*a.cache_key),
            assertion
                .as_ref()
                .map(|a| serde_json::json!([a.issuer, a.subject, a.audience, a.key_id])),
        ])
        .to_string();
        Some(CompiledAuth {
            grant,
            token_url,
            client_id,
            client_auth,
            audience: spec.audience.clone(),
            resource: spec.resource.clone(),
            scope: spec.scope.clone(),
            header: header?,
            prefix,
            cache_key: cache_key.into(),
            actor,
            assertion,
        })
    }

    /// The token URL, when `https` or `http` on a loopback address (a test's server; a token
    /// or client secret in clear text elsewhere would be readable on the network).
    fn token_url(&mut self, path: &str, text: &str) -> Option<url::Url> {
        let url = match url::Url::parse(text) {
            Ok(url) if url.has_host() && matches!(url.scheme(), "http" | "https") => url,
            _ => {
                self.error(path, "must be an absolute http(s) URL");
                return None;
            }
        };
        if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
            self.error(path, "must not carry a fragment or credentials");
            return None;
        }
        if url.scheme() == "http" && !is_loopback(&url) {
            self.error(
                path,
                "must be https (http only on a loopback address such as 127.0.0.1)",
            );
            return None;
        }
        Some(url)
    }

    /// The client's authentication: exactly one of `secretKeyRef`, `privateKeyJwt` or
    /// `serviceAccountToken`.
    fn client_auth(
        &mut self,
        owner_path: &str,
        client: &OAuthClient,
        token_url: &str,
    ) -> Option<ClientAuth> {
        let path = format!("{owner_path}.client");
        if client.id.is_empty() {
            self.error(format!("{path}.id"), "must not be empty");
        }
        let declared = [
            client.secret_key_ref.is_some(),
            client.private_key_jwt.is_some(),
            client.service_account_token.is_some(),
        ];
        if declared.iter().filter(|&&d| d).count() != 1 {
            self.error(
                &path,
                "declare exactly one of `secretKeyRef`, `privateKeyJwt` or `serviceAccountToken`",
            );
            return None;
        }
        if let Some(token) = &client.service_account_token {
            return self
                .service_account_token(&format!("{path}.serviceAccountToken"), &token.audience);
        }
        if let Some(reference) = &client.secret_key_ref {
            let (secret, _) = self.secret(&path, reference, None, true)?;
            return Some(ClientAuth::Secret(secret));
        }
        let jwt = client.private_key_jwt.as_ref()?;
        let jwt_path = format!("{path}.privateKeyJwt");
        let key = self.private_key(&jwt_path, &jwt.secret_key_ref)?;
        if jwt.audience.as_deref().is_some_and(str::is_empty) {
            self.error(format!("{jwt_path}.audience"), "must not be empty");
        }
        Some(ClientAuth::PrivateKeyJwt {
            key,
            alg: jwt.alg.unwrap_or(JwtAlgorithm::RS256),
            key_id: jwt.key_id.clone(),
            audience: jwt.audience.clone().unwrap_or_else(|| token_url.to_owned()),
        })
    }

    /// The assertion of a JWT bearer grant at `grant_path`: a PEM key, a non-empty `issuer`,
    /// and `subject` (default `issuer`), `audience` (default `token_url`) and `keyId` not empty
    /// when declared.
    fn assertion(
        &mut self,
        grant_path: &str,
        assertion: &JwtAssertion,
        token_url: &str,
    ) -> Option<CompiledAssertion> {
        let path = format!("{grant_path}.assertion");
        let errors_before = self.errors.len();
        if assertion.issuer.is_empty() {
            self.error(format!("{path}.issuer"), "must not be empty");
        }
        for (name, value) in [
            ("subject", &assertion.subject),
            ("audience", &assertion.audience),
            ("keyId", &assertion.key_id),
        ] {
            if value.as_deref().is_some_and(str::is_empty) {
                self.error(format!("{path}.{name}"), "must not be empty");
            }
        }
        let key = self.private_key(&path, &assertion.secret_key_ref);
        if self.errors.len() > errors_before {
            return None;
        }
        Some(CompiledAssertion {
            key: key?,
            alg: assertion.alg.unwrap_or(JwtAlgorithm::RS256),
            key_id: assertion.key_id.clone(),
            issuer: assertion.issuer.clone(),
            subject: assertion
                .subject
                .clone()
                .unwrap_or_else(|| assertion.issuer.clone()),
            audience: assertion
                .audience
                .clone()
                .unwrap_or_else(|| token_url.to_owned()),
        })
    }

    /// The PEM private key that `reference` (of the object at `path`) names.
    fn private_key(&mut self, path: &str, reference: &SecretKeyRef) -> Option<Secret> {
        let (key, _) = self.secret(path, reference, None, false)?;
        // An empty value is the operator's check without files; a real key is parsed when the
        // backend is built (`backends/http/upstreams.rs`), which refuses the load if it is not.
        if !key.expose().is_empty() && !key.expose().contains("-----BEGIN") {
            self.error(
                format!("{path}.secretKeyRef"),
                "does not hold a PEM private key",
            );
            return None;
        }
        Some(key)
    }

    /// A projected ServiceAccount token client: a bounded, printable audience, whose token file
    /// is found by its name (`service_account_tokens.rs`). The file is read for each token
    /// request, not here: it exists only in the pod, and the kubelet rotates it.
    fn service_account_token(&mut self, path: &str, audience: &str) -> Option<ClientAuth> {
        let audience_path = format!("{path}.audience");
        if audience.trim().is_empty() {
            self.error(audience_path, "must not be empty");
            return None;
        }
        if audience.len() > MAX_SERVICE_ACCOUNT_AUDIENCE_BYTES {
            self.error(
                audience_path,
                format!("is longer than {MAX_SERVICE_ACCOUNT_AUDIENCE_BYTES} bytes"),
            );
            return None;
        }
        if audience.chars().any(char::is_control) || audience.trim() != audience {
            self.error(
                audience_path,
                "must not hold control characters or surrounding spaces",
            );
            return None;
        }
        let bare = audience.trim_end_matches('/').to_ascii_lowercase();
        if KUBERNETES_API_AUDIENCES.contains(&bare.as_str()) {
            self.error(
                audience_path,
                "is the Kubernetes API's own audience: the token would be a credential for the \
                 API, sent to the token endpoint; use the authorization server's audience",
            );
            return None;
        }
        let dir = token_dir_name(audience);
        match self.token_dirs.get(&dir) {
            Some(seen) if seen != audience => {
                self.error(
                    audience_path,
                    format!(
                        "names the same token directory ({dir}) as audience `{seen}`: change one"
                    ),
                );
                return None;
            }
            Some(_) => {}
            None => {
                self.token_dirs.insert(dir, audience.to_owned());
            }
        }
        Some(ClientAuth::ServiceAccountToken {
            audience: audience.to_owned(),
            path: service_account_token_path(&self.options.service_account_tokens_dir, audience),
        })
    }
}

/// How the client authenticates, in a token's cache key: tokens of clients that authenticate
/// otherwise (a ServiceAccount token of another audience among them) are never shared.
fn client_kind(auth: &ClientAuth) -> serde_json::Value {
    match auth {
        ClientAuth::Secret(_) => "secret".into(),
        ClientAuth::PrivateKeyJwt { .. } => "private_key_jwt".into(),
        ClientAuth::ServiceAccountToken { audience, .. } => {
            serde_json::json!(["service_account_token", audience])
        }
        ClientAuth::None => "none".into(),
    }
}

/// Whether `url` names a loopback address (`localhost`, `127.0.0.0/8`, `::1`).
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

#[cfg(test)]
mod tests;
