//! Spec types of interactive items: what a tool (or prompt) asks the client before it answers —
//! a confirmation, form fields (elicitation), a completion from the client's model (sampling),
//! and the client's roots. Shared with the operator's CRD, so every field is documented. Pure
//! data.

use super::PromptMessage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A yes/no question asked before the tool runs; declined or cancelled, nothing is called.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Confirm {
    /// The question shown to the user; a template over `args` (elicited values included).
    pub message: String,
}

/// One value asked from the user (MCP form elicitation) when the call did not supply it. The
/// answer is merged into `args` before `inputSchema` validation. Never ask for secrets: MCP
/// forbids sensitive data in form elicitation. With `url` instead of `schema`, a step done out
/// of band (URL-mode elicitation: a consent page, a sign-in at a third party): the user is sent
/// to the URL, and the call goes on once they accept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitField {
    /// The argument this value fills (`[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters).
    pub name: String,
    /// Label shown to the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Why the value is needed; shown to the user as the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the value: one primitive (`string`, `number`, `integer`, `boolean`) with
    /// optional `enum` (`enumNames`, or titled `oneOf: [{const, title}]`), `default`,
    /// `minimum`/`maximum`, `minLength`/`maxLength` and `format` (`email`, `uri`, `date`,
    /// `date-time`); or a multi-select (`type: array`, `items` of `{type: string, enum}` or
    /// `{anyOf: [{const, title}]}`, `minItems`/`maxItems`). A field with a `default` is not
    /// asked from clients that cannot elicit; the default is used.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[schemars(schema_with = "crate::types::any_object")]
    pub schema: Map<String, Value>,
    /// URL-mode step: the page the user opens (`https:`, or `http:` on a loopback host); a
    /// template over `args` and `token.claims` whose scheme and host are literal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// URL-mode step: why the user should open the page (required with `url`); a template over
    /// `args` and `token.claims`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The form (input request) this field is asked in; fields naming the same form are asked
    /// together in one elicitation. Default: the field's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
}

/// A completion asked from the client's model (MCP sampling) before the reply renders; the
/// reply templates see it as `sample` (`sample.text`, `sample.model`, `sample.stopReason`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// The conversation sent to the model (text content; text is a template over `args`).
    pub messages: Vec<PromptMessage>,
    /// System prompt; a template over `args`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Most tokens the model may produce (1-100000).
    pub max_tokens: u32,
    /// Model preferences, passed to the client as declared (MCP `ModelPreferences`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::types::any_object")]
    pub model_preferences: Option<Map<String, Value>>,
}
