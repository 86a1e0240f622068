//! The `MCPToolSet`s and `MCPToolSetGrant`s a server's `spec.include` may take, read from the
//! controller's caches: only those of the namespaces it names, each spec parsed strictly (a field
//! this operator does not know refuses the server, naming the set). No I/O.

use super::cache::Stores;
use super::validate::{Fragments, Refused};
use crate::resource::{Cached, MCPServer};
use kube::{Resource, ResourceExt};
use mcp_declaration::{FieldError, ToolSet, ToolSetGrant, spec_from_value};
use serde::de::DeserializeOwned;

/// The fragments `server` may include; empty without `spec.include`.
pub fn fragments(stores: &Stores, server: &MCPServer) -> Result<Fragments, Refused> {
    let includes = &server.spec.declaration.include;
    if includes.is_empty() {
        return Ok(Fragments::default());
    }
    let own = server.namespace().unwrap_or_default();
    let named: Vec<&str> = includes
        .iter()
        .map(|include| include.namespace.as_deref().unwrap_or(&own))
        .collect();
    let wanted = |namespace: Option<String>| namespace.is_some_and(|n| named.contains(&n.as_str()));
    let mut fragments = Fragments::default();
    // Only the sets an entry selects are parsed: another set of the namespace, broken or not,
    // is none of this server's business.
    let selected = |set: &Cached<_>| {
        let (namespace, name) = (set.namespace().unwrap_or_default(), set.name_any());
        includes
            .iter()
            .any(|include| include.selects(&own, &namespace, &name, set.labels()))
    };
    for set in stores.tool_sets.state() {
        if selected(&set) {
            fragments.sets.push(ToolSet {
                namespace: set.namespace().unwrap_or_default(),
                name: set.name_any(),
                labels: set.labels().clone(),
                spec: parsed(&set)?,
            });
        }
    }
    for grant in stores.tool_set_grants.state() {
        if wanted(grant.namespace()) {
            fragments.grants.push(ToolSetGrant {
                namespace: grant.namespace().unwrap_or_default(),
                name: grant.name_any(),
                spec: parsed(&grant)?,
            });
        }
    }
    Ok(fragments)
}

/// The spec of a cached set or grant, as `serve` would read it.
fn parsed<K, T>(object: &Cached<K>) -> Result<T, Refused>
where
    K: Resource<DynamicType = ()>,
    T: DeserializeOwned,
{
    spec_from_value(object.spec.clone()).map_err(|error| {
        let first = error.into_field_errors().into_iter().next();
        let FieldError { path, message } = first.unwrap_or_else(|| FieldError {
            path: "spec".into(),
            message: "unreadable".into(),
        });
        Refused::unparseable(FieldError {
            path: format!(
                "{} {}/{}: {path}",
                K::kind(&()),
                object.metadata.namespace.as_deref().unwrap_or_default(),
                object.metadata.name.as_deref().unwrap_or_default()
            ),
            message,
        })
    })
}
