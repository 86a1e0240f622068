//! The declared-content backend: renders the tool's declared blocks and structured content over
//! the arguments. Pure.

use super::{ToolReply, text_block};
use mcp_declaration::{CompiledTool, RenderError, Templates, ValueTemplate};
use serde_json::Value;

/// Renders a content-declared tool's reply. When only `structuredContent` is declared, its JSON
/// is also sent as a text block for clients that do not read structured results.
pub fn reply(
    tool: &CompiledTool,
    templates: &Templates,
    args: &Value,
) -> Result<ToolReply, RenderError> {
    render(tool, |template| template.render(templates, args))
}

/// [`reply`] for an interactive tool: the templates see the variables of `vars` (`args`,
/// `sample`, `roots`).
pub fn reply_in(
    tool: &CompiledTool,
    templates: &Templates,
    vars: &Value,
) -> Result<ToolReply, RenderError> {
    render(tool, |template| template.render_in(templates, vars))
}

fn render(
    tool: &CompiledTool,
    render: impl Fn(&ValueTemplate) -> Result<Value, RenderError>,
) -> Result<ToolReply, RenderError> {
    let mut content = tool
        .content
        .iter()
        .map(&render)
        .collect::<Result<Vec<_>, _>>()?;
    let structured = tool.structured.as_ref().map(&render).transpose()?;
    if let (Some(structured), true) = (&structured, content.is_empty()) {
        content.push(text_block(structured.to_string()));
    }
    Ok(ToolReply {
        content,
        structured,
        is_error: tool.is_error,
    })
}
