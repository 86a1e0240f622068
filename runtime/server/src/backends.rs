//! Where a tool's answer comes from. Each backend turns validated arguments into a [`ToolReply`];
//! the dispatch layer does validation, notifications, metrics and era shaping around it. `content`
//! renders the declared reply; `http` calls an upstream HTTP API.

pub mod content;
pub mod http;

use serde_json::Value;

/// What a tool answered, before era shaping.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolReply {
    /// Content blocks.
    pub content: Vec<Value>,
    /// Structured result, if any.
    pub structured: Option<Value>,
    /// A tool error the model can read.
    pub is_error: bool,
}

impl ToolReply {
    /// A tool error with one text block.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![text_block(message.into())],
            structured: None,
            is_error: true,
        }
    }
}

/// A text content block.
pub fn text_block(text: String) -> Value {
    mcp_protocol::object([
        ("type", Value::String("text".to_owned())),
        ("text", Value::String(text)),
    ])
}
