//! Compiling `spec.views`: each view's name and path checked, and its patterns resolved once
//! into the set of items it publishes (one bit per compiled tool, resource, resource template
//! and prompt), so serving a view is a bit test. Which view a request came through is decided
//! by `mcp-http`; what it may see, by `mcp-server` (`authorize.rs`). Pure.

use super::Compiler;
use crate::glob::glob;
use crate::types::{Declaration, MAX_VIEW_PATH, MAX_VIEW_PATTERNS, MAX_VIEWS, View};
use std::collections::HashSet;

/// Path segments a view's path may not hold: the endpoints' own names and the runtime's
/// well-known and admin paths, so no view path can be mistaken for (or hide) one of them.
pub const RESERVED_SEGMENTS: &[&str] = &[
    "mcp",
    "sse",
    "messages",
    ".well-known",
    "healthz",
    "readyz",
    "metrics",
    "declaration",
    "server-card",
];

/// A set of item indices (one bit each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemSet(Vec<u64>);

impl ItemSet {
    fn with_len(len: usize) -> Self {
        Self(vec![0; len.div_ceil(64)])
    }

    fn insert(&mut self, index: usize) {
        if let Some(word) = self.0.get_mut(index / 64) {
            *word |= 1 << (index % 64);
        }
    }

    /// Whether `index` is in the set.
    pub fn contains(&self, index: usize) -> bool {
        self.0
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }
}

/// One view, compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledView {
    /// Its name.
    pub name: String,
    /// Its path (`/readers`), without a trailing `/`.
    pub path: String,
    /// Scopes every request through it needs, besides the server's and the item's.
    pub required_scopes: Vec<String>,
    /// Published tools (indices into `Compiled::tools`).
    pub tools: ItemSet,
    /// Published fixed resources (indices into `Compiled::resources`).
    pub resources: ItemSet,
    /// Published resource templates (indices into `Compiled::resource_templates`).
    pub resource_templates: ItemSet,
    /// Published prompts (indices into `Compiled::prompts`).
    pub prompts: ItemSet,
}

/// `spec.views`, compiled, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompiledViews {
    views: Vec<CompiledView>,
}

impl CompiledViews {
    /// Every view.
    pub fn all(&self) -> &[CompiledView] {
        &self.views
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// The view named `name`.
    pub fn get(&self, name: &str) -> Option<&CompiledView> {
        self.views.iter().find(|view| view.name == name)
    }

    /// The view whose endpoint `path` (below the path prefix) names, and the endpoint's path
    /// with the view's path taken off: `/readers/mcp` is `readers` and `/mcp`. `None` when
    /// `path` is no view's.
    pub fn route<'p>(&self, path: &'p str) -> Option<(&CompiledView, &'p str)> {
        self.views.iter().find_map(|view| {
            let rest = path.strip_prefix(view.path.as_str())?;
            rest.starts_with('/').then_some((view, rest))
        })
    }
}

impl Compiler<'_> {
    /// Checks `spec.views` and resolves each view's patterns against the declared items.
    pub(super) fn views(&mut self, decl: &Declaration) -> CompiledViews {
        if decl.views.len() > MAX_VIEWS {
            self.error(
                "spec.views",
                format!("declare at most {MAX_VIEWS} views (one per audience)"),
            );
            return CompiledViews::default();
        }
        self.unique(
            "view name",
            decl.views
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("spec.views[{i}].name"), v.name.as_str())),
        );
        let mut paths = HashSet::new();
        let mut views = Vec::new();
        for (i, view) in decl.views.iter().enumerate() {
            let at = format!("spec.views[{i}]");
            if let Err(message) = check_name(&view.name) {
                self.error(format!("{at}.name"), message);
            }
            let path = view.path.trim_end_matches('/');
            match check_path(&view.path) {
                Err(message) => self.error(format!("{at}.path"), message),
                Ok(()) if !paths.insert(path) => self.error(
                    format!("{at}.path"),
                    format!("duplicate view path `{path}`"),
                ),
                Ok(()) => {}
            }
            if view.tools.is_empty()
                && view.resources.is_empty()
                && view.resource_templates.is_empty()
                && view.prompts.is_empty()
            {
                self.error(
                    at.clone(),
                    "publishes nothing: name at least one tool, resource, resource template or prompt",
                );
            }
            views.push(self.view(&at, view, path, decl));
        }
        CompiledViews { views }
    }

    fn view(&mut self, at: &str, view: &View, path: &str, decl: &Declaration) -> CompiledView {
        let tools = self.patterns(
            &format!("{at}.tools"),
            "tool",
            &view.tools,
            &decl
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
        );
        let resources = self.patterns(
            &format!("{at}.resources"),
            "resource",
            &view.resources,
            &decl
                .resources
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
        );
        let resource_templates = self.patterns(
            &format!("{at}.resourceTemplates"),
            "resource template",
            &view.resource_templates,
            &decl
                .resource_templates
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
        );
        let prompts = self.patterns(
            &format!("{at}.prompts"),
            "prompt",
            &view.prompts,
            &decl
                .prompts
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>(),
        );
        CompiledView {
            name: view.name.clone(),
            path: path.to_owned(),
            required_scopes: view.required_scopes.clone(),
            tools,
            resources,
            resource_templates,
            prompts,
        }
    }

    /// The items of `names` some pattern matches; a pattern matching none is refused (a typo
    /// would silently leave an item out of the view).
    fn patterns(&mut self, at: &str, what: &str, patterns: &[String], names: &[&str]) -> ItemSet {
        let mut set = ItemSet::with_len(names.len());
        if patterns.len() > MAX_VIEW_PATTERNS {
            self.error(
                at,
                format!("at most {MAX_VIEW_PATTERNS} patterns (`*` matches many names)"),
            );
            return set;
        }
        for (i, pattern) in patterns.iter().enumerate() {
            let mut matched = false;
            for (index, name) in names.iter().enumerate() {
                if glob(pattern, name) {
                    set.insert(index);
                    matched = true;
                }
            }
            if !matched {
                self.error(
                    format!("{at}[{i}]"),
                    format!("`{pattern}` matches no {what}"),
                );
            }
        }
        set
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a view name (1-63 characters of a-z, 0-9 and `-`, starting with a letter)"
        ))
    }
}

/// A view path: `/` then segments of URL-safe characters that carry no meaning to a router
/// (the same set as the runtime's `--path-prefix`), none empty, `.`, `..` or reserved.
fn check_path(path: &str) -> Result<(), String> {
    let trimmed = path.trim_end_matches('/');
    if !trimmed.starts_with('/') || trimmed.len() > MAX_VIEW_PATH {
        return Err(format!(
            "`{path}` is not a view path such as /readers (a leading `/`, at most {MAX_VIEW_PATH} characters)"
        ));
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()+,;=@".contains(c);
    for segment in trimmed[1..].split('/') {
        if segment.is_empty() || !segment.chars().all(plain) {
            return Err(format!(
                "`{path}` is not a view path such as /readers (no empty segment, no `%`, `{{`, `}}`, `*`, `:`, `?` or `#`)"
            ));
        }
        if segment == "." || segment == ".." {
            return Err(format!("`{path}` has a `{segment}` segment"));
        }
        if RESERVED_SEGMENTS.contains(&segment) {
            return Err(format!(
                "`{path}` has a segment `{segment}`, which names an endpoint of the server"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_sets_hold_their_bits_only() {
        let mut set = ItemSet::with_len(130);
        set.insert(0);
        set.insert(64);
        set.insert(129);
        assert!(set.contains(0) && set.contains(64) && set.contains(129));
        assert!(!set.contains(1) && !set.contains(63) && !set.contains(128));
        assert!(!set.contains(1000), "past the end is outside");
    }

    #[test]
    fn paths_are_checked() {
        for good in ["/readers", "/a/b-c.d", "/ops/", "/x~y"] {
            assert!(check_path(good).is_ok(), "{good}");
        }
        for bad in [
            "readers",
            "/",
            "/a//b",
            "/a/../b",
            "/./a",
            "/mcp",
            "/a/sse",
            "/messages",
            "/.well-known",
            "/healthz",
            "/a%2e",
            "/{x}",
            "/a*",
            "/a:b",
            "/a?b",
        ] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
        assert!(check_path(&format!("/{}", "a".repeat(200))).is_err());
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("readers").is_ok());
        assert!(check_name("ops-2").is_ok());
        let long = "a".repeat(64);
        for bad in ["", "Readers", "2ops", "ops-", "a_b", long.as_str()] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_route_takes_the_view_path_off() {
        let view = |name: &str, path: &str| CompiledView {
            name: name.into(),
            path: path.into(),
            required_scopes: Vec::new(),
            tools: ItemSet::default(),
            resources: ItemSet::default(),
            resource_templates: ItemSet::default(),
            prompts: ItemSet::default(),
        };
        let views = CompiledViews {
            views: vec![view("readers", "/readers"), view("deep", "/teams/ops")],
        };
        let (found, rest) = views.route("/readers/mcp").unwrap();
        assert_eq!((found.name.as_str(), rest), ("readers", "/mcp"));
        let (found, rest) = views.route("/teams/ops/messages").unwrap();
        assert_eq!((found.name.as_str(), rest), ("deep", "/messages"));
        assert!(views.route("/readersx/mcp").is_none());
        assert!(views.route("/readers").is_none());
        assert!(views.route("/mcp").is_none());
    }
}
