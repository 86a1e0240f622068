//! The compiled form of an `http` declaration, as the HTTP backend uses it. Pure data: the live
//! parts (the HTTP client, the concurrency limit) are built from it by the backend
//! (`backends/http/upstreams.rs`), so validating a manifest builds nothing.

use crate::jq::JqProgram;
use crate::json_body::JsonBody;
use crate::secrets::Secret;
use crate::template::Text;
use crate::upstream_url::UrlTemplate;
use crate::value_template::ValueTemplate;
use std::sync::Arc;
use std::time::Duration;

/// An upstream call ready to make.
#[derive(Debug)]
pub struct CompiledHttp {
    /// Metrics and log label: the tool name, or `resource:<name>`.
    pub label: String,
    /// HTTP method.
    pub method: http::Method,
    /// URL template with its fixed origin.
    pub url: UrlTemplate,
    /// Extra query parameters.
    pub query: Vec<CompiledParam>,
    /// Headers.
    pub headers: Vec<CompiledParam>,
    /// Body.
    pub body: Option<CompiledBody>,
    /// Deadline of the whole call.
    pub timeout: Duration,
    /// Retry policy, when allowed and declared.
    pub retry: Option<Retry>,
    /// Largest body read.
    pub max_response_bytes: u64,
    /// Calls in flight at once.
    pub max_concurrency: usize,
    /// Extra trusted CA certificates (PEM, checked to hold at least one).
    pub ca_bundle: Option<String>,
    /// Its position among the declaration's HTTP backends (`Compiled::upstreams`), where the
    /// backend keeps its live parts.
    pub slot: usize,
    /// Response mappings.
    pub responses: Vec<CompiledResponse>,
    /// Resources: how long a read result is reused.
    pub cache_ttl: Duration,
    /// Resources: how often a subscribed resource is polled.
    pub poll_interval: Duration,
    /// Every secret value this call sends (without prefixes), redacted from anything it returns.
    pub secrets: Vec<Secret>,
    /// Tools: the token obtained for each call (`http.auth`).
    pub auth: Option<CompiledAuth>,
    /// Tools: the job the start request creates, polled until done (`http.async`).
    pub job: Option<super::CompiledAsync>,
}

/// How a backend obtains the token it sends (`http.auth`).
#[derive(Debug)]
pub struct CompiledAuth {
    /// Which grant.
    pub grant: Grant,
    /// The token endpoint (`https`, or `http` on loopback).
    pub token_url: url::Url,
    /// The runtime's client id (empty without a client: [`ClientAuth::None`]).
    pub client_id: String,
    /// How the client authenticates.
    pub client_auth: ClientAuth,
    /// `audience` parameter.
    pub audience: Option<String>,
    /// `resource` parameter.
    pub resource: Option<String>,
    /// `scope` parameter.
    pub scope: Option<String>,
    /// Header that carries the token.
    pub header: http::HeaderName,
    /// Text before the token in the header.
    pub prefix: String,
    /// Everything but the subject that decides which token the server issues (grant, token
    /// URL, client, audience, resource, scope, actor, assertion), as one string: backends with equal keys
    /// share cached tokens (shared, not copied, by each lookup).
    pub cache_key: std::sync::Arc<str>,
    /// Token exchange: how the actor token is obtained (client credentials, same token URL).
    pub actor: Option<Box<CompiledAuth>>,
    /// JWT bearer grant: the assertion signed for each token request.
    pub assertion: Option<CompiledAssertion>,
}

/// The assertion of a JWT bearer grant (RFC 7523 section 2.1).
#[derive(Debug)]
pub struct CompiledAssertion {
    /// The PEM private key.
    pub key: Secret,
    /// Signing algorithm.
    pub alg: crate::types::JwtAlgorithm,
    /// `kid` header.
    pub key_id: Option<String>,
    /// `iss` claim.
    pub issuer: String,
    /// `sub` claim.
    pub subject: String,
    /// `aud` claim.
    pub audience: String,
}

/// The grants `http.auth` can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// RFC 8693, the caller's token as the subject token.
    TokenExchange,
    /// RFC 6749 section 4.4.
    ClientCredentials,
    /// RFC 7523 section 2.1, a signed assertion as the grant.
    JwtBearer,
}

/// Client authentication at the token endpoint.
#[derive(Debug)]
pub enum ClientAuth {
    /// `client_secret_basic`.
    Secret(Secret),
    /// `private_key_jwt` (RFC 7523 section 2.2).
    PrivateKeyJwt {
        /// The PEM private key.
        key: Secret,
        /// Signing algorithm.
        alg: crate::types::JwtAlgorithm,
        /// `kid` header.
        key_id: Option<String>,
        /// `aud` claim.
        audience: String,
    },
    /// None: the JWT bearer grant without `client` (the assertion alone authorizes).
    None,
    /// The pod's projected ServiceAccount token as the client assertion (RFC 7523 section
    /// 2.2), read from `path` for each token request (the kubelet rotates it).
    ServiceAccountToken {
        /// The token's audience.
        audience: String,
        /// The file the operator mounts it at (`service_account_token_path`).
        path: std::path::PathBuf,
    },
}

/// Retry policy.
#[derive(Clone, Copy, Debug)]
pub struct Retry {
    /// Total attempts.
    pub attempts: u32,
    /// Wait before the first retry (doubled after each).
    pub backoff: Duration,
}

/// A query parameter, header or form field.
#[derive(Debug)]
pub struct CompiledParam {
    /// Name.
    pub name: String,
    /// Where the value comes from.
    pub value: ParamValue,
}

/// Where a parameter's value comes from.
#[derive(Debug)]
pub enum ParamValue {
    /// A literal or template over `args`.
    Text(Text),
    /// An argument by dotted path.
    Arg(String),
    /// A secret, prefix included.
    Secret(Secret),
    /// A claim of the caller's token by dotted path (headers only).
    Claim(String),
}

/// A request body and its content type.
#[derive(Debug)]
pub struct CompiledBody {
    /// What is sent.
    pub kind: BodyKind,
    /// `Content-Type`.
    pub content_type: String,
}

/// Body kinds.
#[derive(Debug)]
pub enum BodyKind {
    /// A JSON document built as a value.
    Json(JsonBody),
    /// Form fields.
    Form(Vec<CompiledParam>),
    /// Templated text.
    Text(Text),
}

/// Which statuses a response mapping covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusMatch {
    /// One code.
    Code(u16),
    /// A class: 2 for `2xx`.
    Class(u16),
    /// Anything else.
    Default,
}

/// A response mapping.
#[derive(Debug)]
pub struct CompiledResponse {
    /// Statuses covered.
    pub status: StatusMatch,
    /// jq program for the structured result.
    pub jq: Option<Arc<JqProgram>>,
    /// Tools: content blocks.
    pub content: Option<Vec<ValueTemplate>>,
    /// Resources: contents template.
    pub text: Option<Text>,
    /// Tools: tool error or not (default by status).
    pub is_error: Option<bool>,
}

impl CompiledHttp {
    /// The most specific mapping for `status`: exact code, then class, then `default`.
    pub fn response_for(&self, status: u16) -> Option<&CompiledResponse> {
        most_specific(&self.responses, status)
    }

    /// Whether each call is made as its caller (token exchange): its answers belong to that
    /// caller alone, so they are neither cached nor polled.
    pub fn per_caller(&self) -> bool {
        self.auth
            .as_ref()
            .is_some_and(|auth| auth.grant == Grant::TokenExchange)
    }
}

fn most_specific(responses: &[CompiledResponse], status: u16) -> Option<&CompiledResponse> {
    let find = |wanted: StatusMatch| responses.iter().find(|r| r.status == wanted);
    find(StatusMatch::Code(status))
        .or_else(|| find(StatusMatch::Class(status / 100)))
        .or_else(|| find(StatusMatch::Default))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_mapping_wins_whatever_the_order() {
        let response = |status| CompiledResponse {
            status,
            jq: None,
            content: None,
            text: None,
            is_error: None,
        };
        let responses = vec![
            response(StatusMatch::Default),
            response(StatusMatch::Class(4)),
            response(StatusMatch::Code(404)),
        ];
        let pick = |status| most_specific(&responses, status).map(|r| r.status);
        assert_eq!(pick(404), Some(StatusMatch::Code(404)));
        assert_eq!(pick(418), Some(StatusMatch::Class(4)));
        assert_eq!(pick(200), Some(StatusMatch::Default));
        assert_eq!(most_specific(&responses[1..], 500).map(|r| r.status), None);
    }
}
