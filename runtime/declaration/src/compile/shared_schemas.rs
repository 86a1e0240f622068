//! `spec.schemas`: JSON Schemas shared by reference (`{$ref: "#/schemas/NAME"}`) within one
//! declaration, checked once and resolved into each schema that uses them.
//!
//! What a client sees: every tool's `inputSchema` and `outputSchema` is self-contained. The
//! shared schemas it reaches (directly or through each other) are copied under its own `$defs`
//! and its references rewritten to `#/$defs/NAME`, instead of being inlined at every use. That
//! keeps `tools/list` about as small as the declaration (a schema used ten times in one tool is
//! sent once), is plain JSON Schema 2020-12 that clients and validators resolve locally, and
//! keeps recursive schemas (a tree node whose children are nodes) expressible, which inlining
//! cannot. Only a reference that stands for the whole root (`inputSchema: {$ref: ...}`) is
//! replaced by its target, so the root keeps `type: object` and its `properties` in sight.
//! Pure.

use super::schema_walk::{MAX_NESTING, Visit, walk};
use crate::field_error::FieldError;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Most entries of `spec.schemas`. The largest public APIs have about a thousand component
/// schemas (GitHub's REST API 969, Kubernetes' 862); the bound keeps the compile's work and the
/// CRD's `maxProperties` finite with room to spare.
pub const MAX_SHARED_SCHEMAS: usize = 4096;
/// Longest name of a shared schema; names are OpenAPI's component-name characters
/// (`A-Za-z0-9._-`), so a name is a JSON Pointer token as it stands.
const MAX_NAME_LEN: usize = 128;
/// Most bytes (as JSON) of the shared schemas one tool schema reaches. They are copied into that
/// tool's `tools/list` entry; real APIs need far less (the most any tool of the Kubernetes API
/// reaches, a workload's object graph, is 0.22 MB; GitHub's most is 0.07 MB).
const MAX_REACHED_BYTES: usize = 4 << 20;
/// Most bytes (as JSON) of shared schemas copied into all the tools together. References let a
/// small manifest stand for a huge `tools/list`: this bounds the memory a declaration can make
/// the runtime hold, well above what the Kubernetes API's 1,196 tools copy (27 MB).
const MAX_TOTAL_BYTES: usize = 256 << 20;

/// How a declaration refers to a shared schema.
const PREFIX: &str = "#/schemas/";
/// Where the shared schemas live inside a resolved schema.
const DEFS_PREFIX: &str = "#/$defs/";

/// The shared schemas of a declaration, checked, their references already rewritten.
#[derive(Default)]
pub(super) struct SharedSchemas {
    entries: HashMap<String, Entry>,
    /// Names declared but refused (reported once, at `spec.schemas`): a reference to one is not
    /// reported again as unknown.
    refused: BTreeSet<String>,
    /// Bytes copied into tool schemas so far.
    copied: usize,
    /// Whether [`MAX_TOTAL_BYTES`] was reported.
    over_total: bool,
}

struct Entry {
    /// The schema, its `#/schemas/` references rewritten to `#/$defs/`.
    schema: Value,
    /// The shared schemas it refers to directly.
    refs: BTreeSet<String>,
    /// Its size as JSON.
    bytes: usize,
}

/// One `$ref` to a shared schema found in a shared schema.
struct Edge {
    to: String,
    path: String,
    descended: bool,
}

/// The shared schema a reference names, and whether it names the whole of it.
fn target(reference: &str) -> Option<(&str, bool)> {
    target_as(reference, PREFIX)
}

/// [`target`] of a reference spelled with `prefix` (shared schemas refer to each other with
/// [`DEFS_PREFIX`] once rewritten).
fn target_as<'r>(reference: &'r str, prefix: &str) -> Option<(&'r str, bool)> {
    let rest = reference.strip_prefix(prefix)?;
    let name = rest.split('/').next().unwrap_or(rest);
    Some((name, name.len() == rest.len()))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

impl SharedSchemas {
    /// Checks `spec.schemas`: names, references (only to other shared schemas, all declared),
    /// no `$id`, and no cycle of references that never descends into the value.
    pub(super) fn compile(
        declared: &BTreeMap<String, Value>,
        errors: &mut Vec<FieldError>,
    ) -> Self {
        let mut shared = Self::default();
        let mut error = |path: String, message: String| errors.push(FieldError { path, message });
        if declared.len() > MAX_SHARED_SCHEMAS {
            error(
                "spec.schemas".into(),
                format!(
                    "declares {} schemas, more than {MAX_SHARED_SCHEMAS}",
                    declared.len()
                ),
            );
            shared.refused = declared.keys().cloned().collect();
            return shared;
        }
        let mut edges: BTreeMap<&str, Vec<Edge>> = BTreeMap::new();
        for (name, schema) in declared {
            let path = format!("spec.schemas[{name}]");
            if !valid_name(name) {
                error(
                    path,
                    format!(
                        "a shared schema's name must be 1-{MAX_NAME_LEN} characters of A-Z, a-z, 0-9, `.`, `_` and `-`"
                    ),
                );
                shared.refused.insert(name.clone());
                continue;
            }
            if !(schema.is_object() || schema.is_boolean()) {
                error(
                    path,
                    "must be a JSON Schema (an object or a boolean)".into(),
                );
                shared.refused.insert(name.clone());
                continue;
            }
            let mut schema = schema.clone();
            let mut found = Vec::new();
            let mut problems = Vec::new();
            let walked = walk(&mut schema, &path, &mut |visit: Visit<'_>| {
                if visit.schema.contains_key("$id") {
                    problems.push((
                        format!("{}.$id", visit.path),
                        "is not allowed in a shared schema: it would change what the references \
                         of the tool schemas it is copied into resolve against"
                            .to_owned(),
                    ));
                }
                let Some(Value::String(reference)) = visit.schema.get_mut("$ref") else {
                    return;
                };
                let at = format!("{}.$ref", visit.path);
                match target(reference) {
                    Some((to, _)) => {
                        found.push(Edge {
                            to: to.to_owned(),
                            path: at,
                            descended: visit.descended,
                        });
                        *reference = reference.replacen(PREFIX, DEFS_PREFIX, 1);
                    }
                    None => problems.push((
                        at,
                        format!(
                            "`{reference}`: a shared schema may refer only to other shared \
                             schemas (`{PREFIX}NAME`), as it is copied into many tool schemas"
                        ),
                    )),
                }
            });
            if let Err(deep) = walked {
                problems.push((deep, format!("nests deeper than {MAX_NESTING} levels")));
            }
            for edge in &found {
                if !declared.contains_key(&edge.to) {
                    problems.push((
                        edge.path.clone(),
                        format!("unknown shared schema `{}` (not in spec.schemas)", edge.to),
                    ));
                }
            }
            if !problems.is_empty() {
                for (path, message) in problems {
                    error(path, message);
                }
                shared.refused.insert(name.clone());
                continue;
            }
            let bytes = serde_json::to_vec(&schema).map_or(0, |text| text.len());
            let refs = found.iter().map(|edge| edge.to.clone()).collect();
            edges.insert(name, found);
            shared.entries.insert(
                name.clone(),
                Entry {
                    schema,
                    refs,
                    bytes,
                },
            );
        }
        for (path, message, members) in endless_cycles(&edges) {
            error(path, message);
            for member in members {
                shared.entries.remove(&member);
                shared.refused.insert(member);
            }
        }
        shared
    }

    /// `schema` (found at `path`, such as `spec.tools[3].inputSchema`) made self-contained: a
    /// root that is only a reference replaced by its target, every `#/schemas/NAME` rewritten to
    /// `#/$defs/NAME`, and the shared schemas it reaches added to its `$defs`. `None` when it
    /// cannot be (the errors say why).
    pub(super) fn resolve(
        &mut self,
        path: &str,
        schema: &Map<String, Value>,
        errors: &mut Vec<FieldError>,
    ) -> Option<Map<String, Value>> {
        let errors_before = errors.len();
        let mut error = |path: String, message: String| errors.push(FieldError { path, message });
        let mut reached: BTreeSet<String> = BTreeSet::new();
        // Refers to a shared schema already reported as refused: no schema, no second error.
        let mut refused = false;
        // `inputSchema: {$ref: "#/schemas/Args"}` is the schema `Args`: inlined, so that the
        // root's `type` and `properties` are where MCP clients (and the compiler) look for them.
        let mut root = Value::Object(schema.clone());
        let mut prefix = PREFIX;
        while let Some(entry) = self.whole(&root, prefix) {
            root = entry.schema.clone();
            reached.extend(entry.refs.iter().cloned());
            prefix = DEFS_PREFIX;
        }
        let walked = walk(&mut root, path, &mut |visit: Visit<'_>| {
            let Some(Value::String(reference)) = visit.schema.get_mut("$ref") else {
                return;
            };
            let Some((name, _)) = target(reference) else {
                return;
            };
            if self.entries.contains_key(name) {
                reached.insert(name.to_owned());
            } else if self.refused.contains(name) {
                refused = true;
            } else {
                error(
                    format!("{}.$ref", visit.path),
                    format!("unknown shared schema `{name}` (not in spec.schemas)"),
                );
            }
            *reference = reference.replacen(PREFIX, DEFS_PREFIX, 1);
        });
        if let Err(deep) = walked {
            error(deep, format!("nests deeper than {MAX_NESTING} levels"));
        }
        let Value::Object(mut root) = root else {
            error(
                path.to_owned(),
                "refers to a shared schema that is not an object schema".into(),
            );
            return None;
        };
        let reached = self.closure(reached);
        let bytes: usize = reached.iter().map(|name| self.entries[name].bytes).sum();
        if bytes > MAX_REACHED_BYTES {
            error(
                path.to_owned(),
                format!(
                    "reaches {} shared schemas of {bytes} bytes in all, more than the \
                     {MAX_REACHED_BYTES} one schema may carry",
                    reached.len()
                ),
            );
            return None;
        }
        self.copied = self.copied.saturating_add(bytes);
        if self.copied > MAX_TOTAL_BYTES && !self.over_total {
            self.over_total = true;
            error(
                path.to_owned(),
                format!(
                    "the shared schemas copied into the tools' schemas so far add up to more than \
                     {MAX_TOTAL_BYTES} bytes: split the server, or share less"
                ),
            );
        }
        if !reached.is_empty() {
            let defs = root
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            match defs {
                Value::Object(defs) => {
                    for name in reached {
                        if defs.contains_key(&name) {
                            error(
                                format!("{path}.$defs.{name}"),
                                "is also the name of a shared schema it uses (spec.schemas): \
                                 rename one"
                                    .into(),
                            );
                        } else {
                            defs.insert(name.clone(), self.entries[&name].schema.clone());
                        }
                    }
                }
                _ => error(
                    format!("{path}.$defs"),
                    "must be an object, to hold the shared schemas it uses".into(),
                ),
            }
        }
        (errors.len() == errors_before && !refused).then_some(root)
    }

    /// The shared schema `schema` is nothing but a reference to (spelled with `prefix`: as
    /// declared in a tool, or as rewritten in a shared schema), if any. A chain of such
    /// references ends: a cycle of them is refused by [`SharedSchemas::compile`].
    fn whole(&self, schema: &Value, prefix: &str) -> Option<&Entry> {
        schema
            .as_object()
            .filter(|map| map.len() == 1)
            .and_then(|map| map.get("$ref"))
            .and_then(Value::as_str)
            .and_then(|reference| target_as(reference, prefix))
            .filter(|(_, whole)| *whole)
            .and_then(|(name, _)| self.entries.get(name))
    }

    /// A schema that must stay flat (an elicited form field: MCP forms carry no references):
    /// when it is only a reference to a shared schema, that schema; else `schema` itself.
    pub(super) fn inline(&self, schema: &Map<String, Value>) -> Map<String, Value> {
        let mut root = Value::Object(schema.clone());
        let mut prefix = PREFIX;
        while let Some(entry) = self.whole(&root, prefix) {
            root = entry.schema.clone();
            prefix = DEFS_PREFIX;
        }
        match root {
            Value::Object(map) => map,
            _ => schema.clone(),
        }
    }

    /// `names` and every shared schema they reach.
    fn closure(&self, names: BTreeSet<String>) -> BTreeSet<String> {
        let mut todo: Vec<String> = names.into_iter().collect();
        let mut reached = BTreeSet::new();
        while let Some(name) = todo.pop() {
            let Some(entry) = self.entries.get(&name) else {
                continue;
            };
            if reached.insert(name) {
                todo.extend(entry.refs.iter().cloned());
            }
        }
        reached
    }
}

/// Each cycle of references that never descends into the value (`A: {$ref: B}`,
/// `B: {allOf: [{$ref: A}]}`): validating against it would go round forever. One error per
/// cycle, at the reference that closes it, with its members.
fn endless_cycles(edges: &BTreeMap<&str, Vec<Edge>>) -> Vec<(String, String, Vec<String>)> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut marks: HashMap<&str, Mark> = edges.keys().map(|name| (*name, Mark::New)).collect();
    let mut found = Vec::new();
    for &start in edges.keys() {
        if marks[start] != Mark::New {
            continue;
        }
        // Depth first without recursion: (node, next edge to try); `trail` is the open path.
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        marks.insert(start, Mark::Open);
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            top.1 += 1;
            let out = edges[node].iter().filter(|e| !e.descended).nth(next);
            let Some(edge) = out else {
                marks.insert(node, Mark::Done);
                stack.pop();
                continue;
            };
            let to = edge.to.as_str();
            match marks.get(to).copied() {
                Some(Mark::New) => {
                    marks.insert(to, Mark::Open);
                    stack.push((to, 0));
                }
                Some(Mark::Open) => {
                    let from = stack.iter().position(|(n, _)| *n == to).unwrap_or_default();
                    let members: Vec<String> =
                        stack[from..].iter().map(|(n, _)| (*n).to_owned()).collect();
                    let chain: Vec<&str> = members.iter().map(String::as_str).chain([to]).collect();
                    found.push((
                        edge.path.clone(),
                        format!(
                            "the cycle {} never descends into a property or an item, so \
                             validating against it would never end",
                            chain.join(" -> ")
                        ),
                        members,
                    ));
                }
                // Done, or refused (not in `edges`): nothing more to find there.
                _ => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
