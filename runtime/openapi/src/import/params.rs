//! Parameters to the `http` backend: path parameters become URI-template expressions (by
//! style), query parameters `query` entries or `{?x}` expressions, headers `headers` entries,
//! cookies one templated `Cookie` header; each becomes an argument of `inputSchema`. Pure.

use super::load::{Documents, Version};
use super::naming::{Names, clip};
use super::schema::SchemaConverter;
use super::select::Operation;
use super::summary::Reason;
use mcp_declaration::{HttpParam, RESERVED_HEADERS, X_MCP_HEADER, valid_param_header_name};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// Headers OpenAPI says to ignore as parameters (the request sets them).
const IGNORED_HEADERS: &[&str] = &["accept", "content-type", "authorization"];
/// Swagger 2.0 parameter fields that are schema keywords.
const SWAGGER_SCHEMA_FIELDS: &[&str] = &[
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
];

/// The arguments and request parts that parameters make.
#[derive(Debug, Default)]
pub(super) struct Mapped {
    /// Argument schemas by argument name, in parameter order.
    pub properties: Map<String, Value>,
    /// Required arguments.
    pub required: Vec<String>,
    /// The path as a URI template over the arguments.
    pub path: String,
    /// Names in the trailing `{?...}` expression.
    pub query_vars: Vec<String>,
    /// `query` entries.
    pub query: Vec<HttpParam>,
    /// `headers` entries.
    pub headers: Vec<HttpParam>,
    /// Things dropped, for the summary.
    pub notes: Vec<String>,
    /// Whether any parameter is not in the path (resources take path parameters only).
    pub non_path: bool,
}

/// A parameter object and the file it is in.
pub(super) type Param<'a> = (PathBuf, &'a Value);

/// The operation's parameters: the path item's, overridden by the operation's own by name and
/// location.
pub(super) fn collect<'a>(
    docs: &'a Documents,
    op: &Operation<'a>,
) -> Result<Vec<Param<'a>>, Reason> {
    let mut out: Vec<Param<'a>> = Vec::new();
    for list in [op.item.get("parameters"), op.op.get("parameters")] {
        for param in list.and_then(Value::as_array).into_iter().flatten() {
            let (file, param) = docs
                .deref(&op.file, param)
                .map_err(|err| Reason::new("unresolvable $ref", err.to_string()))?;
            let key = |p: &Value| (p.get("name").cloned(), p.get("in").cloned());
            out.retain(|(_, seen)| key(seen) != key(param));
            out.push((file, param));
        }
    }
    Ok(out)
}

/// Maps path, query, header and cookie parameters (body and form parameters of Swagger 2.0
/// are the body's).
pub(super) fn map(
    docs: &Documents,
    converter: &mut SchemaConverter,
    names: &mut Names,
    path: &str,
    params: &[Param],
) -> Result<Mapped, Reason> {
    let mut mapped = Mapped::default();
    let mut path_exprs: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<(String, String)> = Vec::new();
    let mut marked: Vec<String> = Vec::new();
    for (file, param) in params {
        let name = param
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let location = param.get("in").and_then(Value::as_str).unwrap_or_default();
        if matches!(location, "body" | "formData") {
            continue;
        }
        let required = location == "path" || param.get("required") == Some(&json!(true));
        if location == "header" && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            mapped.notes.push(format!(
                "header parameter `{name}` is set by the runtime; ignored"
            ));
            continue;
        }
        if location == "header"
            // A `Cookie` header parameter would clash with the cookie parameters, which the
            // importer joins into one `Cookie` header of its own.
            && (RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str())
                || name.eq_ignore_ascii_case("cookie")
                || http::HeaderName::from_bytes(name.as_bytes()).is_err())
        {
            if required {
                return Err(Reason::new(
                    "unsupported parameter",
                    format!("required header `{name}` cannot be sent by the http backend"),
                ));
            }
            mapped
                .notes
                .push(format!("optional header `{name}` cannot be sent; dropped"));
            continue;
        }
        let (mut schema, kind) = param_schema(docs, converter, file, param)?;
        let arg = names.arg(name, location);
        let explode = param.get("explode").and_then(Value::as_bool);
        let style = param.get("style").and_then(Value::as_str);
        match location {
            "path" => {
                let (op, star) = match style.unwrap_or("simple") {
                    "simple" => ("", explode == Some(true)),
                    "label" => (".", explode == Some(true)),
                    "matrix" if arg == name => (";", explode == Some(true)),
                    other => {
                        return Err(Reason::new(
                            "unsupported parameter",
                            format!("path parameter `{name}` with style `{other}`"),
                        ));
                    }
                };
                let star = if star { "*" } else { "" };
                path_exprs.push((name.to_owned(), format!("{{{op}{arg}{star}}}")));
            }
            "query" => {
                mapped.non_path = true;
                let explode = match docs.version {
                    Version::Swagger2 => {
                        match param.get("collectionFormat").and_then(Value::as_str) {
                            None | Some("csv") => kind != Kind::Array,
                            Some("multi") => true,
                            Some(other) => {
                                return Err(Reason::new(
                                    "unsupported parameter",
                                    format!(
                                        "query parameter `{name}` with collectionFormat `{other}`"
                                    ),
                                ));
                            }
                        }
                    }
                    _ => explode.unwrap_or(style.is_none_or(|s| s == "form")),
                };
                match (style.unwrap_or("form"), kind, explode) {
                    ("form", Kind::Scalar, _) | ("form", Kind::Array, true) => {
                        mapped.query.push(HttpParam {
                            name: name.to_owned(),
                            arg: Some(arg.clone()),
                            ..Default::default()
                        });
                    }
                    ("form", Kind::Object, true) => mapped.query_vars.push(format!("{arg}*")),
                    ("form", _, false) if arg == name => mapped.query_vars.push(arg.clone()),
                    (style, _, _) => {
                        return Err(Reason::new(
                            "unsupported parameter",
                            format!(
                                "query parameter `{name}` (style `{style}`, {}exploded) cannot be expressed",
                                if explode { "" } else { "not " }
                            ),
                        ));
                    }
                }
            }
            "header" => {
                mapped.non_path = true;
                mark_header(&mut schema, name, &mut marked);
                mapped.headers.push(HttpParam {
                    name: name.to_owned(),
                    arg: Some(arg.clone()),
                    ..Default::default()
                });
            }
            "cookie" if !is_token(name) => {
                return Err(Reason::new(
                    "unsupported parameter",
                    format!("cookie `{name}` is not a valid cookie name"),
                ));
            }
            "cookie" => {
                mapped.non_path = true;
                cookies.push((name.to_owned(), arg.clone()));
            }
            other => {
                return Err(Reason::new(
                    "unsupported parameter",
                    format!("parameter `{name}` in `{other}`"),
                ));
            }
        }
        mapped.properties.insert(arg.clone(), schema);
        if required {
            mapped.required.push(arg);
        }
    }
    if !cookies.is_empty() {
        mapped.headers.push(HttpParam {
            name: "Cookie".into(),
            value: Some(cookie_template(&cookies)),
            ..Default::default()
        });
    }
    mapped.path = path_template(path, &path_exprs)?;
    Ok(mapped)
}

/// Marks a header parameter's argument with `x-mcp-header` (SEP-2243): clients then mirror
/// it into `Mcp-Param-{name}`, so a gateway can route on the same header the upstream gets.
/// Only where the spec allows it (a string, integer or boolean, a token name, each name once
/// regardless of case); elsewhere the argument stays unmarked, which every client accepts.
fn mark_header(schema: &mut Value, name: &str, marked: &mut Vec<String>) {
    let primitive = matches!(
        schema.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "boolean")
    );
    let lower = name.to_ascii_lowercase();
    if !primitive || !valid_param_header_name(name) || marked.contains(&lower) {
        return;
    }
    if let Value::Object(schema) = schema {
        schema.insert(X_MCP_HEADER.into(), Value::String(name.to_owned()));
        marked.push(lower);
    }
}

/// What a parameter's values look like, which decides how it is serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A string, number, boolean or unknown.
    Scalar,
    /// An array.
    Array,
    /// An object.
    Object,
}

pub(super) fn param_schema(
    docs: &Documents,
    converter: &mut SchemaConverter,
    file: &std::path::Path,
    param: &Value,
) -> Result<(Value, Kind), Reason> {
    let name = param
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let raw = if docs.version == Version::Swagger2 {
        let map: Map<String, Value> = SWAGGER_SCHEMA_FIELDS
            .iter()
            .filter_map(|&k| param.get(k).map(|v| (k.to_owned(), v.clone())))
            .collect();
        Value::Object(map)
    } else if let Some(schema) = param.get("schema") {
        schema.clone()
    } else if param.get("content").is_some() {
        return Err(Reason::new(
            "unsupported parameter",
            format!("parameter `{name}` is described by `content`, not `schema`"),
        ));
    } else {
        json!({})
    };
    let kind = {
        let (_, resolved) = converter.resolve(file, &raw)?;
        kind_of(resolved)
    };
    let mut schema = converter.inline(file, &raw)?;
    if let (Some(description), Value::Object(map)) = (
        param.get("description").and_then(Value::as_str),
        &mut schema,
    ) {
        map.entry("description")
            .or_insert_with(|| json!(clip(description)));
    }
    if param.get("deprecated") == Some(&json!(true))
        && let Value::Object(map) = &mut schema
    {
        map.insert("deprecated".into(), json!(true));
    }
    Ok((schema, kind))
}

/// The kind of values a (resolved) schema describes.
pub(super) fn kind_of(schema: &Value) -> Kind {
    let has = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(types)) => types.iter().any(|x| x == t),
        _ => false,
    };
    if has("array") {
        Kind::Array
    } else if has("object") || (schema.get("type").is_none() && schema.get("properties").is_some())
    {
        Kind::Object
    } else {
        Kind::Scalar
    }
}

/// The path with `{name}` replaced by each parameter's expression and literal text escaped
/// for RFC 6570.
fn path_template(path: &str, exprs: &[(String, String)]) -> Result<String, Reason> {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&literal(&rest[..open]));
        let close = rest[open..].find('}').map(|c| open + c).ok_or_else(|| {
            Reason::new("unsupported path", format!("unbalanced braces in `{path}`"))
        })?;
        let name = &rest[open + 1..close];
        let expr = exprs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
            .ok_or_else(|| {
                Reason::new(
                    "unsupported path",
                    format!("path parameter `{name}` is not declared"),
                )
            })?;
        out.push_str(&expr);
        rest = &rest[close + 1..];
    }
    out.push_str(&literal(rest));
    Ok(out)
}

/// Literal template text: characters RFC 6570 does not allow in literals percent-encoded.
fn literal(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let allowed = c.is_ascii_graphic() && !"\"'%<>\\^`{|}".contains(c);
        if allowed {
            out.push(c);
        } else {
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// One `Cookie` header value: `name=value` pairs of the present arguments, URL-encoded, joined
/// by `; `. Names are HTTP tokens (checked by the caller), so they are safe in string literals.
fn cookie_template(cookies: &[(String, String)]) -> String {
    let pairs: Vec<String> = cookies
        .iter()
        .map(|(name, arg)| format!("[\"{name}\", args.{arg}]"))
        .collect();
    format!(
        "{{% for name, value in [{}] if value is defined and value is not none %}}{{% if not loop.first %}}; {{% endif %}}{{{{ name }}}}={{{{ value | urlencode }}}}{{% endfor %}}",
        pairs.join(", ")
    )
}

/// Whether `name` is an HTTP token (RFC 9110), as cookie names must be.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn run(text: &str, path: &str) -> Result<Mapped, Reason> {
        let docs = Documents::parse(text, Path::new(".")).unwrap();
        let ops = super::super::select::operations(&docs).unwrap();
        let op = ops.iter().find(|o| o.path == path).unwrap();
        let params = collect(&docs, op)?;
        let mut converter = SchemaConverter::new(&docs);
        map(&docs, &mut converter, &mut Names::default(), path, &params)
    }

    #[test]
    fn path_query_header_and_cookie_parameters_become_arguments() {
        let mapped = run(
            r#"openapi: 3.0.3
paths:
  /items/{item-id}/x y:
    parameters:
      - {name: item-id, in: path, required: true, schema: {type: integer}}
      - {name: q, in: query, schema: {type: string}}
    get:
      parameters:
        - {name: q, in: query, required: true, schema: {type: string}, description: Search text}
        - {name: tags, in: query, schema: {type: array, items: {type: string}}}
        - {name: ids, in: query, explode: false, schema: {type: array, items: {type: integer}}}
        - {name: filter, in: query, schema: {type: object, additionalProperties: {type: string}}}
        - {name: X-Trace, in: header, schema: {type: string}}
        - {name: Accept, in: header, schema: {type: string}}
        - {name: session, in: cookie, schema: {type: string}}
"#,
            "/items/{item-id}/x y",
        )
        .unwrap();
        assert_eq!(mapped.path, "/items/{item_id}/x%20y");
        assert_eq!(mapped.query_vars, ["ids", "filter*"]);
        let query: Vec<(&str, &str)> = mapped
            .query
            .iter()
            .map(|p| (p.name.as_str(), p.arg.as_deref().unwrap()))
            .collect();
        assert_eq!(query, [("q", "q"), ("tags", "tags")]);
        assert_eq!(mapped.headers[0].name, "X-Trace");
        assert_eq!(mapped.headers[0].arg.as_deref(), Some("X_Trace"));
        assert_eq!(mapped.headers[1].name, "Cookie");
        assert!(
            mapped.headers[1]
                .value
                .as_ref()
                .unwrap()
                .contains(r#"[["session", args.session]]"#)
        );
        assert_eq!(mapped.required, ["item_id", "q"]);
        assert_eq!(
            mapped.properties["q"],
            json!({"type": "string", "description": "Search text"})
        );
        assert_eq!(
            mapped.properties["X_Trace"],
            json!({"type": "string", "x-mcp-header": "X-Trace"}),
            "a header parameter is mirrored into Mcp-Param-X-Trace"
        );
        assert!(mapped.notes[0].contains("`Accept`"));
        assert!(mapped.non_path);
    }

    #[test]
    fn header_parameters_are_marked_only_where_sep_2243_allows() {
        let mapped = run(
            r#"openapi: 3.0.3
paths:
  /a:
    get:
      parameters:
        - {name: X-Tenant, in: header, schema: {type: integer}}
        - {name: x-tenant, in: header, schema: {type: integer}}
        - {name: X-Ratio, in: header, schema: {type: number}}
        - {name: X-Tags, in: header, schema: {type: array, items: {type: string}}}
        - {name: X-Dry, in: header, schema: {type: boolean}}
"#,
            "/a",
        )
        .unwrap();
        let marks: Vec<(&str, Option<&str>)> = mapped
            .properties
            .iter()
            .map(|(arg, schema)| (arg.as_str(), schema["x-mcp-header"].as_str()))
            .collect();
        assert_eq!(
            marks,
            [
                ("X_Tenant", Some("X-Tenant")),
                ("x_tenant", None),
                ("X_Ratio", None),
                ("X_Tags", None),
                ("X_Dry", Some("X-Dry")),
            ]
        );
    }

    #[test]
    fn the_cookie_header_holds_present_cookies_only() {
        let mut templates = mcp_declaration::Templates::new(mcp_declaration::DEFAULT_FUEL);
        let source = cookie_template(&[("a".into(), "a".into()), ("b-c".into(), "b_c".into())]);
        let text = templates.compile("cookie", &source).unwrap();
        let render = |args| templates.render(&text, &args).unwrap();
        assert_eq!(render(json!({"a": "x y;", "b_c": 2})), "a=x%20y%3B; b-c=2");
        assert_eq!(render(json!({"b_c": "z"})), "b-c=z");
        assert_eq!(render(json!({"a": null})), "");
    }

    #[test]
    fn path_styles_map_to_template_operators() {
        let mapped = run(
            "openapi: 3.1.0\npaths:\n  /a/{x}/{y}:\n    get:\n      parameters:\n        \
             - {name: x, in: path, required: true, style: label, schema: {type: string}}\n        \
             - {name: y, in: path, required: true, style: matrix, explode: true, schema: {type: array}}\n",
            "/a/{x}/{y}",
        )
        .unwrap();
        assert_eq!(mapped.path, "/a/{.x}/{;y*}");
        assert!(!mapped.non_path);
    }

    #[test]
    fn inexpressible_parameters_are_reasons() {
        let err = run(
            "openapi: 3.0.3\npaths:\n  /a:\n    get:\n      parameters:\n        \
             - {name: f, in: query, style: deepObject, schema: {type: object}}\n",
            "/a",
        )
        .unwrap_err();
        assert!(err.detail.contains("style `deepObject`"), "{err:?}");
        let err = run("openapi: 3.0.3\npaths:\n  /a/{b}:\n    get: {}\n", "/a/{b}").unwrap_err();
        assert!(err.detail.contains("`b` is not declared"), "{err:?}");
        let err = run(
            "openapi: 3.0.3\npaths:\n  /a:\n    get:\n      parameters:\n        \
             - {name: Host, in: header, required: true, schema: {type: string}}\n",
            "/a",
        )
        .unwrap_err();
        assert!(err.detail.contains("`Host`"), "{err:?}");
    }

    #[test]
    fn swagger_2_parameters_carry_their_schema_inline() {
        let mapped = run(
            "swagger: '2.0'\npaths:\n  /a:\n    get:\n      parameters:\n        \
             - {name: n, in: query, type: integer, minimum: 1, exclusiveMinimum: true}\n        \
             - {name: tags, in: query, type: array, items: {type: string}, collectionFormat: multi}\n        \
             - {name: ids, in: query, type: array, items: {type: string}}\n",
            "/a",
        )
        .unwrap();
        assert_eq!(
            mapped.properties["n"],
            json!({"type": "integer", "exclusiveMinimum": 1})
        );
        assert_eq!(mapped.query.len(), 2);
        assert_eq!(mapped.query_vars, ["ids"]);
    }
}
