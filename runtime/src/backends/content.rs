//! The declared-content backend: renders the tool's declared blocks and structured content over
//! the arguments. Pure.

use super::{ToolReply, text_block};
use crate::declaration::{CompiledTool, RenderError, Templates};
use serde_json::Value;

/// Renders a content-declared tool's reply. When only `structuredContent` is declared, its JSON
/// is also sent as a text block for clients that do not read structured results.
pub fn reply(
    tool: &CompiledTool,
    templates: &Templates,
    args: &Value,
) -> Result<ToolReply, RenderError> {
    let mut content = tool
        .content
        .iter()
        .map(|block| block.render(templates, args))
        .collect::<Result<Vec<_>, _>>()?;
    let structured = tool
        .structured
        .as_ref()
        .map(|s| s.render(templates, args))
        .transpose()?;
    if let (Some(structured), true) = (&structured, content.is_empty()) {
        content.push(text_block(structured.to_string()));
    }
    Ok(ToolReply {
        content,
        structured,
        is_error: tool.is_error,
    })
}
