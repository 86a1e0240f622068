//! The declaration: spec types, loading a manifest, and compiling it once for serving.

mod compile;
mod load;
mod template;
mod types;
mod uri_template;
mod value_template;

pub use compile::{
    CompileOptions, Compiled, CompiledPrompt, CompiledResource, CompiledResourceTemplate,
    CompiledTool, FieldError, InvalidDeclaration, compile,
};
pub use load::{
    API_VERSION, DEPLOYMENT_FIELDS, KIND, LoadError, Manifest, parse_manifest, read_manifest,
};
pub use template::{DEFAULT_FUEL, RenderError, Templates, Text};
pub use types::*;
pub use uri_template::UriTemplate;
pub use value_template::ValueTemplate;
