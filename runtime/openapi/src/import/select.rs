//! Operations of a spec in document order, and the selection: include/exclude filters (tag,
//! path glob, operationId) and the methods imported, read-only unless asked otherwise; each
//! option checked against the spec, so a typo is an error instead of an empty or a wider import.
//! Pure.

use super::load::Documents;
use super::{ImportError, ImportOptions};
use mcp_declaration::glob;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Methods of a path item, in the order OpenAPI lists them.
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Methods the importer can turn into tools (`http` has no OPTIONS or TRACE).
pub const IMPORTABLE_METHODS: &[&str] = &["get", "head", "post", "put", "patch", "delete"];

/// Methods imported when neither `--methods` nor `--operation` says otherwise: a first import
/// gives a model read access only, and every write tool is a choice someone made.
pub const READ_ONLY_METHODS: &[&str] = &["get", "head"];

/// Most names listed in an error about a name the spec lacks.
const MAX_LISTED: usize = 40;

/// One `--methods` item: a method (any case) or `all`.
pub fn parse_methods(text: &str) -> Result<&'static [&'static str], String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(IMPORTABLE_METHODS);
    }
    IMPORTABLE_METHODS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(text))
        .map(|i| &IMPORTABLE_METHODS[i..=i])
        .ok_or_else(|| {
            format!("`{text}` is not a method the importer imports: expected GET, HEAD, POST, PUT, PATCH, DELETE or all")
        })
}

/// The methods `options` import, and whether that is the read-only default.
pub(super) fn methods(options: &ImportOptions) -> (Vec<&'static str>, bool) {
    match &options.methods {
        Some(methods) => (methods.clone(), false),
        // Naming operations is choosing them, writes included.
        None if !options.include_operations.is_empty() => (IMPORTABLE_METHODS.to_vec(), false),
        None => (READ_ONLY_METHODS.to_vec(), true),
    }
}

/// One operation of the spec.
#[derive(Debug)]
pub(super) struct Operation<'a> {
    /// Lower-case method.
    pub method: &'static str,
    /// The path as written, such as `/items/{id}`.
    pub path: &'a str,
    /// The path item (for its shared parameters) and the file it is in.
    pub item: &'a Value,
    /// The file of the path item.
    pub file: PathBuf,
    /// The operation object.
    pub op: &'a Value,
}

impl Operation<'_> {
    /// `operationId`, when present.
    pub(super) fn id(&self) -> Option<&str> {
        self.op.get("operationId").and_then(Value::as_str)
    }

    /// `GET /items/{id}`.
    pub(super) fn label(&self) -> String {
        let id = self.id().map(|id| format!(" ({id})")).unwrap_or_default();
        format!("{} {}{id}", self.method.to_uppercase(), self.path)
    }

    /// The operation's tags, in the order the spec lists them.
    pub(super) fn tags(&self) -> impl Iterator<Item = &str> {
        self.op
            .get("tags")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }
}

/// Every operation, in document order.
pub(super) fn operations(docs: &Documents) -> Result<Vec<Operation<'_>>, ImportError> {
    let main = docs.main_location().file;
    let Some(paths) = docs.root().get("paths") else {
        return Ok(Vec::new());
    };
    let paths = paths
        .as_object()
        .ok_or_else(|| ImportError::Spec("`paths` is not an object".into()))?;
    let mut out = Vec::new();
    for (path, item) in paths {
        if path.starts_with("x-") {
            continue;
        }
        let (file, item) = docs.deref(&main, item)?;
        for &method in METHODS {
            if let Some(op) = item.get(method).filter(|op| op.is_object()) {
                out.push(Operation {
                    method,
                    path,
                    item,
                    file: file.clone(),
                    op,
                });
            }
        }
    }
    Ok(out)
}

/// Whether the include/exclude options keep `op`, methods aside.
pub(super) fn selected(op: &Operation, options: &ImportOptions) -> bool {
    let tags: Vec<&str> = op.tags().collect();
    let has_tag = |list: &[String]| list.iter().any(|t| tags.contains(&t.as_str()));
    let path_in = |list: &[String]| list.iter().any(|g| glob(g, op.path));
    let id_in = |list: &[String]| op.id().is_some_and(|id| list.iter().any(|i| i == id));
    (options.include_tags.is_empty() || has_tag(&options.include_tags))
        && (options.include_paths.is_empty() || path_in(&options.include_paths))
        && (options.include_operations.is_empty() || id_in(&options.include_operations))
        && !has_tag(&options.exclude_tags)
        && !path_in(&options.exclude_paths)
        && !id_in(&options.exclude_operations)
}

/// Checks every selection option against the spec's operations: each tag, glob and
/// operationId must name something, an operation named with `--operation` must not be left
/// out by `--methods`, and the selection must keep at least one operation.
pub(super) fn check(ops: &[Operation], options: &ImportOptions) -> Result<(), ImportError> {
    let tags: BTreeSet<&str> = ops.iter().flat_map(Operation::tags).collect();
    let ids: BTreeSet<&str> = ops.iter().filter_map(Operation::id).collect();
    let listed = |names: &BTreeSet<&str>| {
        let shown: Vec<&str> = names.iter().copied().take(MAX_LISTED).collect();
        let more = names.len().saturating_sub(MAX_LISTED);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!("{}{more}", shown.join(", "))
    };
    let problem = |message: String| Err(ImportError::Option(message));
    for (flag, list) in [
        ("--include-tag", &options.include_tags),
        ("--exclude-tag", &options.exclude_tags),
    ] {
        if let Some(tag) = list.iter().find(|t| !tags.contains(t.as_str())) {
            return problem(format!(
                "{flag} `{tag}`: no operation has this tag (the spec's tags: {})",
                listed(&tags)
            ));
        }
    }
    for (flag, list) in [
        ("--include-path", &options.include_paths),
        ("--exclude-path", &options.exclude_paths),
    ] {
        if let Some(pattern) = list.iter().find(|g| !ops.iter().any(|op| glob(g, op.path))) {
            return problem(format!(
                "{flag} `{pattern}`: matches no path of the spec (`*` matches anything, `/` included)"
            ));
        }
    }
    for (flag, list) in [
        ("--operation", &options.include_operations),
        ("--exclude-operation", &options.exclude_operations),
    ] {
        if let Some(id) = list.iter().find(|id| !ids.contains(id.as_str())) {
            return problem(format!(
                "{flag} `{id}`: no operation has this operationId ({} operations have one)",
                ids.len()
            ));
        }
    }
    let (methods, read_only_default) = methods(options);
    let chosen = |op: &&Operation| {
        op.id()
            .is_some_and(|id| options.include_operations.iter().any(|i| i == id))
    };
    if let Some(op) = ops
        .iter()
        .filter(chosen)
        .find(|op| !methods.contains(&op.method))
    {
        return problem(format!(
            "--operation `{}` is a {} request, which --methods leaves out",
            op.id().unwrap_or_default(),
            op.method.to_uppercase()
        ));
    }
    let kept = ops
        .iter()
        .filter(|op| selected(op, options) && methods.contains(&op.method))
        .count();
    if kept == 0 && !ops.is_empty() {
        let hint = if read_only_default {
            ": only GET and HEAD are imported unless --methods names others (or `all`)"
        } else {
            ""
        };
        return problem(format!(
            "the selection keeps none of the spec's {} operations{hint}",
            ops.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn globs_match_whole_paths() {
        assert!(glob("/pets*", "/pets/{id}"));
        assert!(glob("*/admin/*", "/v1/admin/users"));
        assert!(!glob("/pets", "/pets/{id}"));
        assert!(glob("/pets/*/toys", "/pets/{id}/toys"));
        assert!(!glob("/pets/*/toys", "/pets/{id}/food"));
    }

    #[test]
    fn operations_come_in_document_order_and_filters_apply() {
        let docs = Documents::parse(
            "openapi: 3.0.3\npaths:\n  /b:\n    post: {operationId: makeB, tags: [write]}\n    \
             get: {operationId: getB, tags: [read]}\n  /a:\n    get: {operationId: getA}\n    \
             parameters: []\n",
            Path::new("."),
        )
        .unwrap();
        let ops = operations(&docs).unwrap();
        let labels: Vec<String> = ops.iter().map(Operation::label).collect();
        assert_eq!(
            labels,
            ["GET /b (getB)", "POST /b (makeB)", "GET /a (getA)"]
        );
        let keep = |options: ImportOptions| -> Vec<&str> {
            ops.iter()
                .filter(|op| selected(op, &options))
                .filter_map(Operation::id)
                .collect()
        };
        let tags = ImportOptions {
            include_tags: vec!["read".into()],
            ..Default::default()
        };
        assert_eq!(keep(tags), ["getB"]);
        let paths = ImportOptions {
            exclude_paths: vec!["/b*".into()],
            ..Default::default()
        };
        assert_eq!(keep(paths), ["getA"]);
        let ids = ImportOptions {
            include_operations: vec!["makeB".into(), "getA".into()],
            exclude_tags: vec!["write".into()],
            ..Default::default()
        };
        assert_eq!(keep(ids), ["getA"]);
    }
}
