//! The import pipeline: options checked against the spec, each selected operation built, the
//! manifest written as YAML and compiled by the runtime's compiler from that very text before it
//! is returned (an item the compiler refuses is dropped and skipped with its message), and with
//! `--split-by-tag` then cut into a server and its sets. Pure.

use super::load::{Documents, Version};
use super::naming::{Names, clip, server_name, valid_server_name};
use super::operation::{Built, Context, Item, build};
use super::schema::SchemaConverter;
use super::select::{IMPORTABLE_METHODS, check, methods, operations, selected};
use super::split::{self, Tags};
use super::summary::{Reason, Skipped, Summary};
use super::{ImportError, ImportOptions, Imported, MAX_OBJECT_BYTES, security};
use mcp_declaration::{API_VERSION, CompileOptions, Declaration, KIND, compile, parse_manifest};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Runs the import.
pub(super) fn import(docs: &Documents, options: &ImportOptions) -> Result<Imported, ImportError> {
    security::check_options(docs, &options.secrets)?;
    let base_url = base_url(docs, options.base_url.as_deref())?;
    let info = docs.root().get("info");
    let info_text = |key: &str| {
        info.and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
    };
    let name = match &options.name {
        Some(name) if valid_server_name(name) => name.clone(),
        Some(name) => {
            return Err(ImportError::Option(format!(
                "--name `{name}` is not a Kubernetes name (lower-case letters, digits and `-`, at most 63)"
            )));
        }
        None => server_name(info_text("title").unwrap_or("imported-api")),
    };
    let ctx = Context {
        docs,
        base_url: &base_url,
        secrets: &options.secrets,
        resources: options.resources,
        uri_scheme: &name,
    };
    let ops = operations(docs)?;
    check(&ops, options)?;
    let (methods, read_only_default) = methods(options);
    let mut summary = Summary {
        operations: ops.len(),
        ..Default::default()
    };
    let mut declaration = Declaration {
        title: info_text("title").map(|t| clip(t).replace(['\n', '\r'], " ")),
        version: info_text("version").map(clip),
        instructions: info_text("description").map(clip),
        ..Default::default()
    };
    let mut tool_names = Names::default();
    let mut converter = SchemaConverter::new(docs);
    // Each list's operation labels, to name an item the compiler refuses.
    let mut labels: [Vec<String>; 3] = Default::default();
    // And their first tags, which `--split-by-tag` sorts them by.
    let mut tags: Tags = Default::default();
    for op in &ops {
        if !selected(op, options) {
            summary.filtered += 1;
            continue;
        }
        // OPTIONS and TRACE go on, to be skipped with their reason like before.
        if IMPORTABLE_METHODS.contains(&op.method) && !methods.contains(&op.method) {
            summary.filtered += 1;
            if read_only_default {
                summary.writes_left_out += 1;
            }
            continue;
        }
        let skip = |summary: &mut Summary, reason: Reason| {
            summary.skipped.push(Skipped {
                operation: op.label(),
                reason,
            });
        };
        let emitted = summary.tools + summary.resources + summary.resource_templates;
        if options.max_tools.is_some_and(|max| emitted >= max) {
            skip(&mut summary, Reason::new("over --max-tools", String::new()));
            continue;
        }
        let name = tool_names.tool(op.id(), op.method, op.path);
        let built = match build(&ctx, &mut converter, op, name) {
            Ok(built) => built,
            Err(reason) => {
                skip(&mut summary, reason);
                continue;
            }
        };
        let Built { item, notes } = built;
        summary.notes.extend(notes);
        let tag = op.tags().next().map(str::to_owned);
        match item {
            Item::Tool(tool) => {
                summary.tools += 1;
                declaration.tools.push(*tool);
                labels[0].push(op.label());
                tags[0].push(tag);
            }
            Item::Resource(resource) => {
                summary.resources += 1;
                declaration.resources.push(*resource);
                labels[1].push(op.label());
                tags[1].push(tag);
            }
            Item::Template(template) => {
                summary.resource_templates += 1;
                declaration.resource_templates.push(*template);
                labels[2].push(op.label());
                tags[2].push(tag);
            }
        }
    }
    let yaml = compiled_yaml(
        &name,
        &mut declaration,
        converter.shared(),
        &mut labels,
        &mut tags,
        &mut summary,
    )?;
    if options.strict && !summary.skipped.is_empty() {
        return Err(ImportError::Strict(summary.line()));
    }
    if !options.split_by_tag {
        return Ok(Imported {
            yaml: format!("{}{yaml}", summary.comments()),
            summary,
            sets: Vec::new(),
        });
    }
    drop(yaml);
    let sets = split::sets(&name, &declaration, &tags, converter.shared())?;
    // The server keeps the Secrets its sets' tools read: the pods mount what it lists.
    let secrets = declaration.secret_refs();
    let server = Declaration {
        schemas: BTreeMap::new(),
        tools: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        include: vec![split::include(&name)],
        ..declaration
    };
    let yaml = format!(
        "{}{}",
        summary.comments(),
        manifest_yaml(&name, &server, &secrets)?
    );
    if yaml.len() > MAX_OBJECT_BYTES {
        return Err(ImportError::TooLarge {
            set: format!("MCPServer {name}"),
            bytes: yaml.len(),
        });
    }
    Ok(Imported {
        yaml,
        summary,
        sets,
    })
}

/// Most rounds of dropping items that do not compile.
const MAX_ROUNDS: usize = 3;

/// Writes the manifest, with the shared schemas its tools reach, and compiles it as the runtime
/// will read it. An item the compiler refuses is dropped and skipped with the compiler's
/// message (the importer meant to write only what compiles, so this is the safety net), and the
/// rest compiled again.
fn compiled_yaml(
    name: &str,
    declaration: &mut Declaration,
    shared: &serde_json::Map<String, Value>,
    labels: &mut [Vec<String>; 3],
    tags: &mut Tags,
    summary: &mut Summary,
) -> Result<String, ImportError> {
    let options = CompileOptions {
        read_files: false,
        secrets_dir: None,
        ..Default::default()
    };
    for _ in 0..MAX_ROUNDS {
        declaration.schemas = super::shared::reached(declaration, shared);
        let yaml = manifest_yaml(name, declaration, &declaration.secret_refs())?;
        let manifest = parse_manifest(&yaml, Default::default())
            .map_err(|err| ImportError::Compile(err.to_string()))?;
        let Err(invalid) = compile(&manifest, &options) else {
            return Ok(yaml);
        };
        let mut culprits: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
        for error in invalid.errors {
            // A shared schema the compiler refuses takes down every tool that uses it.
            if let Some(schema) = error
                .path
                .strip_prefix("spec.schemas[")
                .and_then(|rest| rest.split(']').next())
            {
                let users = super::shared::users(declaration, shared, schema);
                if users.is_empty() {
                    return Err(ImportError::Compile(error.to_string()));
                }
                for index in users {
                    culprits
                        .entry((0, index))
                        .or_default()
                        .push(error.to_string());
                }
                continue;
            }
            let item = ["spec.tools[", "spec.resources[", "spec.resourceTemplates["]
                .iter()
                .enumerate()
                .find_map(|(list, prefix)| {
                    let rest = error.path.strip_prefix(prefix)?;
                    let index = rest.split(']').next()?.parse::<usize>().ok()?;
                    Some((list, index))
                })
                .ok_or_else(|| ImportError::Compile(error.to_string()))?;
            culprits.entry(item).or_default().push(error.to_string());
        }
        for ((list, index), errors) in culprits.into_iter().rev() {
            match list {
                0 if index < declaration.tools.len() => {
                    declaration.tools.remove(index);
                    summary.tools -= 1;
                }
                1 if index < declaration.resources.len() => {
                    declaration.resources.remove(index);
                    summary.resources -= 1;
                }
                2 if index < declaration.resource_templates.len() => {
                    declaration.resource_templates.remove(index);
                    summary.resource_templates -= 1;
                }
                _ => return Err(ImportError::Compile(errors.join("; "))),
            }
            tags[list].remove(index);
            let first: Vec<&str> = errors.iter().take(2).map(String::as_str).collect();
            summary.skipped.push(Skipped {
                operation: labels[list].remove(index),
                reason: Reason::new("does not compile", first.join("; ")),
            });
        }
    }
    Err(ImportError::Compile(format!(
        "still refused after {MAX_ROUNDS} rounds of dropping the failing items"
    )))
}

/// The manifest document, `spec.secrets` listing `secrets` (every Secret the tools read).
fn manifest_yaml(
    name: &str,
    declaration: &Declaration,
    secrets: &BTreeSet<String>,
) -> Result<String, ImportError> {
    let mut spec =
        serde_json::to_value(declaration).map_err(|err| ImportError::Compile(err.to_string()))?;
    if let (false, Value::Object(map)) = (secrets.is_empty(), &mut spec) {
        map.insert("secrets".into(), json!(secrets));
    }
    let document = json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": spec,
    });
    serde_yaml_ng::to_string(&document).map_err(|err| ImportError::Compile(err.to_string()))
}

/// The base URL: `--base-url`, else the spec's first server (3.x) or `schemes`, `host` and
/// `basePath` (2.0). It must be absolute with a literal host, as the `http` backend requires.
fn base_url(docs: &Documents, option: Option<&str>) -> Result<String, ImportError> {
    let root = docs.root();
    let (url, from) = match option {
        Some(url) => (url.to_owned(), "--base-url"),
        None if docs.version == Version::Swagger2 => {
            let host = root.get("host").and_then(Value::as_str).ok_or_else(|| {
                ImportError::Option("the spec has no `host`: pass --base-url".into())
            })?;
            let schemes: Vec<&str> = root
                .get("schemes")
                .and_then(Value::as_array)
                .map(|s| s.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let scheme = if schemes.contains(&"https") || schemes.is_empty() {
                "https"
            } else {
                schemes[0]
            };
            let base = root.get("basePath").and_then(Value::as_str).unwrap_or("");
            (format!("{scheme}://{host}{base}"), "the spec's host")
        }
        None => {
            let server = root
                .get("servers")
                .and_then(Value::as_array)
                .and_then(|s| s.first())
                .and_then(|s| s.get("url"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ImportError::Option("the spec lists no `servers`: pass --base-url".into())
                })?;
            if server.contains('{') {
                return Err(ImportError::Option(format!(
                    "the spec's server URL `{server}` has variables: pass --base-url with the literal URL"
                )));
            }
            (server.to_owned(), "the spec's server URL")
        }
    };
    let url = url.trim_end_matches('/').to_owned();
    let problem = if !(url.starts_with("http://") || url.starts_with("https://")) {
        Some("is not an absolute http(s) URL: pass --base-url")
    } else if url.contains(['{', '}', '?', '#', ' ', '@']) {
        Some("must be a literal URL without variables, query, fragment or user info")
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(ImportError::Option(format!("{from} `{url}` {problem}")));
    }
    mcp_declaration::UrlTemplate::parse(&format!("{url}/"))
        .map_err(|message| ImportError::Option(format!("{from} `{url}`: {message}")))?;
    Ok(url)
}
