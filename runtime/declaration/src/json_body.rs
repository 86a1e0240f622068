//! JSON request bodies built as values: `{"$arg": "path"}` objects (with an optional `default`)
//! are replaced by the argument's JSON value, other strings are templates rendered into string
//! slots. No text is ever spliced into JSON, so no argument can break the document. Pure.

use super::template::{RenderError, Templates, Text};
use super::upstream_url::lookup;
use serde_json::{Map, Value};

/// The key that marks an argument reference.
pub(crate) const ARG_KEY: &str = "$arg";

/// A compiled JSON body.
#[derive(Clone, Debug)]
pub enum JsonBody {
    /// A value without templates or references.
    Literal(Value),
    /// A templated string.
    Template(Text),
    /// An argument's value; dropped from its parent when absent and without a default.
    Arg {
        /// Dotted argument path.
        path: String,
        /// Value used when the argument is absent.
        default: Option<Value>,
    },
    /// An array of parts.
    Array(Vec<JsonBody>),
    /// An object of parts.
    Object(Vec<(String, JsonBody)>),
}

impl JsonBody {
    /// Compiles `value` found at field path `path`; errors name the failing field.
    pub fn compile(
        templates: &mut Templates,
        path: &str,
        value: &Value,
    ) -> Result<Self, (String, String)> {
        Ok(match value {
            Value::String(source) => match templates
                .compile(path, source)
                .map_err(|err| (path.to_owned(), err))?
            {
                Text::Literal(_) => Self::Literal(value.clone()),
                template => Self::Template(template),
            },
            Value::Array(items) => Self::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| Self::compile(templates, &format!("{path}[{i}]"), item))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) if map.contains_key(ARG_KEY) => reference(path, map)?,
            Value::Object(map) => Self::Object(
                map.iter()
                    .map(|(key, item)| {
                        Ok((
                            key.clone(),
                            Self::compile(templates, &format!("{path}.{key}"), item)?,
                        ))
                    })
                    .collect::<Result<Vec<_>, (String, String)>>()?,
            ),
            scalar => Self::Literal(scalar.clone()),
        })
    }

    /// The argument paths this body references.
    pub fn arg_paths(&self) -> Vec<&str> {
        match self {
            Self::Arg { path, .. } => vec![path.as_str()],
            Self::Array(items) => items.iter().flat_map(Self::arg_paths).collect(),
            Self::Object(entries) => entries.iter().flat_map(|(_, v)| v.arg_paths()).collect(),
            Self::Literal(_) | Self::Template(_) => Vec::new(),
        }
    }

    /// Builds the body for `args`; `None` when the whole body is an absent argument.
    pub fn render(
        &self,
        templates: &Templates,
        args: &Value,
    ) -> Result<Option<Value>, RenderError> {
        Ok(match self {
            Self::Literal(value) => Some(value.clone()),
            Self::Template(text) => Some(Value::String(templates.render(text, args)?)),
            Self::Arg { path, default } => match lookup(args, path) {
                Some(value) => Some(value.clone()),
                None => default.clone(),
            },
            Self::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.extend(item.render(templates, args)?);
                }
                Some(Value::Array(out))
            }
            Self::Object(entries) => {
                let mut out = Map::new();
                for (key, item) in entries {
                    if let Some(value) = item.render(templates, args)? {
                        out.insert(key.clone(), value);
                    }
                }
                Some(Value::Object(out))
            }
        })
    }
}

fn reference(path: &str, map: &Map<String, Value>) -> Result<JsonBody, (String, String)> {
    let Some(Value::String(arg)) = map.get(ARG_KEY) else {
        return Err((
            format!("{path}.{ARG_KEY}"),
            "must be an argument name or dotted path".into(),
        ));
    };
    if let Some(extra) = map.keys().find(|k| *k != ARG_KEY && *k != "default") {
        return Err((
            format!("{path}.{extra}"),
            format!("an `{ARG_KEY}` reference takes only `default`"),
        ));
    }
    if arg.is_empty() || arg.split('.').any(str::is_empty) {
        return Err((
            format!("{path}.{ARG_KEY}"),
            "must be an argument name or dotted path".into(),
        ));
    }
    Ok(JsonBody::Arg {
        path: arg.clone(),
        default: map.get("default").cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_FUEL;
    use serde_json::json;

    #[test]
    fn references_keep_types_and_templates_fill_strings() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let declared = json!({
            "title": {"$arg": "title"},
            "meta": {"labels": [{"$arg": "labels"}, "fixed"], "priority": {"$arg": "p.level"}},
            "summary": "{{ args.title }} ({{ args.p.level }})",
            "missing": {"$arg": "nope"},
            "limit": {"$arg": "limit", "default": 10}
        });
        let body = JsonBody::compile(&mut templates, "b", &declared).unwrap();
        let args =
            json!({"title": "\"}, \"admin\": true", "labels": ["a", "b"], "p": {"level": 3}});
        let rendered = body.render(&templates, &args).unwrap().unwrap();
        assert_eq!(
            rendered,
            json!({
                "title": "\"}, \"admin\": true",
                "meta": {"labels": [["a", "b"], "fixed"], "priority": 3},
                "summary": "\"}, \"admin\": true (3)",
                "limit": 10
            })
        );
        assert_eq!(
            body.arg_paths(),
            ["title", "labels", "p.level", "nope", "limit"]
        );
    }

    #[test]
    fn malformed_references_name_the_field() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let (path, _) =
            JsonBody::compile(&mut templates, "b", &json!({"x": {"$arg": 3}})).unwrap_err();
        assert_eq!(path, "b.x.$arg");
        let (path, _) = JsonBody::compile(&mut templates, "b", &json!([{"$arg": "a", "other": 1}]))
            .unwrap_err();
        assert_eq!(path, "b[0].other");
        let (path, _) =
            JsonBody::compile(&mut templates, "b", &json!({"s": "{{ args.x "})).unwrap_err();
        assert_eq!(path, "b.s");
    }
}
