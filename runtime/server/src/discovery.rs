//! Discovery's search mode (`spec.discovery`): what `tools/list` shows (the pinned tools and the
//! meta tools) and the meta tools' answers: `search_tools` ranks the tools with the index the
//! compiler built, `describe_tools` returns their `tools/list` entries. A tool the caller may not
//! see (`listed` says no: its rules, or a `spec.views` view that does not publish it; or an MCP
//! Apps view-only tool for a client without views) is never found or described: it is reported
//! as unknown, like a tool that does not exist. Pure.

use crate::backends::{ToolReply, text_block};
use mcp_declaration::{
    Compiled, CompiledTool, DEFAULT_SEARCH_LIMIT, DiscoveryMode, MAX_DESCRIBE_NAMES,
    MAX_QUERY_CHARS, MAX_SEARCH_LIMIT, MetaTool,
};
use serde_json::{Map, Value, json};

/// Longest description a search result carries, in characters: one line to choose by; the
/// whole text is in `describe_tools`.
const MAX_RESULT_DESCRIPTION_CHARS: usize = 200;

/// The entry of `tool` that `tools/list` shows, if any: a client without MCP Apps gets the
/// plain entry of a tool with a view, and none for a view-only tool.
pub(crate) fn shown(tool: &CompiledTool, views: bool) -> Option<&Value> {
    match &tool.ui {
        Some(ui) if !views => (!ui.app_only).then_some(&ui.plain),
        _ => Some(&tool.descriptor),
    }
}

/// Whether the caller may see the tool at an index of `Compiled::tools`.
pub(crate) type Listed<'a> = dyn Fn(usize) -> bool + 'a;

/// The `tools/list` entries: every tool the caller may see in `full` mode; in `search` mode the
/// pinned ones, then `search_tools` and `describe_tools`.
pub(crate) fn listing<'d>(decl: &'d Compiled, views: bool, listed: &Listed<'_>) -> Vec<&'d Value> {
    let visible = |i: usize| listed(i).then(|| shown(&decl.tools[i], views))?;
    match decl.discovery.mode {
        DiscoveryMode::Full => (0..decl.tools.len()).filter_map(visible).collect(),
        DiscoveryMode::Search => decl
            .discovery
            .pinned
            .iter()
            .filter_map(|&i| visible(i))
            .chain(&decl.discovery.meta)
            .collect(),
    }
}

/// Answers a call of a meta tool. Bad arguments are tool errors the model can read.
pub(crate) fn call(
    decl: &Compiled,
    meta: MetaTool,
    arguments: Option<&Value>,
    views: bool,
    listed: &Listed<'_>,
) -> ToolReply {
    let empty = Map::new();
    let args = match arguments {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => return ToolReply::error("arguments must be an object"),
    };
    let visible = |i: usize| listed(i).then(|| shown(&decl.tools[i], views))?.cloned();
    let answer = match meta {
        MetaTool::Search => search(decl, args, &visible),
        MetaTool::Describe => describe(decl, args, &visible),
    };
    answer.unwrap_or_else(ToolReply::error)
}

type Visible<'a> = dyn Fn(usize) -> Option<Value> + 'a;

fn only_keys(args: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match args.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "unknown argument `{key}` (expected {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn search(
    decl: &Compiled,
    args: &Map<String, Value>,
    visible: &Visible<'_>,
) -> Result<ToolReply, String> {
    only_keys(args, &["query", "limit"])?;
    let query = match args.get("query") {
        Some(Value::String(query)) if !query.trim().is_empty() => query,
        _ => return Err("`query` is required: a few keywords, e.g. `list pods`".into()),
    };
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(format!(
            "`query` is longer than {MAX_QUERY_CHARS} characters: use a few keywords"
        ));
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_SEARCH_LIMIT,
        Some(value) => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=MAX_SEARCH_LIMIT).contains(n))
            .ok_or_else(|| format!("`limit` must be an integer from 1 to {MAX_SEARCH_LIMIT}"))?,
    };
    let matches: Vec<Value> = decl
        .discovery
        .index
        .search(query)
        .into_iter()
        .filter_map(|(i, _)| visible(i))
        .collect();
    let total = matches.len();
    let found: Vec<Value> = matches.iter().take(limit).map(summary).collect();
    let text = if found.is_empty() {
        format!(
            "No tool matches \"{query}\". Try other words: the action (get, list, create) and \
             what it acts on."
        )
    } else {
        let mut text = format!(
            "{total} tools match \"{query}\"; the best {}:\n",
            found.len()
        );
        for tool in &found {
            let field = |key: &str| tool.get(key).and_then(Value::as_str);
            text.push_str("- ");
            text.push_str(field("name").unwrap_or_default());
            if let Some(title) = field("title") {
                text.push_str(&format!(" ({title})"));
            }
            if let Some(description) = field("description") {
                text.push_str(&format!(": {description}"));
            }
            text.push('\n');
        }
        text.push_str("Read a tool's input schema with describe_tools, then call it by name.");
        text
    };
    Ok(ToolReply {
        content: vec![text_block(text)],
        structured: Some(json!({"tools": found, "total": total})),
        is_error: false,
    })
}

/// `{name, title?, description?}` of a tool's entry, the description cut to its first line.
fn summary(descriptor: &Value) -> Value {
    let text = |pointer: &str| descriptor.pointer(pointer).and_then(Value::as_str);
    let mut summary = json!({"name": text("/name").unwrap_or_default()});
    if let Some(title) = text("/title").or_else(|| text("/annotations/title")) {
        summary["title"] = json!(title);
    }
    let line = text("/description")
        .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(
            |line| match line.char_indices().nth(MAX_RESULT_DESCRIPTION_CHARS) {
                Some((cut, _)) => format!("{}…", &line[..cut]),
                None => line.to_owned(),
            },
        );
    if let Some(line) = line {
        summary["description"] = json!(line);
    }
    summary
}

fn describe(
    decl: &Compiled,
    args: &Map<String, Value>,
    visible: &Visible<'_>,
) -> Result<ToolReply, String> {
    only_keys(args, &["names"])?;
    let names: Vec<&str> = match args.get("names") {
        Some(Value::Array(names)) => names
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()
            .ok_or("`names` must be an array of tool names")?,
        _ => return Err("`names` is required: the tool names search_tools found".into()),
    };
    if names.is_empty() || names.len() > MAX_DESCRIBE_NAMES {
        return Err(format!(
            "`names` must hold 1 to {MAX_DESCRIBE_NAMES} tool names"
        ));
    }
    let mut tools = Vec::new();
    let mut unknown = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let meta = decl
            .discovery
            .meta
            .iter()
            .find(|d| d["name"] == name)
            .cloned();
        match meta.or_else(|| decl.tool_index(name).and_then(visible)) {
            Some(descriptor) => tools.push(descriptor),
            None => unknown.push(name),
        }
    }
    let structured = json!({"tools": tools, "unknown": unknown});
    // The JSON as text too, for clients that do not read `structuredContent`.
    Ok(ToolReply {
        content: vec![text_block(structured.to_string())],
        structured: Some(structured),
        is_error: false,
    })
}
