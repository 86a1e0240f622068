//! Each method's params, parsed once into a typed struct that borrows from the request (no
//! copies). Handlers take these instead of digging in the JSON. Pure.
//!
//! Parsed by hand rather than with `#[derive(Deserialize)]`: the request is already a
//! `serde_json::Value`, and serde cannot lend out a `&Value` (the tool arguments are passed on
//! as they came); a derive would also visit every key of the params on the hot path.

use mcp_protocol::{McpError, member};
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// `{}`: the arguments of a call that sent none.
static NO_ARGUMENTS: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));

fn invalid(message: &str) -> McpError {
    McpError::InvalidParams(message.to_owned())
}

/// A string member, required.
fn string<'a>(object: &'a Value, key: &str, missing: &str) -> Result<&'a str, McpError> {
    member(object, key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(missing))
}

/// An `arguments` member: an object, or absent (`null` counts as absent).
fn arguments(params: &Value) -> Result<Option<&Map<String, Value>>, McpError> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(args)) => Ok(Some(args)),
        Some(_) => Err(invalid("`arguments` must be an object")),
    }
}

/// `tools/call`.
pub(crate) struct CallTool<'a> {
    /// The tool.
    pub name: &'a str,
    /// The arguments, an object (`{}` when none were sent).
    pub arguments: &'a Value,
}

impl<'a> CallTool<'a> {
    /// Parses `tools/call` params.
    pub(crate) fn parse(params: &'a Value) -> Result<Self, McpError> {
        let name = string(params, "name", "missing tool `name`")?;
        let arguments = match member(params, "arguments") {
            None | Some(Value::Null) => &NO_ARGUMENTS,
            Some(args @ Value::Object(_)) => args,
            Some(_) => return Err(invalid("`arguments` must be an object")),
        };
        Ok(Self { name, arguments })
    }
}

/// `prompts/get`.
pub(crate) struct GetPrompt<'a> {
    /// The prompt.
    pub name: &'a str,
    /// The arguments, if any were sent.
    pub arguments: Option<&'a Map<String, Value>>,
}

impl<'a> GetPrompt<'a> {
    /// Parses `prompts/get` params.
    pub(crate) fn parse(params: &'a Value) -> Result<Self, McpError> {
        Ok(Self {
            name: string(params, "name", "missing `name`")?,
            arguments: arguments(params)?,
        })
    }
}

/// `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
pub(crate) struct ResourceUri<'a> {
    /// The resource.
    pub uri: &'a str,
}

impl<'a> ResourceUri<'a> {
    /// Parses params that name one resource.
    pub(crate) fn parse(params: &'a Value) -> Result<Self, McpError> {
        Ok(Self {
            uri: string(params, "uri", "missing `uri`")?,
        })
    }
}

/// What `completion/complete` completes.
pub(crate) enum CompletionRef<'a> {
    /// An argument of a prompt.
    Prompt(&'a str),
    /// A variable of a resource template, by its URI template.
    Resource(&'a str),
}

/// `completion/complete`.
pub(crate) struct Complete<'a> {
    /// The prompt or resource template.
    pub reference: CompletionRef<'a>,
    /// The argument or variable name.
    pub argument: &'a str,
    /// What the user typed so far.
    pub typed: &'a str,
}

impl<'a> Complete<'a> {
    /// Parses `completion/complete` params.
    pub(crate) fn parse(params: &'a Value) -> Result<Self, McpError> {
        let reference = params.get("ref").ok_or_else(|| invalid("missing `ref`"))?;
        let argument = params
            .get("argument")
            .ok_or_else(|| invalid("missing `argument`"))?;
        let name = string(argument, "name", "missing `argument.name`")?;
        let typed = argument
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let reference = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                CompletionRef::Prompt(string(reference, "name", "missing `ref.name`")?)
            }
            Some("ref/resource") => {
                CompletionRef::Resource(string(reference, "uri", "missing `ref.uri`")?)
            }
            _ => return Err(invalid("`ref.type` must be ref/prompt or ref/resource")),
        };
        Ok(Self {
            reference,
            argument: name,
            typed,
        })
    }
}

/// The list methods' params.
pub(crate) struct ListPage<'a> {
    /// The cursor of the page, if not the first.
    pub cursor: Option<&'a str>,
}

impl<'a> ListPage<'a> {
    /// Parses list params.
    pub(crate) fn parse(params: &'a Value) -> Result<Self, McpError> {
        match params.get("cursor") {
            None | Some(Value::Null) => Ok(Self { cursor: None }),
            Some(Value::String(cursor)) => Ok(Self {
                cursor: Some(cursor),
            }),
            Some(_) => Err(invalid("`cursor` must be a string")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn call_tool_borrows_and_defaults_arguments() {
        let params = json!({"name": "echo", "arguments": {"message": "hi"}});
        let call = CallTool::parse(&params).unwrap();
        assert_eq!(call.name, "echo");
        assert_eq!(call.arguments["message"], "hi");
        let none = json!({"name": "echo", "arguments": null});
        assert_eq!(CallTool::parse(&none).unwrap().arguments, &json!({}));
        for bad in [
            json!({}),
            json!({"name": 1}),
            json!({"name": "x", "arguments": [1]}),
        ] {
            assert!(matches!(
                CallTool::parse(&bad),
                Err(McpError::InvalidParams(_))
            ));
        }
    }

    #[test]
    fn complete_names_its_reference() {
        let params =
            json!({"ref": {"type": "ref/resource", "uri": "a://{x}"}, "argument": {"name": "x"}});
        let complete = Complete::parse(&params).unwrap();
        assert!(matches!(
            complete.reference,
            CompletionRef::Resource("a://{x}")
        ));
        assert_eq!((complete.argument, complete.typed), ("x", ""));
        let bad = json!({"ref": {"type": "ref/other"}, "argument": {"name": "x"}});
        assert!(Complete::parse(&bad).is_err());
    }

    #[test]
    fn list_cursors_are_strings() {
        assert_eq!(ListPage::parse(&json!({})).unwrap().cursor, None);
        assert_eq!(
            ListPage::parse(&json!({"cursor": "abc"})).unwrap().cursor,
            Some("abc")
        );
        assert!(ListPage::parse(&json!({"cursor": 3})).is_err());
    }
}
