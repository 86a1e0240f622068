//! `spec.include`: the `MCPToolSet`s a server selects, checked against the grants of other
//! namespaces and merged with the server's own items into one declaration, which the compiler
//! then checks as a whole. The operator resolves with the sets and grants it watches; `serve`
//! with the ones in its manifest files. Pure.

use crate::field_error::FieldError;
use crate::glob::glob;
use crate::types::{
    Declaration, Include, MAX_EXCLUDES, MAX_INCLUDED_SETS, MAX_INCLUDES, ToolSetGrantSpec,
    ToolSetSpec,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// An `MCPToolSet` object: where it lives and what it declares.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolSet {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`, for selectors.
    pub labels: BTreeMap<String, String>,
    /// What it declares.
    pub spec: ToolSetSpec,
}

/// An `MCPToolSetGrant` object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolSetGrant {
    /// `metadata.namespace`: the namespace whose sets it grants.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// To whom, and which sets.
    pub spec: ToolSetGrantSpec,
}

/// Why an include cannot be served; the operator turns each into its condition's reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeProblem {
    /// An entry is malformed (both or neither of `name` and `selector`, a bad `prefix`, too many).
    Invalid,
    /// A set named by `name` does not exist.
    NotFound,
    /// A set of another namespace is selected, and that namespace does not grant it.
    NotGranted,
    /// Two sources declare an item of the same name, or a shared schema differently.
    Conflict,
}

/// One problem of `spec.include`, at its field.
#[derive(Clone, Debug, PartialEq)]
pub struct IncludeError {
    /// What kind of problem.
    pub problem: IncludeProblem,
    /// Where and what.
    pub error: FieldError,
}

/// A set a server includes, with how many of its items it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludedSet {
    /// The set's namespace.
    pub namespace: String,
    /// The set's name.
    pub name: String,
    /// Tools, resources, resource templates and prompts taken from it.
    pub items: usize,
}

/// A declaration with its includes merged in (its `include` is then empty).
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The server's own items followed by those of each included set, in `include` order.
    pub declaration: Declaration,
    /// The sets taken, in that order.
    pub sets: Vec<IncludedSet>,
}

/// Merges the sets `declaration.include` selects into it. `namespace` is the server's;
/// `sets` and `grants` are every object the caller knows (of any namespace). Every problem is
/// reported, not only the first.
pub fn resolve_includes(
    namespace: &str,
    declaration: &Declaration,
    sets: &[ToolSet],
    grants: &[ToolSetGrant],
) -> Result<Resolved, Vec<IncludeError>> {
    let mut errors = Vec::new();
    if declaration.include.len() > MAX_INCLUDES {
        errors.push(problem(
            IncludeProblem::Invalid,
            "spec.include".into(),
            format!(
                "has {} entries; at most {MAX_INCLUDES}",
                declaration.include.len()
            ),
        ));
        return Err(errors);
    }
    let mut selected: Vec<(usize, &Include, &ToolSet)> = Vec::new();
    for (index, include) in declaration.include.iter().enumerate() {
        let path = format!("spec.include[{index}]");
        if let Some(error) = malformed(include, &path) {
            errors.push(error);
            continue;
        }
        let from = include.namespace.as_deref().unwrap_or(namespace);
        let mut matching: Vec<&ToolSet> = sets
            .iter()
            .filter(|set| include.selects(namespace, &set.namespace, &set.name, &set.labels))
            .collect();
        matching.sort_by(|a, b| a.name.cmp(&b.name));
        if let (Some(name), []) = (&include.name, matching.as_slice()) {
            errors.push(problem(
                IncludeProblem::NotFound,
                format!("{path}.name"),
                format!("MCPToolSet {from}/{name} does not exist"),
            ));
        }
        for set in matching {
            if from != namespace && !granted(grants, set, namespace) {
                errors.push(problem(
                    IncludeProblem::NotGranted,
                    path.clone(),
                    format!(
                        "MCPToolSet {from}/{} is in another namespace, and no MCPToolSetGrant \
                         in {from} grants it to namespace {namespace}",
                        set.name
                    ),
                ));
                continue;
            }
            selected.push((index, include, set));
        }
    }
    if selected.len() > MAX_INCLUDED_SETS {
        errors.push(problem(
            IncludeProblem::Invalid,
            "spec.include".into(),
            format!(
                "selects {} sets; at most {MAX_INCLUDED_SETS}",
                selected.len()
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut merged = Merge::new(declaration);
    let mut taken = Vec::new();
    for (index, include, set) in selected {
        let source = format!(
            "MCPToolSet {}/{} (spec.include[{index}])",
            set.namespace, set.name
        );
        let items = merged.add(include, &set.spec, &source, &mut errors);
        taken.push(IncludedSet {
            namespace: set.namespace.clone(),
            name: set.name.clone(),
            items,
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Resolved {
        declaration: merged.declaration,
        sets: taken,
    })
}

fn problem(problem: IncludeProblem, path: String, message: String) -> IncludeError {
    IncludeError {
        problem,
        error: FieldError { path, message },
    }
}

/// What is wrong with one entry on its own, if anything.
fn malformed(include: &Include, path: &str) -> Option<IncludeError> {
    let invalid = |field: &str, message: String| {
        Some(problem(
            IncludeProblem::Invalid,
            format!("{path}{field}"),
            message,
        ))
    };
    if include.name.is_some() == include.selector.is_some() {
        return invalid("", "give exactly one of `name` and `selector`".into());
    }
    if let Some(prefix) = &include.prefix {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if prefix.is_empty() || prefix.len() > 64 || !prefix.chars().all(allowed) {
            return invalid(
                ".prefix",
                "expected 1 to 64 characters of `A-Za-z0-9_-.` (it begins tool and prompt names)"
                    .into(),
            );
        }
    }
    if include.exclude.len() > MAX_EXCLUDES {
        return invalid(
            ".exclude",
            format!(
                "has {} patterns; at most {MAX_EXCLUDES}",
                include.exclude.len()
            ),
        );
    }
    None
}

/// Whether a grant in the set's namespace gives it to servers of `namespace`.
fn granted(grants: &[ToolSetGrant], set: &ToolSet, namespace: &str) -> bool {
    grants
        .iter()
        .filter(|grant| grant.namespace == set.namespace)
        .any(|grant| {
            grant
                .spec
                .from
                .iter()
                .any(|from| from.namespace == namespace)
                && (grant.spec.to.is_empty() || grant.spec.to.iter().any(|to| to.name == set.name))
        })
}

/// The declaration being merged, and which source declared each name so far.
struct Merge {
    declaration: Declaration,
    tools: HashMap<String, String>,
    prompts: HashMap<String, String>,
    resources: HashMap<String, String>,
    templates: HashMap<String, String>,
    schemas: HashMap<String, String>,
}

const SERVER: &str = "this MCPServer";

impl Merge {
    fn new(declaration: &Declaration) -> Self {
        let own = |names: Vec<&String>| {
            names
                .into_iter()
                .map(|name| (name.clone(), SERVER.to_owned()))
                .collect::<HashMap<_, _>>()
        };
        Self {
            tools: own(declaration.tools.iter().map(|t| &t.name).collect()),
            prompts: own(declaration.prompts.iter().map(|p| &p.name).collect()),
            resources: own(declaration.resources.iter().map(|r| &r.uri).collect()),
            templates: own(declaration
                .resource_templates
                .iter()
                .map(|t| &t.uri_template)
                .collect()),
            schemas: own(declaration.schemas.keys().collect()),
            declaration: Declaration {
                include: Vec::new(),
                ..declaration.clone()
            },
        }
    }

    /// Adds a set's items as `include` takes them; returns how many were taken.
    fn add(
        &mut self,
        include: &Include,
        set: &ToolSetSpec,
        source: &str,
        errors: &mut Vec<IncludeError>,
    ) -> usize {
        let kept = |name: &str| !include.exclude.iter().any(|pattern| glob(pattern, name));
        let prefixed = |name: &str| format!("{}{name}", include.prefix.as_deref().unwrap_or(""));
        let before = self.item_count();
        for tool in set.tools.iter().filter(|t| kept(&t.name)) {
            let name = prefixed(&tool.name);
            if claim(&mut self.tools, "tool", &name, source, errors) {
                self.declaration.tools.push(super::types::Tool {
                    name,
                    ..tool.clone()
                });
            }
        }
        for prompt in set.prompts.iter().filter(|p| kept(&p.name)) {
            let name = prefixed(&prompt.name);
            if claim(&mut self.prompts, "prompt", &name, source, errors) {
                self.declaration.prompts.push(super::types::Prompt {
                    name,
                    ..prompt.clone()
                });
            }
        }
        for resource in set.resources.iter().filter(|r| kept(&r.name)) {
            if claim(
                &mut self.resources,
                "resource",
                &resource.uri,
                source,
                errors,
            ) {
                self.declaration.resources.push(resource.clone());
            }
        }
        for template in set.resource_templates.iter().filter(|t| kept(&t.name)) {
            let key = &template.uri_template;
            if claim(
                &mut self.templates,
                "resource template",
                key,
                source,
                errors,
            ) {
                self.declaration.resource_templates.push(template.clone());
            }
        }
        for (name, schema) in &set.schemas {
            self.add_schema(name, schema, source, errors);
        }
        self.item_count() - before
    }

    /// A shared schema: the same name may come from several sources only with one definition
    /// (sets imported from one API share them).
    fn add_schema(
        &mut self,
        name: &str,
        schema: &Value,
        source: &str,
        errors: &mut Vec<IncludeError>,
    ) {
        match self.declaration.schemas.get(name) {
            Some(existing) if existing == schema => {}
            Some(_) => errors.push(problem(
                IncludeProblem::Conflict,
                "spec.include".into(),
                format!(
                    "shared schema `{name}` is defined by {} and differently by {source}",
                    self.schemas[name]
                ),
            )),
            None => {
                self.schemas.insert(name.to_owned(), source.to_owned());
                self.declaration
                    .schemas
                    .insert(name.to_owned(), schema.clone());
            }
        }
    }

    fn item_count(&self) -> usize {
        let d = &self.declaration;
        d.tools.len() + d.prompts.len() + d.resources.len() + d.resource_templates.len()
    }
}

/// Records that `source` declares `name`; a second source is a conflict naming both.
fn claim(
    names: &mut HashMap<String, String>,
    kind: &str,
    name: &str,
    source: &str,
    errors: &mut Vec<IncludeError>,
) -> bool {
    if let Some(first) = names.get(name) {
        errors.push(problem(
            IncludeProblem::Conflict,
            "spec.include".into(),
            format!("{kind} `{name}` is declared by {first} and by {source}"),
        ));
        return false;
    }
    names.insert(name.to_owned(), source.to_owned());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{GrantFrom, GrantTo, LabelOperator, LabelRequirement, LabelSelector};

    fn declaration(yaml: &str) -> Declaration {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn set(namespace: &str, name: &str, labels: &[(&str, &str)], spec: &str) -> ToolSet {
        ToolSet {
            namespace: namespace.into(),
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            spec: serde_yaml_ng::from_str(spec).unwrap(),
        }
    }

    fn grant(namespace: &str, from: &str, to: &[&str]) -> ToolSetGrant {
        ToolSetGrant {
            namespace: namespace.into(),
            name: "grant".into(),
            spec: ToolSetGrantSpec {
                from: vec![GrantFrom {
                    namespace: from.into(),
                }],
                to: to
                    .iter()
                    .map(|name| GrantTo {
                        name: (*name).into(),
                    })
                    .collect(),
            },
        }
    }

    fn sets() -> Vec<ToolSet> {
        vec![
            set(
                "ops",
                "pods",
                &[("api", "k8s")],
                "{tools: [{name: get_pod, content: []}, {name: delete_pod, content: []}], \
                 prompts: [{name: triage, messages: []}], \
                 resources: [{name: pod_docs, uri: 'docs://pods', text: pods}], \
                 schemas: {Pod: {type: object}}}",
            ),
            set(
                "ops",
                "nodes",
                &[("api", "k8s"), ("tier", "admin")],
                "{tools: [{name: get_node, content: []}], schemas: {Pod: {type: object}}}",
            ),
            set(
                "billing",
                "invoices",
                &[("api", "billing")],
                "{tools: [{name: get_invoice, content: []}]}",
            ),
        ]
    }

    fn names(resolved: &Resolved) -> Vec<&str> {
        resolved
            .declaration
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect()
    }

    fn problems(errors: &[IncludeError]) -> Vec<(IncludeProblem, String)> {
        errors
            .iter()
            .map(|e| (e.problem, e.error.to_string()))
            .collect()
    }

    #[test]
    fn a_selector_takes_every_matching_set_in_name_order() {
        let server = declaration(
            "{include: [{selector: {matchLabels: {api: k8s}}}], tools: [{name: own, content: []}]}",
        );
        let resolved = resolve_includes("ops", &server, &sets(), &[]).unwrap();
        assert_eq!(
            names(&resolved),
            ["own", "get_node", "get_pod", "delete_pod"]
        );
        assert!(resolved.declaration.include.is_empty());
        let taken: Vec<_> = resolved
            .sets
            .iter()
            .map(|s| (s.name.as_str(), s.items))
            .collect();
        assert_eq!(taken, [("nodes", 1), ("pods", 4)]);
        // Both sets define `Pod` identically: one shared schema.
        assert_eq!(resolved.declaration.schemas.len(), 1);
        assert_eq!(resolved.declaration.prompts[0].name, "triage");
        assert_eq!(resolved.declaration.resources[0].uri, "docs://pods");
    }

    #[test]
    fn match_expressions_select_like_kubernetes() {
        let server = declaration(
            "{include: [{selector: {matchLabels: {api: k8s}, \
             matchExpressions: [{key: tier, operator: DoesNotExist}]}}]}",
        );
        let resolved = resolve_includes("ops", &server, &sets(), &[]).unwrap();
        assert_eq!(names(&resolved), ["get_pod", "delete_pod"]);
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        let requirement = |operator, values: &[&str]| LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelRequirement {
                key: "tier".into(),
                operator,
                values: values.iter().map(|v| (*v).to_owned()).collect(),
            }],
        };
        let admin = labels(&[("tier", "admin")]);
        let none = labels(&[]);
        assert!(requirement(LabelOperator::In, &["admin", "x"]).matches(&admin));
        assert!(!requirement(LabelOperator::In, &["x"]).matches(&admin));
        assert!(!requirement(LabelOperator::In, &["admin"]).matches(&none));
        assert!(requirement(LabelOperator::NotIn, &["x"]).matches(&admin));
        assert!(requirement(LabelOperator::NotIn, &["x"]).matches(&none));
        assert!(!requirement(LabelOperator::NotIn, &["admin"]).matches(&admin));
        assert!(requirement(LabelOperator::Exists, &[]).matches(&admin));
        assert!(!requirement(LabelOperator::Exists, &[]).matches(&none));
        assert!(LabelSelector::default().matches(&admin));
    }

    #[test]
    fn prefix_renames_tools_and_prompts_and_exclude_uses_the_original_names() {
        let server =
            declaration("{include: [{name: pods, prefix: k8s_, exclude: ['delete_*', pod_docs]}]}");
        let resolved = resolve_includes("ops", &server, &sets(), &[]).unwrap();
        assert_eq!(names(&resolved), ["k8s_get_pod"]);
        assert_eq!(resolved.declaration.prompts[0].name, "k8s_triage");
        assert!(resolved.declaration.resources.is_empty());
        assert_eq!(resolved.sets[0].items, 2);
    }

    #[test]
    fn a_name_twice_is_a_conflict_naming_both_sources() {
        let server = declaration(
            "{include: [{name: pods}, {name: pods, exclude: [triage, pod_docs]}], \
             tools: [{name: get_pod, content: []}]}",
        );
        let errors = resolve_includes("ops", &server, &sets(), &[]).unwrap_err();
        assert_eq!(
            problems(&errors),
            [
                (
                    IncludeProblem::Conflict,
                    "spec.include: tool `get_pod` is declared by this MCPServer and by \
                     MCPToolSet ops/pods (spec.include[0])"
                        .to_owned()
                ),
                (
                    IncludeProblem::Conflict,
                    "spec.include: tool `get_pod` is declared by this MCPServer and by \
                     MCPToolSet ops/pods (spec.include[1])"
                        .to_owned()
                ),
                (
                    IncludeProblem::Conflict,
                    "spec.include: tool `delete_pod` is declared by MCPToolSet ops/pods \
                     (spec.include[0]) and by MCPToolSet ops/pods (spec.include[1])"
                        .to_owned()
                ),
            ]
        );
        // A different prefix makes them two tools.
        let prefixed = declaration("{include: [{name: pods}, {name: pods, prefix: again_}]}");
        let resolved = resolve_includes("ops", &prefixed, &sets(), &[]);
        let errors = resolved.unwrap_err();
        assert!(
            errors[0].error.message.contains("resource `docs://pods`"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_schema_defined_twice_differently_is_a_conflict() {
        let mut sets = sets();
        sets[1]
            .spec
            .schemas
            .insert("Pod".into(), serde_json::json!({"type": "string"}));
        let server = declaration("{include: [{selector: {matchLabels: {api: k8s}}}]}");
        let errors = resolve_includes("ops", &server, &sets, &[]).unwrap_err();
        assert_eq!(
            problems(&errors),
            [(
                IncludeProblem::Conflict,
                "spec.include: shared schema `Pod` is defined by MCPToolSet ops/nodes \
                 (spec.include[0]) and differently by MCPToolSet ops/pods (spec.include[0])"
                    .to_owned()
            )]
        );
    }

    #[test]
    fn another_namespace_needs_its_grant() {
        let server = declaration("{include: [{name: invoices, namespace: billing}]}");
        let errors = resolve_includes("ops", &server, &sets(), &[]).unwrap_err();
        assert_eq!(
            problems(&errors),
            [(
                IncludeProblem::NotGranted,
                "spec.include[0]: MCPToolSet billing/invoices is in another namespace, and no \
                 MCPToolSetGrant in billing grants it to namespace ops"
                    .to_owned()
            )]
        );
        // A grant in the wrong namespace, to another namespace, or for other sets does not count.
        for wrong in [
            grant("ops", "ops", &[]),
            grant("billing", "dev", &[]),
            grant("billing", "ops", &["receipts"]),
        ] {
            let refused = resolve_includes("ops", &server, &sets(), std::slice::from_ref(&wrong));
            assert!(refused.is_err(), "{wrong:?}");
        }
        for right in [
            grant("billing", "ops", &[]),
            grant("billing", "ops", &["invoices"]),
        ] {
            let resolved = resolve_includes("ops", &server, &sets(), &[right]).unwrap();
            assert_eq!(names(&resolved), ["get_invoice"]);
        }
    }

    #[test]
    fn a_missing_named_set_is_not_found_but_an_empty_selection_is_fine() {
        let server = declaration("{include: [{name: gone}, {selector: {matchLabels: {api: x}}}]}");
        let errors = resolve_includes("ops", &server, &sets(), &[]).unwrap_err();
        assert_eq!(
            problems(&errors),
            [(
                IncludeProblem::NotFound,
                "spec.include[0].name: MCPToolSet ops/gone does not exist".to_owned()
            )]
        );
        let selector_only = declaration("{include: [{selector: {matchLabels: {api: x}}}]}");
        let resolved = resolve_includes("ops", &selector_only, &sets(), &[]).unwrap();
        assert!(resolved.sets.is_empty());
    }

    #[test]
    fn malformed_entries_are_refused_at_their_field() {
        let server = declaration(
            "{include: [{}, {name: a, selector: {}}, {name: pods, prefix: 'a b'}, \
             {name: pods, prefix: ''}]}",
        );
        let errors = resolve_includes("ops", &server, &sets(), &[]).unwrap_err();
        let paths: Vec<_> = errors.iter().map(|e| e.error.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.include[0]",
                "spec.include[1]",
                "spec.include[2].prefix",
                "spec.include[3].prefix"
            ]
        );
        assert!(errors.iter().all(|e| e.problem == IncludeProblem::Invalid));
        let too_many = Declaration {
            include: vec![Include::default(); MAX_INCLUDES + 1],
            ..Declaration::default()
        };
        let errors = resolve_includes("ops", &too_many, &sets(), &[]).unwrap_err();
        assert_eq!(errors[0].error.message, "has 33 entries; at most 32");
    }
}
