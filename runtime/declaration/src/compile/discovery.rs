//! Compiling `spec.discovery`: the pinned tools checked and resolved to indices, declared tools
//! that would shadow a meta tool refused, the meta tools' `tools/list` entries and the search
//! index built once. What the meta tools answer is decided in `mcp-server` (`discovery.rs`).
//! Pure.

use super::search_index::SearchIndex;
use super::{CompiledTool, Compiler};
use crate::types::{Discovery, DiscoveryMode, MAX_PINNED, Tool};
use serde_json::{Value, json};

/// Name of the meta tool that searches the tools.
pub const SEARCH_TOOLS: &str = "search_tools";
/// Name of the meta tool that returns tools' full definitions.
pub const DESCRIBE_TOOLS: &str = "describe_tools";
/// Results `search_tools` returns when the call names no `limit`: enough to choose from, few
/// enough that the answer stays a small part of a model's context.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
/// Most results one `search_tools` call returns: more is a listing, which search mode avoids.
pub const MAX_SEARCH_LIMIT: usize = 50;
/// Longest `query`, in characters: a few keywords, not a document (only the first
/// `MAX_QUERY_TOKENS` tokens count anyway).
pub const MAX_QUERY_CHARS: usize = 512;
/// Most names one `describe_tools` call takes: full definitions with their schemas can be large,
/// and a model picks among a few.
pub const MAX_DESCRIBE_NAMES: usize = 20;

/// One of the meta tools of search mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaTool {
    /// `search_tools`.
    Search,
    /// `describe_tools`.
    Describe,
}

impl MetaTool {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Search => SEARCH_TOOLS,
            Self::Describe => DESCRIBE_TOOLS,
        }
    }
}

/// `spec.discovery`, compiled.
#[derive(Debug, Default)]
pub struct CompiledDiscovery {
    /// The mode.
    pub mode: DiscoveryMode,
    /// Pinned tools, as indices into `Compiled::tools` in declaration order.
    pub pinned: Vec<usize>,
    /// The meta tools' `tools/list` entries (`search_tools`, `describe_tools`); empty in `full`
    /// mode.
    pub meta: Vec<Value>,
    /// The index `search_tools` ranks with (empty in `full` mode, which never searches).
    pub index: SearchIndex,
}

impl CompiledDiscovery {
    /// The meta tool `name` names, in search mode.
    pub fn meta_tool(&self, name: &str) -> Option<MetaTool> {
        if self.mode != DiscoveryMode::Search {
            return None;
        }
        [MetaTool::Search, MetaTool::Describe]
            .into_iter()
            .find(|meta| meta.name() == name)
    }

    /// Whether `tools/list` would show another set of tools under `other` (for reloads).
    pub fn lists_like(&self, other: &Self) -> bool {
        self.mode == other.mode && self.pinned == other.pinned
    }
}

impl Compiler<'_> {
    /// Checks `spec.discovery` against the declared tools; the index is built by
    /// [`Compiler::discovery_index`] once the tools compiled.
    pub(super) fn discovery(
        &mut self,
        discovery: Option<&Discovery>,
        tools: &[Tool],
    ) -> CompiledDiscovery {
        let Some(discovery) = discovery else {
            return CompiledDiscovery::default();
        };
        if discovery.pinned.len() > MAX_PINNED {
            self.error(
                "spec.discovery.pinned",
                format!("pin at most {MAX_PINNED} tools (search finds the others)"),
            );
        }
        let mut pinned = Vec::new();
        for (i, name) in discovery.pinned.iter().enumerate() {
            let path = format!("spec.discovery.pinned[{i}]");
            match tools.iter().position(|t| &t.name == name) {
                None => self.error(path, format!("no tool is named `{name}`")),
                Some(index) if pinned.contains(&index) => {
                    self.error(path, format!("`{name}` is pinned twice"))
                }
                Some(index) => pinned.push(index),
            }
        }
        pinned.sort_unstable();
        if discovery.mode == DiscoveryMode::Search {
            for (i, tool) in tools.iter().enumerate() {
                if tool.name == SEARCH_TOOLS || tool.name == DESCRIBE_TOOLS {
                    self.error(
                        format!("spec.tools[{i}].name"),
                        format!(
                            "`{}` is the name of a meta tool in discovery's search mode: rename the tool",
                            tool.name
                        ),
                    );
                }
            }
        }
        let meta = match discovery.mode {
            DiscoveryMode::Full => Vec::new(),
            DiscoveryMode::Search => vec![search_descriptor(), describe_descriptor()],
        };
        CompiledDiscovery {
            mode: discovery.mode,
            pinned,
            meta,
            index: SearchIndex::default(),
        }
    }

    /// Builds the search index over the compiled tools (search mode only).
    pub(super) fn discovery_index(discovery: &mut CompiledDiscovery, tools: &[CompiledTool]) {
        if discovery.mode == DiscoveryMode::Search {
            discovery.index = SearchIndex::build(tools.iter().map(|t| &t.descriptor));
        }
    }
}

fn read_only() -> Value {
    json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
}

fn search_descriptor() -> Value {
    json!({
        "name": SEARCH_TOOLS,
        "title": "Search tools",
        "description": "Finds this server's tools by keywords (matched against tool names, titles \
            and descriptions; best match first). Only a few tools are listed: search for what \
            you need, read a tool's input schema with describe_tools, then call it by name.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
                    "description": "Keywords, e.g. `list pods` or `create issue`."
                },
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT,
                    "default": DEFAULT_SEARCH_LIMIT,
                    "description": "Most tools to return."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "title": {"type": "string"},
                            "description": {"type": "string", "description": "Its first line."}
                        },
                        "required": ["name"]
                    }
                },
                "total": {"type": "integer", "description": "Tools that match, returned or not."}
            },
            "required": ["tools", "total"]
        },
        "annotations": read_only(),
    })
}

fn describe_descriptor() -> Value {
    json!({
        "name": DESCRIBE_TOOLS,
        "title": "Describe tools",
        "description": "Returns the full definitions (input schema, output schema, annotations) \
            of tools named by search_tools, as tools/list would. Unknown names are reported.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {
                    "type": "array", "minItems": 1, "maxItems": MAX_DESCRIBE_NAMES,
                    "items": {"type": "string"},
                    "description": "Tool names."
                }
            },
            "required": ["names"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {"type": "object"}},
                "unknown": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["tools", "unknown"]
        },
        "annotations": read_only(),
    })
}

#[cfg(test)]
mod tests {
    use crate::compile::tests::compiled;

    const TOOLS: &str = "  tools:\n  - {name: a, content: []}\n  - {name: b, description: pods, content: []}\n  - {name: c, content: []}\n";

    #[test]
    fn pinned_tools_are_kept_in_declaration_order_and_searched_in_search_mode() {
        let c = compiled(&format!(
            "{TOOLS}  discovery: {{mode: search, pinned: [c, a]}}\n"
        ))
        .unwrap();
        assert_eq!(c.discovery.pinned, [0, 2]);
        assert_eq!(c.discovery.meta.len(), 2);
        assert_eq!(c.discovery.index.search("pod")[0].0, 1);
        assert!(c.discovery.meta_tool("search_tools").is_some());
    }

    #[test]
    fn full_mode_has_no_meta_tools_and_no_index() {
        let c = compiled(TOOLS).unwrap();
        assert!(c.discovery.meta.is_empty());
        assert!(c.discovery.meta_tool("search_tools").is_none());
        assert!(c.discovery.index.search("pod").is_empty());
    }

    #[test]
    fn refuses_unknown_twice_pinned_and_shadowing_names() {
        let errors = compiled(
            "  tools:\n  - {name: search_tools, content: []}\n  - {name: b, content: []}\n  discovery: {mode: search, pinned: [b, b, nope]}\n",
        )
        .unwrap_err()
        .errors;
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"spec.discovery.pinned[1]"), "{errors:?}");
        assert!(paths.contains(&"spec.discovery.pinned[2]"), "{errors:?}");
        assert!(paths.contains(&"spec.tools[0].name"), "{errors:?}");
        // The same names are anyone's in full mode.
        compiled("  tools:\n  - {name: search_tools, content: []}\n").unwrap();
    }
}
