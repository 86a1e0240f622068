//! The declaration: spec types, loading a manifest, and compiling it once for serving.

#![warn(missing_docs, unreachable_pub)]

mod access;
mod auth_uri;
mod bounded_yaml;
mod bundle;
mod cluster_rules;
mod compile;
mod field_error;
mod files;
mod glob;
mod include;
mod jq;
mod json_body;
mod link_local;
mod load;
mod manifest_files;
mod resource_uri;
mod secrets;
mod service_account_tokens;
mod stamp;
mod template;
mod transports;
mod types;
mod upstream_url;
mod value_template;

pub use access::{Access, AccessRules, Caller, MAX_LEEWAY_SECONDS, Verdict};
pub use auth_uri::{
    audience_matches, canonical_audience, canonical_resource, is_loopback, trusted_url,
};
pub use bounded_yaml::{parse as parse_yaml_bounded, parse_all as parse_yaml_documents_bounded};
pub use bundle::{Bundle, DEFAULT_NAMESPACE, read_bundle};
pub use cluster_rules::cluster_problems;
pub use compile::{
    AsyncOutcome, BodyKind, CONFIRM_KEY, ClientAuth, CompileOptions, Compiled, CompiledApproval,
    CompiledAssertion, CompiledAsync, CompiledAuth, CompiledBody, CompiledDiscovery, CompiledField,
    CompiledHttp, CompiledInteraction, CompiledLimit, CompiledLimits, CompiledLog, CompiledParam,
    CompiledProgress, CompiledPrompt, CompiledResource, CompiledResourceTemplate, CompiledResponse,
    CompiledSample, CompiledTool, CompiledToolUi, CompiledUrlStep, CompiledView, CompiledViews,
    DEFAULT_APPROVAL_TTL_MS, DEFAULT_SEARCH_LIMIT, DESCRIBE_TOOLS, Grant, ItemSet,
    MAX_APPROVAL_TTL_MS, MAX_DESCRIBE_NAMES, MAX_QUERY_CHARS, MAX_QUERY_TOKENS, MAX_SEARCH_LIMIT,
    MAX_SHARED_SCHEMAS, MAX_TOOL_TOKENS, MIN_APPROVAL_TTL_MS, MetaTool, PARAM_HEADER_PREFIX,
    ParamHeader, ParamKind, ParamValue, RESERVED_HEADERS, RESERVED_SEGMENTS, ROOTS_KEY, Rate,
    ResolvedUri, Retry, SAMPLE_KEY, SEARCH_TOOLS, SearchIndex, StatusMatch, StatusUrl, UriItem,
    X_MCP_HEADER, compile, valid_param_header_name,
};
pub use field_error::{FieldError, InvalidDeclaration};
pub use files::{MAX_FILE_BYTES, read_regular, read_within};
pub use glob::glob;
pub use include::{
    IncludeError, IncludeProblem, IncludedSet, Resolved, ToolSet, ToolSetGrant, resolve_includes,
};
pub use jq::JqProgram;
pub use json_body::JsonBody;
pub use link_local::{LINK_LOCAL_REFUSED, is_link_local, literal_link_local};
pub use load::{DEPLOYMENT_FIELDS, LoadError, Manifest, parse_manifest, spec_from_value};
pub use manifest_files::{MAX_MANIFEST_FILES, manifest_files, manifest_text, read_manifest};
pub use resource_uri::{UriTemplate, canonical as canonical_uri};
pub use secrets::{DEFAULT_SECRETS_DIR, Secret, read_secret, secret_path};
pub use service_account_tokens::{
    DEFAULT_SERVICE_ACCOUNT_TOKENS_DIR, MAX_SERVICE_ACCOUNT_AUDIENCE_BYTES,
    SERVICE_ACCOUNT_TOKEN_FILE, service_account_token_path, token_dir_name,
};
pub use stamp::{
    API_GROUP, API_VERSION, GRANT_KIND, HASH_ANNOTATION, KIND, MAX_HASH_LEN, SERVED_META,
    SERVED_VERSIONS, TOOLSET_KIND, declaration_hash, hash_of, render_manifest, valid_hash,
};
pub use template::{DEFAULT_FUEL, RenderError, TemplateRef, Templates, Text};
pub use transports::Transports;
pub use types::*;
pub use upstream_url::{UrlTemplate, lookup, same_origin, scalar_text};
pub use value_template::ValueTemplate;
