//! `mcp-runtime import openapi`: turns an OpenAPI 3.0/3.1 or Swagger 2.0 description into an
//! `MCPServer` manifest whose tools call the API through the `http` backend. The output is
//! compiled by the runtime's own compiler before it is returned; whatever cannot be imported is
//! skipped with a reason in the summary. Reads the spec file and the files its `$ref`s name
//! (through [`load`]); everything else is pure.

mod body;
mod cli;
mod emit;
mod load;
mod naming;
mod operation;
mod params;
mod responses;
mod schema;
mod security;
mod select;
mod shared;
mod split;
mod summary;

pub use cli::{ImportArgs, ImportCommand, run_cli};
pub use load::{Documents, MAX_SPEC_BYTES};
pub use select::{IMPORTABLE_METHODS, READ_ONLY_METHODS, parse_methods};
pub use split::{API_LABEL, MAX_OBJECT_BYTES, SERVER_FILE, SetFile};
pub use summary::{Skipped, Summary};

use mcp_declaration::SecretKeyRef;
use std::path::PathBuf;

/// What to import and how.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// `metadata.name` (default: from `info.title`).
    pub name: Option<String>,
    /// Base URL of the API, replacing the spec's `servers` (or Swagger 2.0 `host`).
    pub base_url: Option<String>,
    /// Only operations with one of these tags (empty: all).
    pub include_tags: Vec<String>,
    /// No operation with one of these tags.
    pub exclude_tags: Vec<String>,
    /// Only operations whose path matches one of these globs (`*` matches anything).
    pub include_paths: Vec<String>,
    /// No operation whose path matches one of these globs.
    pub exclude_paths: Vec<String>,
    /// Only these operationIds (`--operation`); naming operations imports them whatever
    /// their method, unless `methods` is set.
    pub include_operations: Vec<String>,
    /// Not these operationIds.
    pub exclude_operations: Vec<String>,
    /// Only operations of these methods (lower-case; see [`IMPORTABLE_METHODS`]). `None`: all
    /// of them when `include_operations` names operations, else [`READ_ONLY_METHODS`].
    pub methods: Option<Vec<&'static str>>,
    /// Most tools (and resources) emitted; later operations are skipped.
    pub max_tools: Option<usize>,
    /// Security scheme name -> the Secret key holding its credential.
    pub secrets: Vec<(String, SecretKeyRef)>,
    /// Parameterless GETs become resources, GETs with only path parameters resource templates.
    pub resources: bool,
    /// Any skipped operation is an error.
    pub strict: bool,
    /// `--split-by-tag`: the manifest is a server without items that includes one
    /// `MCPToolSet` per first tag ([`Imported::sets`]).
    pub split_by_tag: bool,
}

/// The imported manifest and what happened to every operation.
#[derive(Debug)]
pub struct Imported {
    /// The manifest: summary comments, then the YAML document.
    pub yaml: String,
    /// What was imported and what was skipped, and why.
    pub summary: Summary,
    /// With `split_by_tag`, the sets `yaml` includes (each at most [`MAX_OBJECT_BYTES`]);
    /// else empty.
    pub sets: Vec<SetFile>,
}

/// Why nothing could be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The spec or a file it references cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The spec is not an OpenAPI document the importer understands.
    #[error("{0}")]
    Spec(String),
    /// A `$ref` cannot be resolved.
    #[error("cannot resolve $ref `{reference}`: {message}")]
    Ref {
        /// The reference as written.
        reference: String,
        /// Why.
        message: String,
    },
    /// An option is wrong for this spec.
    #[error("{0}")]
    Option(String),
    /// `--strict` and something was skipped.
    #[error("--strict: {0}")]
    Strict(String),
    /// An object to write is larger than a cluster stores.
    #[error(
        "{set} would be {bytes} bytes, over the {MAX_OBJECT_BYTES} bytes one object may take: \
         narrow the selection (--include-tag, --exclude-path, --operation ...)"
    )]
    TooLarge {
        /// The object's name.
        set: String,
        /// Its size as YAML.
        bytes: usize,
    },
    /// The generated manifest does not compile (a defect of the importer).
    #[error("the generated manifest does not compile: {0}")]
    Compile(String),
}

/// Imports the spec loaded in `docs`.
pub fn import_openapi(docs: &Documents, options: &ImportOptions) -> Result<Imported, ImportError> {
    emit::import(docs, options)
}

#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;
