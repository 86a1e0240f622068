//! Reading a manifest: an `MCPServer` as written for `kubectl apply`, or the config the operator
//! renders (the same shape holding only the served fields). Pure: the caller reads the file
//! (`reload::load`).

use super::stamp::{API_GROUP, HASH_ANNOTATION, KIND, MAX_HASH_LEN, SERVED_VERSIONS, valid_hash};
use super::types::Declaration;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;

/// Spec fields the operator reads and the runtime ignores (`resources` is MCP's, so the
/// container's CPU and memory are `containerResources`). The operator's tests check that this
/// list matches its own deployment fields.
pub const DEPLOYMENT_FIELDS: &[&str] = &[
    "replicas",
    "image",
    "imagePullPolicy",
    "containerResources",
    "nodeSelector",
    "tolerations",
    "affinity",
    "env",
    "ingress",
    "service",
    "sessions",
    "logLevel",
    "secrets",
    "exposure",
    "gateway",
    "networkPolicy",
    "podAnnotations",
    "podLabels",
    "serviceAccountName",
    "imagePullSecrets",
    "priorityClassName",
    "topologySpreadConstraints",
    "suspend",
    "telemetry",
    "registry",
];

/// A parsed manifest: the server's name and what it declares.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// `metadata.name`, the default `serverInfo.name`.
    pub name: String,
    /// The served part of `spec`.
    pub declaration: Declaration,
    /// Directory that relative `file` paths are resolved against.
    pub base_dir: PathBuf,
    /// The hash stamped into `metadata.annotations` (`HASH_ANNOTATION`) by the operator; `None`
    /// for a manifest without one (compiling then computes the same hash from the declaration).
    pub hash: Option<String>,
}

/// Why a manifest could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The text is not YAML of the expected shape.
    #[error("{path}: {message}")]
    Shape {
        /// Where in the document, such as `spec.tools[2].content[0]`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// `spec.include` cannot be served: every problem found.
    #[error("{}", .0.iter().map(|e| e.error.to_string()).collect::<Vec<_>>().join("; "))]
    Include(Vec<super::include::IncludeError>),
}

impl LoadError {
    /// Each problem at its field.
    pub fn into_field_errors(self) -> Vec<crate::FieldError> {
        match self {
            Self::Shape { path, message } => vec![crate::FieldError { path, message }],
            Self::Include(errors) => errors.into_iter().map(|e| e.error).collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Envelope {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) metadata: Metadata,
    #[serde(default)]
    pub(crate) spec: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
pub(crate) struct Metadata {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    #[serde(default)]
    pub(crate) labels: std::collections::BTreeMap<String, String>,
    /// Only [`HASH_ANNOTATION`] is read; other annotations may hold anything.
    #[serde(default)]
    annotations: serde_json::Map<String, Value>,
}

/// The stamped hash, if any: a plain string of at most [`MAX_HASH_LEN`] characters.
fn stamped_hash(metadata: &Metadata) -> Result<Option<String>, LoadError> {
    let Some(value) = metadata.annotations.get(HASH_ANNOTATION) else {
        return Ok(None);
    };
    match value.as_str() {
        Some(hash) if valid_hash(hash) => Ok(Some(hash.to_owned())),
        _ => Err(LoadError::Shape {
            path: format!("metadata.annotations[\"{HASH_ANNOTATION}\"]"),
            message: format!("expected 1 to {MAX_HASH_LEN} letters, digits, `-`, `_`, `.` or `:`"),
        }),
    }
}

/// Whether `api_version` is `kube-mcp.io/` and a served version.
pub(crate) fn served_api_version(api_version: &str) -> bool {
    api_version
        .strip_prefix(API_GROUP)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|version| SERVED_VERSIONS.contains(&version))
}

/// The served `apiVersion`s, for messages.
pub(crate) fn served_api_versions() -> String {
    let served: Vec<String> = SERVED_VERSIONS
        .iter()
        .map(|version| format!("{API_GROUP}/{version}"))
        .collect();
    served.join(" or ")
}

/// Parses manifest text. Unknown fields are errors (a typo must not silently drop a tool), except
/// the deployment fields in [`DEPLOYMENT_FIELDS`].
pub fn parse_manifest(text: &str, base_dir: PathBuf) -> Result<Manifest, LoadError> {
    // Aliases are expanded under a budget: a small manifest cannot stand for a huge one.
    let document = super::bounded_yaml::parse(text).map_err(|err| LoadError::Shape {
        path: "manifest".into(),
        message: err.to_string(),
    })?;
    let envelope = envelope(document)?;
    if !served_api_version(&envelope.api_version) || envelope.kind != KIND {
        return Err(LoadError::Shape {
            path: "manifest".into(),
            message: format!(
                "expected apiVersion {} and kind {KIND}, found {} {}",
                served_api_versions(),
                envelope.api_version,
                envelope.kind
            ),
        });
    }
    server_manifest(envelope, base_dir)
}

/// A document's `apiVersion`, `kind`, `metadata` and `spec`.
pub(crate) fn envelope(document: Value) -> Result<Envelope, LoadError> {
    serde_json::from_value(document).map_err(|err| LoadError::Shape {
        path: "manifest".into(),
        message: err.to_string(),
    })
}

/// The manifest of an `MCPServer` document.
pub(crate) fn server_manifest(
    envelope: Envelope,
    base_dir: PathBuf,
) -> Result<Manifest, LoadError> {
    let hash = stamped_hash(&envelope.metadata)?;
    let mut spec = envelope.spec;
    spec.retain(|key, _| !DEPLOYMENT_FIELDS.contains(&key.as_str()));
    let declaration = declaration_from_value(Value::Object(spec))?;
    Ok(Manifest {
        name: envelope.metadata.name,
        declaration,
        base_dir,
        hash,
    })
}

/// Deserializes a declaration, naming the path of the first wrong or unknown field.
pub(crate) fn declaration_from_value(spec: Value) -> Result<Declaration, LoadError> {
    spec_from_value(spec)
}

/// Deserializes (part of) an `MCPServer` spec, naming the path of the first wrong or unknown
/// field as `spec.…`: an unknown field is an error, never dropped (it may be a typo, or a field
/// of a newer version whose meaning this one would silently lose).
pub fn spec_from_value<T: DeserializeOwned>(spec: Value) -> Result<T, LoadError> {
    let mut unknown = Vec::new();
    let mut record = |path: serde_ignored::Path| unknown.push(ignored_path(&path));
    let tracked = serde_ignored::Deserializer::new(spec, &mut record);
    let typed: T = serde_path_to_error::deserialize(tracked).map_err(|err| LoadError::Shape {
        path: spec_path(&err.path().to_string()),
        message: err.into_inner().to_string(),
    })?;
    if let Some(first) = unknown.first() {
        return Err(LoadError::Shape {
            path: spec_path(first),
            message: "unknown field".into(),
        });
    }
    Ok(typed)
}

/// Writes an ignored field's path in the same form as `serde_path_to_error`: `tools[1].name`.
fn ignored_path(path: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", ignored_path(parent)),
        Path::Map { parent, key } => match ignored_path(parent) {
            prefix if prefix.is_empty() => key.clone(),
            prefix => format!("{prefix}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}

/// `tools[2].content` -> `spec.tools[2].content`, the path as a manifest author sees it.
fn spec_path(inner: &str) -> String {
    if inner.is_empty() || inner == "." {
        "spec".into()
    } else {
        format!("spec.{inner}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, LoadError> {
        parse_manifest(text, PathBuf::new())
    }

    #[test]
    fn reads_an_mcpserver_and_ignores_deployment_fields() {
        let manifest = parse(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: weather}\n\
             spec:\n  replicas: 2\n  ingress: {host: x}\n  tools:\n  - name: greet\n    \
             content: [{type: text, text: hi}]\n",
        )
        .unwrap();
        assert_eq!(manifest.name, "weather");
        assert_eq!(manifest.declaration.tools[0].name, "greet");
    }

    #[test]
    fn names_the_path_of_an_unknown_field() {
        let err = parse(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: w}\n\
             spec:\n  tools:\n  - name: a\n    content: []\n  - name: b\n    contnet: []\n",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "spec.tools[1].contnet: unknown field");
    }

    #[test]
    fn names_the_path_of_a_wrong_content_type() {
        let err = parse(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {name: w}\n\
             spec:\n  tools:\n  - name: a\n    content: [{type: video, text: x}]\n",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("spec.tools[0].content[0].type: unknown variant `video`"),
            "{err}"
        );
    }

    #[test]
    fn reads_the_stamped_hash_and_refuses_a_malformed_one() {
        let manifest = |annotations: &str| {
            parse(&format!(
                "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\n\
                 metadata: {{name: w, annotations: {{{annotations}}}}}\nspec: {{}}\n"
            ))
        };
        assert_eq!(manifest("").unwrap().hash, None);
        assert_eq!(manifest("other: 1").unwrap().hash, None);
        assert_eq!(
            manifest("kube-mcp.io/declaration-hash: 00ff12ab34cd56ef")
                .unwrap()
                .hash
                .as_deref(),
            Some("00ff12ab34cd56ef")
        );
        for bad in ["7", "'a b'", "'{x}'", "[a]"] {
            let err = manifest(&format!("kube-mcp.io/declaration-hash: {bad}")).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("metadata.annotations[\"kube-mcp.io/declaration-hash\"]: "),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn refuses_another_kind() {
        let err = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w}\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("expected apiVersion kube-mcp.io/v1alpha1 or kube-mcp.io/v1beta1"),
            "{err}"
        );
        for other in [
            "kube-mcp.io/v2",
            "kube-mcp.iov1beta1",
            "example.com/v1beta1",
        ] {
            let text = format!("apiVersion: {other}\nkind: MCPServer\nmetadata: {{name: w}}\n");
            assert!(parse(&text).is_err(), "{other}");
        }
    }

    #[test]
    fn reads_every_served_version_the_same() {
        let declared = |version: &str| {
            parse(&format!(
                "apiVersion: kube-mcp.io/{version}\nkind: MCPServer\nmetadata: {{name: w}}\n\
                 spec: {{tools: [{{name: t, content: [{{type: text, text: hi}}]}}]}}\n"
            ))
            .unwrap()
            .declaration
        };
        assert_eq!(declared("v1alpha1"), declared("v1beta1"));
    }
}
