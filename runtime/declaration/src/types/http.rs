//! Spec types of the `http` backend: a tool, resource or resource template answered by calling an
//! upstream HTTP API. Shared with the operator's CRD, so every field is documented. Pure data.

use super::ContentBlock;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call to an upstream HTTP API.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Http {
    /// HTTP method (default `GET`).
    #[serde(default)]
    pub method: HttpMethod,
    /// RFC 6570 URI template (levels 1-4) over the arguments, such as
    /// `https://api.example.com/items/{id}{?q,limit}`. Values are percent-encoded; `{+x}` and
    /// `{#x}` keep reserved characters. Scheme, host and port must be literal: a template that
    /// could change them is refused.
    pub url: String,
    /// More query parameters, appended after those of `url`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query: Vec<HttpParam>,
    /// Request headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<HttpParam>,
    /// Request body: exactly one of `json`, `form` or `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<HttpBody>,
    /// Deadline of the whole call, retries included, in milliseconds (default 10000, at most
    /// 120000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Retries after connection failures and 502/503/504 answers. Only for tools annotated
    /// `readOnlyHint` or `idempotentHint`, and for resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<HttpRetry>,
    /// Largest response body read, in bytes (default 1048576, at most 16777216); a larger one is
    /// an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_bytes: Option<u64>,
    /// Most calls of this tool or resource in flight at once per replica (default 16); more wait,
    /// within the deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// A token obtained from an OAuth authorization server for each call (token exchange for
    /// the caller, or client credentials), sent in a header. Resources and templates read
    /// with token exchange are read as each caller: neither cached nor polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<super::HttpAuth>,
    /// TLS settings for `https` upstreams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<HttpTls>,
    /// How answers become results, by status: an exact code (`404`), a class (`2xx`) or
    /// `default`; the most specific entry wins. Without a matching entry, a 2xx answer is
    /// returned as received and any other status is an error naming it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<HttpResponse>,
    /// Tools only: the call starts a job polled until done (`202` and `Location`, typically).
    #[serde(default, rename = "async", skip_serializing_if = "Option::is_none")]
    pub r#async: Option<super::HttpAsync>,
    /// Resources only: milliseconds a read result is reused before the upstream is asked again
    /// (default 0: every read calls the upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl_ms: Option<u64>,
    /// Resources only: how often a resource that a client subscribed to is fetched to detect
    /// changes, in milliseconds (default 30000, at least 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// HTTP methods an upstream call may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// GET.
    #[default]
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
    /// HEAD.
    Head,
}

/// A named value (query parameter, header, form field): exactly one of `value`, `arg` or
/// `secretKeyRef`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpParam {
    /// Parameter or header name.
    pub name: String,
    /// A literal value, or a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// An argument, by name or dotted path (`filter.state`); omitted when the argument is
    /// absent or null; an array gives one parameter per item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<String>,
    /// A key of a Kubernetes Secret in the server's namespace, read from
    /// `<secrets-dir>/<name>/<key>` (the operator mounts the Secret there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeyRef>,
    /// Text put before the secret's value, such as `Bearer `.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Headers only: a claim of the caller's validated token (`spec.auth`), by name or dotted
    /// path (`email`, `org.id`), so that the upstream learns who calls (with a
    /// `clientCredentials` token, say). A string, number or boolean; a call whose caller's
    /// token lacks it is refused, never sent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
}

/// A key of a Kubernetes Secret.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Name of the Secret.
    pub name: String,
    /// Key within the Secret.
    pub key: String,
}

/// A request body: exactly one of `json`, `form` or `text`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpBody {
    /// A JSON document built as a value, never by splicing text: an object
    /// `{"$arg": "path"}` (optionally with `"default"`) is replaced by that argument's JSON value
    /// (and dropped when absent without a default); any other string is a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::types::any_value")]
    pub json: Option<Value>,
    /// Form fields, sent as `application/x-www-form-urlencoded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Vec<HttpParam>>,
    /// Raw text; a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Content type (defaults: `application/json`, `application/x-www-form-urlencoded`,
    /// `text/plain; charset=utf-8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// Retry policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpRetry {
    /// Total attempts, the first included (2-5).
    pub attempts: u32,
    /// Wait before the first retry, doubled for each next one, in milliseconds (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
}

/// TLS settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpTls {
    /// PEM certificates of extra certificate authorities to trust (besides the public roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// How answers with a given status become a result. Templates see `args`, `status`, `headers`
/// (lower-case names), `body` (parsed JSON, else text) and `result` (the `jq` output).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpResponse {
    /// `200`, `404`, a class such as `2xx`, or `default`.
    pub status: String,
    /// jq program over the JSON body; its single output is the tool's `structuredContent` (for a
    /// resource: its text, as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jq: Option<String>,
    /// Tools only: content blocks (text fields are templates). Default: the structured result as
    /// JSON text, else the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ContentBlock>>,
    /// Resources only: the contents, a template. Default: the `jq` output as JSON, else the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tools only: whether the result is a tool error (default: true unless the status is 2xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}
