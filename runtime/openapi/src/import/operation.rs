//! One operation to one tool (or, with `--resources`, a resource or resource template):
//! arguments from parameters and body, the `http` call, output schema and status mappings,
//! annotations from the method, credentials from the security requirement. Pure.

use super::load::Documents;
use super::naming::{Names, clip};
use super::schema::SchemaConverter;
use super::select::Operation;
use super::summary::Reason;
use super::{body, params, responses, security};
use mcp_declaration::{
    Http, HttpMethod, Resource, ResourceTemplate, SecretKeyRef, Tool, ToolAnnotations,
};
use serde_json::{Map, Value, json};

/// What an operation became.
#[derive(Debug)]
pub(super) enum Item {
    /// A tool.
    Tool(Box<Tool>),
    /// A fixed resource.
    Resource(Box<Resource>),
    /// A resource template.
    Template(Box<ResourceTemplate>),
}

/// An imported operation and what was dropped from it.
#[derive(Debug)]
pub(super) struct Built {
    /// The item.
    pub item: Item,
    /// Things dropped, for the summary.
    pub notes: Vec<String>,
}

/// Settings shared by every operation of one import.
pub(super) struct Context<'a> {
    /// The documents.
    pub docs: &'a Documents,
    /// Base URL, without a trailing `/`.
    pub base_url: &'a str,
    /// Security scheme -> Secret key.
    pub secrets: &'a [(String, SecretKeyRef)],
    /// Make resources of GETs that can be.
    pub resources: bool,
    /// URI scheme of resources (the server's name).
    pub uri_scheme: &'a str,
}

/// Builds the item for `op`, named `name`; the schemas it refers to are collected in
/// `converter`, shared by every operation of the import.
pub(super) fn build(
    ctx: &Context,
    converter: &mut SchemaConverter,
    op: &Operation,
    name: String,
) -> Result<Built, Reason> {
    let docs = ctx.docs;
    // Appended to the base URL: `@evil.example.com/x` or `.evil.example.com/x` would change the
    // host the tool calls, and send the Secret's credential there.
    if !op.path.starts_with('/') {
        return Err(Reason::new(
            "path without a leading /",
            "it would change the host of the base URL".into(),
        ));
    }
    let method = match op.method {
        "get" => HttpMethod::Get,
        "put" => HttpMethod::Put,
        "post" => HttpMethod::Post,
        "delete" => HttpMethod::Delete,
        "patch" => HttpMethod::Patch,
        "head" => HttpMethod::Head,
        other => {
            return Err(Reason::new(
                "unsupported method",
                format!("{} requests", other.to_uppercase()),
            ));
        }
    };
    let all_params = params::collect(docs, op)?;
    let mut names = Names::default();
    let mapped = params::map(docs, converter, &mut names, op.path, &all_params)?;
    let body = body::map(docs, converter, &mut names, op, &all_params)?;
    if body.is_some() && matches!(method, HttpMethod::Get | HttpMethod::Head) {
        return Err(Reason::new(
            "unsupported body",
            "a GET or HEAD request with a body".into(),
        ));
    }
    let auth = security::map(docs, op, ctx.secrets)?;
    let answers = responses::map(docs, converter, op);
    let mut notes = mapped.notes.clone();
    notes.extend(answers.notes.iter().cloned());

    let mut url = format!("{}{}", ctx.base_url, mapped.path);
    if !mapped.query_vars.is_empty() {
        url.push_str(&format!("{{?{}}}", mapped.query_vars.join(",")));
    }
    let mut properties = mapped.properties.clone();
    let mut required = mapped.required.clone();
    if let Some(body) = &body {
        properties.extend(body.properties.clone());
        required.extend(body.required.clone());
    }
    let mut input = Map::new();
    input.insert("type".into(), json!("object"));
    input.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input.insert("required".into(), json!(required));
    }
    input.insert("additionalProperties".into(), json!(false));

    let text = |key: &str| {
        op.op
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    let title = text("summary").map(|s| clip(s).replace(['\n', '\r'], " "));
    let mut description = text("description").or(text("summary")).map(clip);
    if op.op.get("deprecated") == Some(&json!(true)) {
        description = Some(format!("Deprecated. {}", description.unwrap_or_default()));
    }
    let mut query = mapped.query.clone();
    query.extend(auth.query);
    let mut headers = mapped.headers.clone();
    headers.extend(auth.headers);

    let http = Http {
        method,
        url,
        query,
        headers,
        body: body.map(|b| b.body),
        ..Default::default()
    };

    if ctx.resources
        && method == HttpMethod::Get
        && !mapped.non_path
        && let Some(item) = resource(
            ctx,
            &name,
            &mapped.path,
            title.clone(),
            description.clone(),
            &http,
            answers.output_schema.is_some(),
        )
    {
        return Ok(Built { item, notes });
    }

    let read_only = matches!(method, HttpMethod::Get | HttpMethod::Head);
    let annotations = ToolAnnotations {
        title: None,
        read_only_hint: read_only.then_some(true),
        destructive_hint: (method == HttpMethod::Delete).then_some(true),
        idempotent_hint: matches!(method, HttpMethod::Put | HttpMethod::Delete).then_some(true),
        open_world_hint: None,
    };
    let tool = Tool {
        name,
        title,
        description,
        input_schema: Some(input),
        output_schema: answers.output_schema,
        annotations: Some(annotations),
        http: Some(Http {
            responses: answers.responses,
            ..http
        }),
        ..Default::default()
    };
    Ok(Built {
        item: Item::Tool(Box::new(tool)),
        notes,
    })
}

/// A GET with no parameters, or path parameters in plain `{x}` form only, as a resource.
fn resource(
    ctx: &Context,
    name: &str,
    path: &str,
    title: Option<String>,
    description: Option<String>,
    http: &Http,
    json: bool,
) -> Option<Item> {
    let uri = format!("{}:{}", ctx.uri_scheme, path);
    let mime_type = json.then(|| "application/json".to_owned());
    if !path.contains('{') {
        return Some(Item::Resource(Box::new(Resource {
            uri,
            name: name.to_owned(),
            title,
            description,
            mime_type,
            http: Some(http.clone()),
            ..Default::default()
        })));
    }
    let plain = path
        .split('{')
        .skip(1)
        .all(|rest| rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
    plain.then(|| {
        Item::Template(Box::new(ResourceTemplate {
            uri_template: uri,
            name: name.to_owned(),
            title,
            description,
            mime_type,
            http: Some(http.clone()),
            ..Default::default()
        }))
    })
}
