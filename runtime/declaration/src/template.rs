//! Text templates: every templated string of a declaration is compiled once, at load, into one
//! shared minijinja environment, and rendered per request with a fuel limit. Pure, no I/O.

use minijinja::Environment;
use serde_json::Value;

/// Fuel for one render: bounds the work a template may do (loops, filters) per request.
pub const DEFAULT_FUEL: u64 = 50_000;

/// A compiled string: literal text (the fast path, nothing to render) or a named template.
#[derive(Clone, Debug, PartialEq)]
pub enum Text {
    /// Served as written.
    Literal(String),
    /// Rendered from a compiled template.
    Template(TemplateRef),
}

/// A compiled template of a [`Templates`] set.
#[derive(Clone, Debug, PartialEq)]
pub struct TemplateRef {
    /// The template's name (the field's path).
    name: String,
    /// For a template that is exactly `{{ args.NAME }}`: NAME. A string argument renders as
    /// itself, so it is served without running the engine (other values still go through it).
    argument: Option<String>,
}

/// Why a template failed to render for a request.
#[derive(Debug, thiserror::Error)]
#[error("template {name} failed: {message}")]
pub struct RenderError {
    /// The template's field path.
    pub name: String,
    /// What went wrong, as minijinja says it.
    pub message: String,
}

/// All templates of one declaration.
#[derive(Debug)]
pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    /// An empty set whose renders are bounded by `fuel`.
    pub fn new(fuel: u64) -> Self {
        let mut env = Environment::new();
        env.set_fuel(Some(fuel));
        // Generated text is sent as JSON strings, never as HTML.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_recursion_limit(32);
        Self { env }
    }

    /// Compiles `source` under `path` (its field path, which error messages then name).
    pub fn compile(&mut self, path: &str, source: &str) -> Result<Text, String> {
        if !source.contains("{{") && !source.contains("{%") && !source.contains("{#") {
            return Ok(Text::Literal(source.to_owned()));
        }
        self.env
            .add_template_owned(path.to_owned(), source.to_owned())
            .map_err(|err| describe(&err))?;
        Ok(Text::Template(TemplateRef {
            name: path.to_owned(),
            argument: lone_argument(source).map(str::to_owned),
        }))
    }

    /// The variables `text` reads (none for a literal).
    pub fn variables(&self, text: &Text) -> std::collections::HashSet<String> {
        match text {
            Text::Literal(_) => std::collections::HashSet::new(),
            Text::Template(TemplateRef { name, .. }) => self
                .env
                .get_template(name)
                .map(|template| template.undeclared_variables(false))
                .unwrap_or_default(),
        }
    }

    /// Renders `text` with the variable `args`.
    pub fn render(&self, text: &Text, args: &Value) -> Result<String, RenderError> {
        // `{{ args.NAME }}` with a string argument needs no template engine.
        if let Text::Template(TemplateRef {
            argument: Some(key),
            ..
        }) = text
            && let Some(Value::String(value)) = args.get(key.as_str())
        {
            return Ok(value.clone());
        }
        self.render_with(
            text,
            minijinja::context! { args => minijinja::Value::from(minijinja::value::Serde(args)) },
        )
    }

    /// Renders `text` with each key of the object `vars` as a variable (response templates see
    /// `args`, `status`, `headers`, `body` and `result`).
    pub fn render_in(&self, text: &Text, vars: &Value) -> Result<String, RenderError> {
        self.render_with(text, minijinja::Value::from(minijinja::value::Serde(vars)))
    }

    fn render_with(&self, text: &Text, context: minijinja::Value) -> Result<String, RenderError> {
        let name = match text {
            Text::Literal(literal) => return Ok(literal.clone()),
            Text::Template(TemplateRef { name, .. }) => name,
        };
        let fail = |err: minijinja::Error| RenderError {
            name: name.clone(),
            message: describe(&err),
        };
        let template = self.env.get_template(name).map_err(fail)?;
        template.render(context).map_err(fail)
    }
}

/// `NAME` when `source` is exactly `{{ args.NAME }}` (spaces inside the braces allowed).
fn lone_argument(source: &str) -> Option<&str> {
    let inner = source.strip_prefix("{{")?.strip_suffix("}}")?;
    // `{{-` / `-}}` trim whitespace around the tag: leave those to the engine.
    let name = inner.trim_matches(' ').strip_prefix("args.")?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let ident = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident.then_some(name)
}

/// minijinja's message without the template name it appends (the caller names the field).
fn describe(err: &minijinja::Error) -> String {
    let mut message = err.kind().to_string();
    if let Some(detail) = err.detail() {
        message.push_str(": ");
        message.push_str(detail);
    }
    if let Some(line) = err.line() {
        message.push_str(&format!(" (line {line})"));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals_skip_the_engine() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let text = templates.compile("a", "plain text").unwrap();
        assert_eq!(text, Text::Literal("plain text".into()));
    }

    #[test]
    fn renders_arguments() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let text = templates.compile("a", "Hello, {{ args.name }}!").unwrap();
        assert_eq!(
            templates.render(&text, &json!({"name": "Ada <3"})).unwrap(),
            "Hello, Ada <3!"
        );
    }

    #[test]
    fn a_lone_string_argument_skips_the_engine_with_the_same_result() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        for (source, args, expected) in [
            (
                "{{ args.name }}",
                json!({"name": "Ada <3 {{x}}"}),
                "Ada <3 {{x}}",
            ),
            ("{{args.name}}", json!({"name": ""}), ""),
            ("{{ args.name }}", json!({"name": 42}), "42"),
            ("{{ args.name }}", json!({}), ""),
            ("{{ args.name }}", json!({"name": [1, "a"]}), "[1, 'a']"),
        ] {
            let text = templates.compile("a", source).unwrap();
            assert_eq!(
                templates.render(&text, &args).unwrap(),
                expected,
                "{source} {args}"
            );
        }
        assert_eq!(lone_argument("{{ args.a_1 }}"), Some("a_1"));
        for source in [
            "{{ args.a }}\n",
            "{{- args.a }}",
            "{{ args.a | upper }}",
            "{{ args.1 }}",
            "x{{ args.a }}",
        ] {
            assert_eq!(lone_argument(source), None, "{source}");
        }
    }

    #[test]
    fn reports_syntax_errors() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let err = templates.compile("a", "{{ args.name ").unwrap_err();
        assert!(err.starts_with("syntax error"), "{err}");
    }

    #[test]
    fn fuel_bounds_runaway_loops() {
        let mut templates = Templates::new(1_000);
        let text = templates
            .compile("a", "{% for i in range(100000) %}x{% endfor %}")
            .unwrap();
        let err = templates.render(&text, &json!({})).unwrap_err();
        assert!(err.message.contains("fuel"), "{err}");
    }
}
