//! Compiling a tool's or prompt's interactive items (`confirm`, `elicit`, `sample`, `roots`):
//! elicitation fields must be flat primitives MCP clients can render as a form, never secrets;
//! form names must not collide with the fixed input-request keys; sampling asks for text. Pure.

use super::Compiler;
use crate::template::Text;
use crate::types::{Confirm, ContentBlock, ElicitField, Sample};
use crate::value_template::ValueTemplate;
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// Input-request key of the confirmation.
pub const CONFIRM_KEY: &str = "confirm";
/// Input-request key of the sampling request.
pub const SAMPLE_KEY: &str = "sample";
/// Input-request key of the roots request.
pub const ROOTS_KEY: &str = "roots";

const MAX_FIELDS: usize = 16;
const MAX_SAMPLE_MESSAGES: usize = 64;
const MAX_SAMPLE_TOKENS: u32 = 100_000;
/// Schema keywords a form field may use (MCP's `PrimitiveSchemaDefinition`).
const FIELD_KEYWORDS: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "enum",
    "enumNames",
    "oneOf",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "format",
    "items",
    "minItems",
    "maxItems",
];
const FORMATS: &[&str] = &["email", "uri", "date", "date-time"];
/// Name fragments that suggest a secret; MCP forbids asking for those in a form.
const SECRET_HINTS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "credential",
    "private_key",
];

/// What a tool or prompt asks the client before it answers.
#[derive(Debug, Default)]
pub struct CompiledInteraction {
    /// The confirmation question.
    pub confirm: Option<Text>,
    /// Form fields, in declaration order.
    pub elicit: Vec<CompiledField>,
    /// The sampling request.
    pub sample: Option<CompiledSample>,
    /// Whether the client's roots are asked for.
    pub roots: bool,
    /// URL-mode steps, in declaration order.
    pub urls: Vec<super::CompiledUrlStep>,
}

impl CompiledInteraction {
    /// Whether anything is asked at all.
    pub fn is_empty(&self) -> bool {
        self.confirm.is_none()
            && self.elicit.is_empty()
            && self.sample.is_none()
            && !self.roots
            && self.urls.is_empty()
    }
}

/// One form field.
#[derive(Debug)]
pub struct CompiledField {
    /// The argument it fills.
    pub name: String,
    /// The input-request key of its form.
    pub form: String,
    /// The property schema sent in `requestedSchema`.
    pub schema: Value,
    /// Checks an answer.
    pub validator: jsonschema::Validator,
    /// Used when the client cannot elicit.
    pub default: Option<Value>,
    /// Shown as the form's message.
    pub description: Option<String>,
}

/// A sampling request.
#[derive(Debug)]
pub struct CompiledSample {
    /// Messages (`{role, content}`), text templated over `args`.
    pub messages: Vec<ValueTemplate>,
    /// System prompt.
    pub system_prompt: Option<Text>,
    /// Token limit.
    pub max_tokens: u32,
    /// Passed through.
    pub model_preferences: Option<Map<String, Value>>,
    /// No template in it: it can be asked before elicited values are known.
    pub literal: bool,
}

impl Compiler<'_> {
    /// Compiles interactive items; `content_only` refuses `sample` and `roots` (HTTP tools).
    pub(super) fn interaction(
        &mut self,
        path: &str,
        confirm: Option<&Confirm>,
        elicit: &[ElicitField],
        sample: Option<&Sample>,
        roots: bool,
        http_backed: bool,
    ) -> CompiledInteraction {
        if http_backed && sample.is_some() {
            self.error(
                format!("{path}.sample"),
                "is supported on declared-content tools only (an HTTP tool's templates cannot see it yet)",
            );
        }
        if http_backed && roots {
            self.error(
                format!("{path}.roots"),
                "is supported on declared-content tools only (an HTTP tool's templates cannot see it yet)",
            );
        }
        let confirm =
            confirm.and_then(|c| self.text(&format!("{path}.confirm.message"), &c.message));
        let (elicit, urls) = self.fields(&format!("{path}.elicit"), elicit);
        let sample = sample.and_then(|s| self.sample(&format!("{path}.sample"), s));
        CompiledInteraction {
            confirm,
            elicit,
            sample,
            roots,
            urls,
        }
    }

    /// The form fields and the URL steps of `elicit`.
    fn fields(
        &mut self,
        path: &str,
        fields: &[ElicitField],
    ) -> (Vec<CompiledField>, Vec<super::CompiledUrlStep>) {
        if fields.len() > MAX_FIELDS {
            self.error(path.to_owned(), format!("at most {MAX_FIELDS} fields"));
        }
        self.unique(
            "elicit field",
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| (format!("{path}[{i}].name"), f.name.as_str())),
        );
        let (mut forms, mut urls) = (Vec::new(), Vec::new());
        for (i, field) in fields.iter().enumerate() {
            let at = format!("{path}[{i}]");
            if field.url.is_some() {
                urls.extend(self.url_step(&at, field));
            } else {
                forms.extend(self.field(&at, field));
            }
        }
        (forms, urls)
    }

    fn field(&mut self, path: &str, field: &ElicitField) -> Option<CompiledField> {
        let errors_before = self.errors.len();
        let identifier = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
        };
        if !identifier(&field.name) {
            self.error(
                format!("{path}.name"),
                "must be 1-64 characters of A-Z, a-z, 0-9 and `_`, not starting with a digit",
            );
        }
        let lower = field.name.to_ascii_lowercase();
        if SECRET_HINTS.iter().any(|hint| lower.contains(hint)) {
            self.error(
                format!("{path}.name"),
                "looks like a secret; MCP forbids asking for sensitive data in a form",
            );
        }
        if field.message.is_some() {
            self.error(
                format!("{path}.message"),
                "is for `url` steps; a form field is described by `description`",
            );
        }
        let form = field.form.clone().unwrap_or_else(|| field.name.clone());
        if !identifier(&form) {
            self.error(
                format!("{path}.form"),
                "must be 1-64 characters of A-Z, a-z, 0-9 and `_`, not starting with a digit",
            );
        }
        if [CONFIRM_KEY, SAMPLE_KEY, ROOTS_KEY].contains(&form.as_str()) {
            self.error(
                format!("{path}.form"),
                format!("`{form}` is the key of another input request; name the form (or field) differently"),
            );
        }
        // MCP forms carry no references: a field that is a shared schema gets it inlined.
        let schema = &self.shared.inline(&field.schema);
        for key in schema.keys() {
            if !FIELD_KEYWORDS.contains(&key.as_str()) {
                self.error(
                    format!("{path}.schema.{key}"),
                    "not allowed: a form field is one flat primitive or a multi-select of strings (type, title, description, default, enum, enumNames, oneOf, minimum, maximum, minLength, maxLength, format, items, minItems, maxItems)",
                );
            }
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("string" | "number" | "integer" | "boolean") if !schema.contains_key("items") => {}
            Some("array") if multi_select(schema.get("items")) => {}
            Some("array") => self.error(
                format!("{path}.schema.items"),
                "a multi-select needs `items` of `{type: string, enum: [...]}` or `{anyOf: [{const, title}, ...]}`",
            ),
            _ => self.error(
                format!("{path}.schema.type"),
                "must be \"string\", \"number\", \"integer\", \"boolean\" or \"array\" (a multi-select)",
            ),
        }
        if let Some(options) = schema.get("oneOf")
            && !titled_options(options)
        {
            self.error(
                format!("{path}.schema.oneOf"),
                "must list `{const, title}` options (a titled single-select)",
            );
        }
        if let Some(format) = schema.get("format")
            && !format.as_str().is_some_and(|f| FORMATS.contains(&f))
        {
            self.error(
                format!("{path}.schema.format"),
                "must be one of email, uri, date, date-time (never a password)",
            );
        }
        let validator = self.schema(&format!("{path}.schema"), schema)?;
        let default = schema.get("default").cloned();
        if let Some(default) = &default
            && !validator.is_valid(default)
        {
            self.error(
                format!("{path}.schema.default"),
                "does not match the field's own schema",
            );
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            if values.is_empty() {
                self.error(format!("{path}.schema.enum"), "must not be empty");
            }
            let mut typed = schema.clone();
            typed.remove("enum");
            if let Some(check) = self.schema(&format!("{path}.schema"), &typed)
                && let Some(bad) = values.iter().find(|v| !check.is_valid(v))
            {
                self.error(
                    format!("{path}.schema.enum"),
                    format!("value {bad} does not match the field's type"),
                );
            }
        }
        if self.errors.len() > errors_before {
            return None;
        }
        let mut property = Value::Object(schema.clone());
        if let Some(title) = &field.title
            && property.get("title").is_none()
        {
            property["title"] = json!(title);
        }
        if let Some(description) = &field.description
            && property.get("description").is_none()
        {
            property["description"] = json!(description);
        }
        Some(CompiledField {
            name: field.name.clone(),
            form,
            schema: property,
            validator,
            default,
            description: field.description.clone().or_else(|| field.title.clone()),
        })
    }

    fn sample(&mut self, path: &str, sample: &Sample) -> Option<CompiledSample> {
        let errors_before = self.errors.len();
        if sample.messages.is_empty() || sample.messages.len() > MAX_SAMPLE_MESSAGES {
            self.error(
                format!("{path}.messages"),
                format!("1-{MAX_SAMPLE_MESSAGES} messages"),
            );
        }
        if sample.max_tokens == 0 || sample.max_tokens > MAX_SAMPLE_TOKENS {
            self.error(
                format!("{path}.maxTokens"),
                format!("must be 1-{MAX_SAMPLE_TOKENS}"),
            );
        }
        let mut literal = true;
        let mut messages = Vec::new();
        for (i, message) in sample.messages.iter().enumerate() {
            let message_path = format!("{path}.messages[{i}]");
            if !matches!(message.content, ContentBlock::Text { .. }) {
                self.error(
                    format!("{message_path}.content.type"),
                    "must be \"text\" (sampling asks with text)",
                );
                continue;
            }
            let value = json!({"role": message.role, "content": message.content});
            if let Some(template) =
                self.value_template(&message_path, value, Some(&[&["content", "text"]]))
            {
                literal &= template.literal().is_some();
                messages.push(template);
            }
        }
        let system_prompt = sample
            .system_prompt
            .as_ref()
            .and_then(|s| self.text(&format!("{path}.systemPrompt"), s));
        literal &= matches!(system_prompt, None | Some(Text::Literal(_)));
        (self.errors.len() == errors_before).then(|| CompiledSample {
            messages,
            system_prompt,
            max_tokens: sample.max_tokens,
            model_preferences: sample.model_preferences.clone(),
            literal,
        })
    }
}

/// `items` of a multi-select: strings from an `enum`, or titled `anyOf` options.
fn multi_select(items: Option<&Value>) -> bool {
    let Some(Value::Object(items)) = items else {
        return false;
    };
    let strings = |v: &Value| {
        v.as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string))
    };
    match (items.get("enum"), items.get("anyOf")) {
        (Some(values), None) => {
            items.get("type") == Some(&json!("string"))
                && strings(values)
                && items.keys().all(|k| k == "type" || k == "enum")
        }
        (None, Some(options)) => titled_options(options) && items.len() == 1,
        _ => false,
    }
}

/// A list of `{const: string, title: string}` options.
fn titled_options(options: &Value) -> bool {
    options.as_array().is_some_and(|options| {
        !options.is_empty()
            && options.iter().all(|o| {
                o.get("const").is_some_and(Value::is_string)
                    && o.get("title").is_some_and(Value::is_string)
                    && o.as_object().is_some_and(|o| o.len() == 2)
            })
    })
}

/// Checks that a tool's `inputSchema` lets elicited values in.
pub(super) fn closed_schema_problem(
    input_schema: &Map<String, Value>,
    fields: &[ElicitField],
) -> Option<String> {
    if input_schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return None;
    }
    let declared: HashSet<&str> = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    fields
        .iter()
        .filter(|f| f.url.is_none())
        .find(|f| !declared.contains(f.name.as_str()))
        .map(|f| {
            format!(
                "elicited field `{}` is not a property of inputSchema, which forbids additional properties",
                f.name
            )
        })
}
