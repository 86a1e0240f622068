//! The declaration's identity: the runtime manifest as the operator renders it into a ConfigMap,
//! and the hash of that rendering. The operator stamps the hash into the manifest's annotations;
//! the runtime reports the hash it serves (`_meta` and a metric) so the operator can tell
//! whether pods serve the current declaration. Both sides call these functions, so a manifest
//! without a stamp (a user's own file) gets the hash the operator would have stamped. Pure.

use super::types::Declaration;
use serde::Serialize;
use std::collections::BTreeMap;

/// The API group of `MCPServer`.
pub const API_GROUP: &str = "kube-mcp.io";
/// The API group and version the operator renders and `import` writes: the CRD's storage version.
pub const API_VERSION: &str = "kube-mcp.io/v1alpha1";
/// Every version of `MCPServer` the CRD serves, the storage version first. They share one schema:
/// the CRD converts between them with `conversion: None`, which rewrites nothing but
/// `apiVersion`, so a manifest of any of them is read the same way. A version with another
/// schema needs its own types and a conversion webhook (CONTRIBUTING.md, "CRD compatibility").
pub const SERVED_VERSIONS: &[&str] = &["v1alpha1", "v1beta1"];
/// The kind the runtime serves.
pub const KIND: &str = "MCPServer";
/// The kind of a set of items that servers include (`spec.include`), in the same group and
/// versions.
pub const TOOLSET_KIND: &str = "MCPToolSet";
/// The kind that lets servers of other namespaces include a namespace's sets.
pub const GRANT_KIND: &str = "MCPToolSetGrant";

/// Annotation of the runtime manifest (and of its ConfigMap) holding the declaration's hash.
pub const HASH_ANNOTATION: &str = "kube-mcp.io/declaration-hash";

/// `_meta` key of the `server/discover` and `initialize` results under which the runtime reports
/// the declaration it serves: `{hash, tools, resources, resourceTemplates, prompts}`.
pub const SERVED_META: &str = "kube-mcp.io/declaration";

/// Longest hash accepted from a manifest's annotation (the operator's are 16 characters); it is
/// echoed in results and in a metric label, so it is bounded and plain.
pub const MAX_HASH_LEN: usize = 64;

/// The document the runtime reads: `apiVersion`, `kind`, `metadata` and the declaration.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeManifest<'a> {
    api_version: &'a str,
    kind: &'a str,
    metadata: RuntimeMetadata<'a>,
    spec: &'a Declaration,
}

#[derive(Serialize)]
struct RuntimeMetadata<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<&'static str, String>,
}

/// Renders the runtime manifest of server `name` serving `declaration`, with `annotations`.
pub fn render_manifest(
    name: &str,
    declaration: &Declaration,
    annotations: &BTreeMap<&'static str, String>,
) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(&RuntimeManifest {
        api_version: API_VERSION,
        kind: KIND,
        metadata: RuntimeMetadata { name, annotations },
        spec: declaration,
    })
}

/// A short stable hash of a rendered manifest: FNV-1a (64 bits) of its text, in hex. Not for
/// security: it tells versions of one server's declaration apart.
pub fn declaration_hash(rendered: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in rendered.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The hash of server `name` serving `declaration`: [`declaration_hash`] of its manifest
/// rendered without annotations (what the operator stamps).
pub fn hash_of(name: &str, declaration: &Declaration) -> Result<String, serde_yaml_ng::Error> {
    render_manifest(name, declaration, &BTreeMap::new()).map(|text| declaration_hash(&text))
}

/// Whether an annotation value is acceptable as a hash: 1 to [`MAX_HASH_LEN`] characters of
/// ASCII letters, digits, `-`, `_`, `.` and `:`.
pub fn valid_hash(value: &str) -> bool {
    (1..=MAX_HASH_LEN).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_manifest;

    #[test]
    fn the_hash_is_fnv1a_of_the_text() {
        // FNV-1a 64 reference values.
        assert_eq!(declaration_hash(""), "cbf29ce484222325");
        assert_eq!(declaration_hash("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn every_example_hashes_the_same_after_a_round_trip_through_the_rendered_manifest() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut paths = Vec::new();
        for dir in [
            "examples",
            "examples/issue-tracker",
            "tests/python/manifests",
        ] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                paths.push(entry.unwrap().path());
            }
        }
        let mut seen = 0;
        for path in paths {
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            // A file may hold the server's MCPToolSets too: the operator renders the resolved
            // declaration, as `read_bundle` makes it.
            let text = std::fs::read_to_string(&path).unwrap();
            let first = crate::read_bundle(&[(path.clone(), text)])
                .unwrap_or_else(|err| panic!("{path:?}: {err}"))
                .manifest;
            let stamped = hash_of(&first.name, &first.declaration).unwrap();
            let annotations = [(HASH_ANNOTATION, stamped.clone())].into();
            let rendered = render_manifest(&first.name, &first.declaration, &annotations).unwrap();
            let second = parse_manifest(&rendered, Default::default()).unwrap();
            assert_eq!(second.hash.as_deref(), Some(stamped.as_str()), "{path:?}");
            assert_eq!(
                hash_of(&second.name, &second.declaration).unwrap(),
                stamped,
                "{path:?}: the runtime would compute another hash than the operator stamps"
            );
            seen += 1;
        }
        assert!(seen >= 3, "only {seen} examples");
    }

    #[test]
    fn only_short_plain_hashes_are_valid() {
        assert!(valid_hash("00ff12ab34cd56ef"));
        assert!(valid_hash("sha256:abc-1.2_3"));
        for bad in ["", "a b", "x\ny", "{injected}", "\"q\"", &"f".repeat(65)] {
            assert!(!valid_hash(bad), "{bad:?}");
        }
    }
}
