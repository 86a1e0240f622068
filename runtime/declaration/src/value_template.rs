//! JSON values with templated strings inside (content blocks, prompt messages, structured
//! content): the value is kept once, and only the templated slots are rendered per request. Pure.

use super::template::{RenderError, Templates, Text};
use serde_json::Value;

/// A JSON value whose listed string slots are templates.
#[derive(Clone, Debug)]
pub struct ValueTemplate {
    base: Value,
    slots: Vec<(Vec<Step>, Text)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

impl ValueTemplate {
    /// A value in which every string is a template; `path` names the value's field.
    pub fn all_strings(
        templates: &mut Templates,
        path: &str,
        value: Value,
    ) -> Result<Self, (String, String)> {
        let mut slots = Vec::new();
        collect_strings(templates, path, &value, &mut Vec::new(), &mut slots)?;
        Ok(Self { base: value, slots })
    }

    /// A value in which only the strings at `fields` (key paths, absent ones skipped) are templates.
    pub fn fields(
        templates: &mut Templates,
        path: &str,
        value: Value,
        fields: &[&[&str]],
    ) -> Result<Self, (String, String)> {
        let mut slots = Vec::new();
        for field in fields {
            let Some(Value::String(source)) = field.iter().try_fold(&value, |v, key| v.get(key))
            else {
                continue;
            };
            let field_path = format!("{path}.{}", field.join("."));
            let text = templates
                .compile(&field_path, source)
                .map_err(|err| (field_path, err))?;
            if let Text::Template(_) = text {
                slots.push((
                    field
                        .iter()
                        .map(|key| Step::Key((*key).to_owned()))
                        .collect(),
                    text,
                ));
            }
        }
        Ok(Self { base: value, slots })
    }

    /// The value as declared, when nothing in it is templated.
    pub fn literal(&self) -> Option<&Value> {
        self.slots.is_empty().then_some(&self.base)
    }

    /// Renders every slot with `args`.
    pub fn render(&self, templates: &Templates, args: &Value) -> Result<Value, RenderError> {
        self.render_by(|text| templates.render(text, args))
    }

    /// Renders every slot with each key of the object `vars` as a variable.
    pub fn render_in(&self, templates: &Templates, vars: &Value) -> Result<Value, RenderError> {
        self.render_by(|text| templates.render_in(text, vars))
    }

    fn render_by(
        &self,
        render: impl Fn(&Text) -> Result<String, RenderError>,
    ) -> Result<Value, RenderError> {
        let mut value = self.base.clone();
        for (steps, text) in &self.slots {
            let rendered = render(text)?;
            if let Some(slot) = steps.iter().try_fold(&mut value, |v, step| match step {
                Step::Key(key) => v.get_mut(key.as_str()),
                Step::Index(index) => v.get_mut(*index),
            }) {
                *slot = Value::String(rendered);
            }
        }
        Ok(value)
    }
}

fn collect_strings(
    templates: &mut Templates,
    path: &str,
    value: &Value,
    steps: &mut Vec<Step>,
    slots: &mut Vec<(Vec<Step>, Text)>,
) -> Result<(), (String, String)> {
    match value {
        Value::String(source) => {
            let text = templates
                .compile(path, source)
                .map_err(|err| (path.to_owned(), err))?;
            if let Text::Template(_) = text {
                slots.push((steps.clone(), text));
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                steps.push(Step::Index(index));
                collect_strings(templates, &format!("{path}[{index}]"), item, steps, slots)?;
                steps.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                steps.push(Step::Key(key.clone()));
                collect_strings(templates, &format!("{path}.{key}"), item, steps, slots)?;
                steps.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::DEFAULT_FUEL;
    use serde_json::json;

    #[test]
    fn renders_nested_strings() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let value = json!({"city": "{{ args.city }}", "tags": ["fixed", "{{ args.tag }}"], "n": 1});
        let template = ValueTemplate::all_strings(&mut templates, "s", value).unwrap();
        let rendered = template
            .render(&templates, &json!({"city": "Paris", "tag": "x"}))
            .unwrap();
        assert_eq!(
            rendered,
            json!({"city": "Paris", "tags": ["fixed", "x"], "n": 1})
        );
    }

    #[test]
    fn only_named_fields_are_templates() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let value =
            json!({"type": "image", "data": "{{ not a template }}", "text": "{{ args.a }}"});
        let template = ValueTemplate::fields(&mut templates, "c", value, &[&["text"]]).unwrap();
        let rendered = template.render(&templates, &json!({"a": "A"})).unwrap();
        assert_eq!(rendered["data"], "{{ not a template }}");
        assert_eq!(rendered["text"], "A");
    }

    #[test]
    fn errors_name_the_field() {
        let mut templates = Templates::new(DEFAULT_FUEL);
        let (path, _) =
            ValueTemplate::all_strings(&mut templates, "s", json!({"a": ["{{ x"]})).unwrap_err();
        assert_eq!(path, "s.a[0]");
    }
}
