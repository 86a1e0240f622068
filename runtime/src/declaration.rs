//! The declaration: spec types, loading a manifest, and compiling it once for serving.

mod access;
mod compile;
mod jq;
mod json_body;
mod load;
mod secrets;
mod template;
mod types;
mod uri_template;
mod url_template;
mod value_template;

pub use access::{Access, AccessRules, Caller, MAX_LEEWAY_SECONDS, Verdict};
pub use compile::{
    BodyKind, CompileOptions, Compiled, CompiledBody, CompiledHttp, CompiledParam, CompiledPrompt,
    CompiledResource, CompiledResourceTemplate, CompiledResponse, CompiledTool, FieldError,
    InvalidDeclaration, ParamValue, Retry, StatusMatch, compile,
};
pub use jq::JqProgram;
pub use json_body::JsonBody;
pub use load::{API_VERSION, DEPLOYMENT_FIELDS, KIND, LoadError, Manifest, parse_manifest};
pub use secrets::{DEFAULT_SECRETS_DIR, Secret, read_secret, secret_path};
pub use template::{DEFAULT_FUEL, RenderError, TemplateRef, Templates, Text};
pub use types::*;
pub use uri_template::UriTemplate;
pub use url_template::{UrlTemplate, lookup, same_origin, scalar_text};
pub use value_template::ValueTemplate;
