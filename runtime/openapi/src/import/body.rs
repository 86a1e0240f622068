//! Request bodies to the `http` backend: JSON bodies as `body.json` with `$arg` references
//! (flattened into one argument per property when the names allow, else one nested argument),
//! form bodies as `body.form`. Multipart and other media types are reasons to skip. Pure.

use super::load::{Documents, Version};
use super::naming::{Names, arg_chars, clip};
use super::params::{Kind, Param, kind_of, param_schema};
use super::schema::SchemaConverter;
use super::select::Operation;
use super::summary::Reason;
use mcp_declaration::{HttpBody, HttpParam};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The arguments and `body` a request body makes.
#[derive(Debug, Default)]
pub(super) struct Body {
    /// Argument schemas by name.
    pub properties: Map<String, Value>,
    /// Required arguments.
    pub required: Vec<String>,
    /// The `http.body` declaration.
    pub body: HttpBody,
}

/// The request body of `op`, if it has one.
pub(super) fn map(
    docs: &Documents,
    converter: &mut SchemaConverter,
    names: &mut Names,
    op: &Operation,
    params: &[Param],
) -> Result<Option<Body>, Reason> {
    if docs.version == Version::Swagger2 {
        return swagger2(docs, converter, names, op, params);
    }
    let Some(request) = op.op.get("requestBody") else {
        return Ok(None);
    };
    let (file, request) = docs
        .deref(&op.file, request)
        .map_err(|err| Reason::new("unresolvable $ref", err.to_string()))?;
    let required = request.get("required") == Some(&json!(true));
    let description = request.get("description").and_then(Value::as_str);
    let content = request
        .get("content")
        .and_then(Value::as_object)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Reason::new("unsupported body", "a request body without content".into()))?;
    let types: Vec<(String, &Value)> = content
        .iter()
        .map(|(t, media)| (media_type(t), media))
        .collect();
    let pick = |wanted: &dyn Fn(&str) -> bool| types.iter().find(|(t, _)| wanted(t));
    let schema_of = |media: &Value| media.get("schema").cloned().unwrap_or(json!({}));
    if let Some((media_type, media)) = pick(&|t| t == "application/json")
        .or_else(|| pick(&|t| t.ends_with("+json")))
        .or_else(|| pick(&|t| t == "*/*" || t == "application/*"))
    {
        // A body that takes any type is sent as JSON.
        let content_type = (media_type.ends_with("+json")).then(|| media_type.clone());
        return json_body(
            converter,
            names,
            &file,
            &schema_of(media),
            required,
            description,
            content_type,
        )
        .map(Some);
    }
    if let Some((_, media)) = pick(&|t| t == "application/x-www-form-urlencoded") {
        return form_body(converter, names, &file, &schema_of(media), required).map(Some);
    }
    if let Some((media_type, media)) = pick(&|t| t.starts_with("text/")) {
        return text_body(
            converter,
            names,
            &file,
            &schema_of(media),
            required,
            description,
            media_type,
        )
        .map(Some);
    }
    let first = types.first().map(|(t, _)| t.as_str()).unwrap_or_default();
    if first.starts_with("multipart/") {
        return Err(Reason::new(
            "multipart body",
            format!("request body `{first}`"),
        ));
    }
    Err(Reason::new(
        "unsupported body",
        format!("request body of type `{first}`"),
    ))
}

/// `application/json; charset=utf-8` -> `application/json`.
fn media_type(text: &str) -> String {
    text.split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn json_body(
    converter: &mut SchemaConverter,
    names: &mut Names,
    file: &Path,
    schema: &Value,
    required: bool,
    description: Option<&str>,
    content_type: Option<String>,
) -> Result<Body, Reason> {
    let (root_file, root) = converter.resolve(file, schema)?;
    let (root_file, root) = (root_file, root.clone());
    if let Some(props) = flattenable(names, &root, required) {
        let mut body = Body::default();
        let mut json = Map::new();
        let wanted: Vec<String> = root
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        for (name, prop) in props {
            let (_, resolved) = converter.resolve(&root_file, &prop)?;
            if resolved.get("readOnly") == Some(&json!(true)) {
                continue;
            }
            let arg = names.arg(&name, "body");
            body.properties
                .insert(arg.clone(), converter.convert(&root_file, &prop, 1)?);
            if wanted.contains(&name) {
                body.required.push(arg.clone());
            }
            json.insert(name, json!({"$arg": arg}));
        }
        body.body = HttpBody {
            json: Some(Value::Object(json)),
            content_type,
            ..Default::default()
        };
        return Ok(body);
    }
    let arg = names.arg("body", "request");
    let mut converted = converter.inline(file, schema)?;
    if let (Some(text), Value::Object(map)) = (description, &mut converted) {
        map.entry("description")
            .or_insert_with(|| json!(clip(text)));
    }
    let mut body = Body::default();
    body.properties.insert(arg.clone(), converted);
    if required {
        body.required.push(arg.clone());
    }
    body.body = HttpBody {
        json: Some(json!({"$arg": arg})),
        content_type,
        ..Default::default()
    };
    Ok(body)
}

/// A text body: one string argument sent as it is.
fn text_body(
    converter: &mut SchemaConverter,
    names: &mut Names,
    file: &Path,
    schema: &Value,
    required: bool,
    description: Option<&str>,
    media_type: &str,
) -> Result<Body, Reason> {
    let arg = names.arg("body", "request");
    let mut converted = converter.inline(file, schema)?;
    if let Value::Object(map) = &mut converted {
        map.insert("type".into(), json!("string"));
        if let Some(text) = description {
            map.entry("description")
                .or_insert_with(|| json!(clip(text)));
        }
    }
    let mut body = Body::default();
    body.properties.insert(arg.clone(), converted);
    if required {
        body.required.push(arg.clone());
    }
    body.body = HttpBody {
        text: Some(format!("{{{{ args.{arg} }}}}")),
        content_type: Some(media_type.to_owned()),
        ..Default::default()
    };
    Ok(body)
}

/// The properties of an object body whose names can be arguments as they are, unclaimed:
/// then each property is its own argument.
fn flattenable(names: &Names, root: &Value, required: bool) -> Option<Vec<(String, Value)>> {
    if kind_of(root) != Kind::Object
        || ["allOf", "anyOf", "oneOf", "not", "if", "$ref"]
            .iter()
            .any(|k| root.get(k).is_some())
        || root
            .get("additionalProperties")
            .is_some_and(Value::is_object)
    {
        return None;
    }
    let props = root.get("properties")?.as_object()?;
    let has_required = root
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    if props.is_empty() || (!required && has_required) {
        return None;
    }
    let ok = props
        .keys()
        .all(|name| arg_chars(name) == *name && names.is_free(name));
    ok.then(|| props.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn form_body(
    converter: &mut SchemaConverter,
    names: &mut Names,
    file: &Path,
    schema: &Value,
    required: bool,
) -> Result<Body, Reason> {
    let (root_file, root) = converter.resolve(file, schema)?;
    let root = root.clone();
    let props = root
        .get("properties")
        .and_then(Value::as_object)
        .ok_or_else(|| Reason::new("unsupported body", "a form body without properties".into()))?;
    let wanted = root.get("required").and_then(Value::as_array);
    let mut body = Body::default();
    let mut form = Vec::new();
    for (name, prop) in props {
        let (_, resolved) = converter.resolve(&root_file, prop)?;
        if kind_of(resolved) == Kind::Object {
            return Err(Reason::new(
                "unsupported body",
                format!("form field `{name}` is an object"),
            ));
        }
        let arg = names.arg(name, "form");
        body.properties
            .insert(arg.clone(), converter.convert(&root_file, prop, 1)?);
        if required && wanted.is_some_and(|w| w.contains(&json!(name))) {
            body.required.push(arg.clone());
        }
        form.push(HttpParam {
            name: name.clone(),
            arg: Some(arg),
            ..Default::default()
        });
    }
    body.body = HttpBody {
        form: Some(form),
        ..Default::default()
    };
    Ok(body)
}

/// Swagger 2.0: an `in: body` parameter, or `in: formData` parameters.
fn swagger2(
    docs: &Documents,
    converter: &mut SchemaConverter,
    names: &mut Names,
    op: &Operation,
    params: &[Param],
) -> Result<Option<Body>, Reason> {
    let consumes = op
        .op
        .get("consumes")
        .or_else(|| docs.root().get("consumes"))
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .map(media_type)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let location = |p: &Value| p.get("in").and_then(Value::as_str).map(str::to_owned);
    if let Some((file, param)) = params
        .iter()
        .find(|(_, p)| location(p).as_deref() == Some("body"))
    {
        let json_type = consumes
            .iter()
            .find(|t| *t == "application/json" || t.ends_with("+json") || *t == "*/*");
        if json_type.is_none() && !consumes.is_empty() {
            return Err(Reason::new(
                "unsupported body",
                format!("request body of type `{}`", consumes[0]),
            ));
        }
        let content_type = json_type.filter(|t| t.ends_with("+json")).cloned();
        let schema = param.get("schema").cloned().unwrap_or(json!({}));
        let required = param.get("required") == Some(&json!(true));
        let description = param.get("description").and_then(Value::as_str);
        return json_body(
            converter,
            names,
            file,
            &schema,
            required,
            description,
            content_type,
        )
        .map(Some);
    }
    let fields: Vec<&(PathBuf, &Value)> = params
        .iter()
        .filter(|(_, p)| location(p).as_deref() == Some("formData"))
        .collect();
    if fields.is_empty() {
        return Ok(None);
    }
    if consumes.iter().any(|t| t.starts_with("multipart/"))
        && !consumes
            .iter()
            .any(|t| t == "application/x-www-form-urlencoded")
    {
        return Err(Reason::new(
            "multipart body",
            "formData sent as multipart/form-data".into(),
        ));
    }
    let mut body = Body::default();
    let mut form = Vec::new();
    for (file, param) in fields {
        let name = param
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (schema, _) = param_schema(docs, converter, file, param)?;
        let arg = names.arg(name, "form");
        body.properties.insert(arg.clone(), schema);
        if param.get("required") == Some(&json!(true)) {
            body.required.push(arg.clone());
        }
        form.push(HttpParam {
            name: name.to_owned(),
            arg: Some(arg),
            ..Default::default()
        });
    }
    body.body = HttpBody {
        form: Some(form),
        ..Default::default()
    };
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, taken: &[&str]) -> Result<Option<Body>, Reason> {
        let docs = Documents::parse(text, Path::new(".")).unwrap();
        let ops = super::super::select::operations(&docs).unwrap();
        let params = super::super::params::collect(&docs, &ops[0])?;
        let mut names = Names::default();
        taken.iter().for_each(|t| names.reserve(t));
        let mut converter = SchemaConverter::new(&docs);
        map(&docs, &mut converter, &mut names, &ops[0], &params)
    }

    const ITEM: &str = "components:\n  schemas:\n    Item:\n      type: object\n      \
        required: [name]\n      properties:\n        name: {type: string}\n        \
        id: {type: integer, readOnly: true}\n        price: {type: number}\n";

    #[test]
    fn object_bodies_are_flattened_into_arguments() {
        let body = run(
            &format!("openapi: 3.1.0\npaths:\n  /items:\n    post:\n      requestBody:\n        required: true\n        content:\n          application/json: {{schema: {{$ref: '#/components/schemas/Item'}}}}\n{ITEM}"),
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            body.body.json,
            Some(json!({"name": {"$arg": "name"}, "price": {"$arg": "price"}}))
        );
        assert_eq!(body.required, ["name"]);
        assert_eq!(
            body.properties.keys().collect::<Vec<_>>(),
            ["name", "price"]
        );
        assert_eq!(body.body.content_type, None);
    }

    #[test]
    fn colliding_or_optional_bodies_stay_nested() {
        let spec = format!(
            "openapi: 3.1.0\npaths:\n  /items:\n    put:\n      requestBody:\n        required: REQ\n        content:\n          application/merge-patch+json: {{schema: {{$ref: '#/components/schemas/Item'}}}}\n{ITEM}"
        );
        let body = run(&spec.replace("REQ", "true"), &["name"])
            .unwrap()
            .unwrap();
        assert_eq!(body.body.json, Some(json!({"$arg": "body"})));
        assert_eq!(body.required, ["body"]);
        assert_eq!(
            body.body.content_type.as_deref(),
            Some("application/merge-patch+json")
        );
        assert_eq!(body.properties["body"]["required"], json!(["name"]));
        // Optional body with required properties: flattening would send `{}` when absent.
        let body = run(&spec.replace("REQ", "false"), &[]).unwrap().unwrap();
        assert_eq!(body.body.json, Some(json!({"$arg": "body"})));
        assert!(body.required.is_empty());
    }

    #[test]
    fn form_bodies_become_form_fields_and_multipart_is_a_reason() {
        let body = run(
            "openapi: 3.0.3\npaths:\n  /login:\n    post:\n      requestBody:\n        content:\n          \
             application/x-www-form-urlencoded:\n            schema:\n              type: object\n              \
             properties: {user: {type: string}, remember me: {type: boolean}}\n",
            &[],
        )
        .unwrap()
        .unwrap();
        let form = body.body.form.unwrap();
        assert_eq!(form[1].name, "remember me");
        assert_eq!(form[1].arg.as_deref(), Some("remember_me"));
        let err = run(
            "openapi: 3.0.3\npaths:\n  /up:\n    post:\n      requestBody:\n        content:\n          \
             multipart/form-data: {schema: {type: object}}\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.kind, "multipart body");
    }

    #[test]
    fn text_and_any_type_bodies() {
        let body = run(
            "openapi: 3.0.3\npaths:\n  /md:\n    post:\n      requestBody:\n        required: true\n        content:\n          \
             text/plain: {schema: {type: string}}\n",
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.body.text.as_deref(), Some("{{ args.body }}"));
        assert_eq!(body.body.content_type.as_deref(), Some("text/plain"));
        assert_eq!(body.required, ["body"]);
        let body = run(
            "swagger: '2.0'\nconsumes: ['*/*']\npaths:\n  /ns:\n    post:\n      parameters:\n        \
             - {name: body, in: body, required: true, schema: {type: object}}\n",
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.body.json, Some(json!({"$arg": "body"})));
        assert_eq!(body.body.content_type, None);
    }

    #[test]
    fn swagger_2_body_and_form_parameters() {
        let body = run(
            "swagger: '2.0'\nconsumes: [application/json]\npaths:\n  /pets:\n    post:\n      parameters:\n        \
             - {name: pet, in: body, required: true, schema: {type: object, properties: {name: {type: string}}}}\n",
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.body.json, Some(json!({"name": {"$arg": "name"}})));
        let err = run(
            "swagger: '2.0'\npaths:\n  /up:\n    post:\n      consumes: [multipart/form-data]\n      parameters:\n        \
             - {name: file, in: formData, type: file}\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(err.kind, "multipart body");
        let body = run(
            "swagger: '2.0'\npaths:\n  /f:\n    post:\n      consumes: [application/x-www-form-urlencoded]\n      parameters:\n        \
             - {name: a, in: formData, type: string, required: true}\n",
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(body.required, ["a"]);
        assert_eq!(body.body.form.unwrap()[0].name, "a");
    }
}
