//! Operations of a spec in document order, and the include/exclude filters (tag, path glob,
//! operationId). Pure.

use super::load::Documents;
use super::{ImportError, ImportOptions};
use serde_json::Value;
use std::path::PathBuf;

/// Methods of a path item, in the order OpenAPI lists them.
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

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

    fn tags(&self) -> impl Iterator<Item = &str> {
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

/// Whether the include/exclude options keep `op`.
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

/// Glob match where `*` matches any run of characters (`/` included) and everything else
/// matches itself.
pub(super) fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
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
