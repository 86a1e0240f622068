//! Names: tool names from operationIds (else method and path) within MCP's tool-name rules,
//! argument names that URI templates and `$arg` paths can carry, and the server's name.
//! Collisions are suffixed deterministically, in spec order. Pure.

use std::collections::HashSet;

/// Longest description or title kept; longer text is cut (a spec may carry megabytes).
const MAX_TEXT: usize = 2_000;

/// Longest tool name MCP allows.
const MAX_TOOL_NAME: usize = 128;

/// Hands out unique names.
#[derive(Debug, Default)]
pub(super) struct Names {
    taken: HashSet<String>,
}

impl Names {
    /// Marks `name` as taken.
    #[cfg(test)]
    pub(super) fn reserve(&mut self, name: &str) {
        self.taken.insert(name.to_owned());
    }

    /// Whether `name` is still free.
    pub(super) fn is_free(&self, name: &str) -> bool {
        !self.taken.contains(name)
    }

    /// A tool name for an operation: its operationId, else `method_path`, sanitised.
    pub(super) fn tool(&mut self, operation_id: Option<&str>, method: &str, path: &str) -> String {
        let source = match operation_id {
            Some(id) if !id.trim().is_empty() => id.to_owned(),
            _ => format!("{method}_{path}"),
        };
        let mut base = String::new();
        for c in source.chars() {
            let c = if c.is_ascii_alphanumeric() || "-.".contains(c) {
                c
            } else {
                '_'
            };
            if c == '_' && (base.is_empty() || base.ends_with('_')) {
                continue;
            }
            base.push(c);
        }
        let mut base = base.trim_end_matches('_').to_owned();
        if base.is_empty() {
            base = method.to_owned();
        }
        // Room for a collision suffix.
        base.truncate(MAX_TOOL_NAME - 8);
        self.unique(&base)
    }

    /// An argument name for a parameter or body property `wanted` found in `location`
    /// (`path`, `query`, `header`, `cookie`, `body`): letters, digits and `_` only, so URI
    /// templates and `$arg` paths can name it.
    pub(super) fn arg(&mut self, wanted: &str, location: &str) -> String {
        let base = arg_chars(wanted);
        if !self.taken.contains(&base) {
            self.taken.insert(base.clone());
            return base;
        }
        self.unique(&format!("{location}_{base}"))
    }

    fn unique(&mut self, base: &str) -> String {
        let mut name = base.to_owned();
        let mut n = 1;
        while self.taken.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.taken.insert(name.clone());
        name
    }
}

/// `wanted` with every character an argument name cannot hold replaced by `_`.
pub(super) fn arg_chars(wanted: &str) -> String {
    let mut name: String = wanted
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// `text` cut to a bounded length on a character boundary.
pub(super) fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_TEXT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// A Kubernetes object name (DNS-1123 label) from a title such as `Swagger Petstore`.
pub(super) fn server_name(title: &str) -> String {
    let mut name = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if c == '-' && (name.is_empty() || name.ends_with('-')) {
            continue;
        }
        name.push(c);
    }
    name.truncate(63);
    let name = name.trim_end_matches('-').to_owned();
    if name.is_empty() {
        "imported-api".into()
    } else {
        name
    }
}

/// Whether `name` is a valid DNS-1123 label.
pub(super) fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_mcp_rules_and_collisions_get_suffixes() {
        let mut names = Names::default();
        assert_eq!(names.tool(Some("listPets"), "get", "/pets"), "listPets");
        assert_eq!(
            names.tool(None, "get", "/pets/{petId}/toys"),
            "get_pets_petId_toys"
        );
        assert_eq!(names.tool(Some("list pets/✓"), "get", "/"), "list_pets");
        assert_eq!(names.tool(Some("listPets"), "get", "/other"), "listPets_2");
        assert_eq!(names.tool(Some("listPets"), "get", "/third"), "listPets_3");
        assert_eq!(names.tool(Some("  "), "delete", "/"), "delete");
        let long = "x".repeat(300);
        assert_eq!(names.tool(Some(&long), "get", "/").len(), 120);
    }

    #[test]
    fn argument_names_are_template_safe_and_unique() {
        let mut names = Names::default();
        assert_eq!(names.arg("id", "path"), "id");
        assert_eq!(names.arg("id", "query"), "query_id");
        assert_eq!(names.arg("X-Request-Id", "header"), "X_Request_Id");
        assert_eq!(names.arg("filter[state]", "query"), "filter_state_");
        assert_eq!(names.arg("2fa", "query"), "_2fa");
        assert_eq!(names.arg("id", "query"), "query_id_2");
        assert_eq!(names.arg("", "body"), "_");
    }

    #[test]
    fn long_text_is_clipped() {
        assert_eq!(clip(" short "), "short");
        let clipped = clip(&"é".repeat(10_000_000));
        assert_eq!(clipped.chars().count(), 2_001);
    }

    #[test]
    fn server_names_are_dns_labels() {
        assert_eq!(
            server_name("Swagger Petstore - OpenAPI 3.0"),
            "swagger-petstore-openapi-3-0"
        );
        assert_eq!(server_name("!!!"), "imported-api");
        assert!(valid_server_name("items-api"));
        assert!(!valid_server_name("Items"));
        assert!(!valid_server_name("-a"));
    }
}
