//! What the operator remembers between reconciles, so that a reconcile with nothing to do makes
//! no API call: which session-key Secret it created last for each server, what it last applied to each child (and
//! what the API server answered), and the status it last wrote. The watch caches lag the
//! operator's own writes; this memory does not. In memory only: a restarted or newly elected
//! operator starts empty and relearns from one write per object at most. No I/O.

use super::session_keys::Created;
use crate::resource::MCPServerStatus;
use kube::{Resource, ResourceExt};
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// A child as the operator knows it: `Kind/namespace/name`.
pub type ChildKey = String;

/// The key of a child object.
pub fn child_key<K: Resource<DynamicType = ()>>(namespace: &str, name: &str) -> ChildKey {
    format!("{}/{namespace}/{name}", K::kind(&()))
}

/// What an applied child looked like: the desired object's hash and the answer's fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// Hash of the object the operator asked for.
    pub desired: u64,
    /// [`fingerprint`] of the object the API server returned.
    pub fingerprint: u64,
}

/// Hash of anything serializable (the desired objects): stable within one process.
pub fn hash_of<T: serde::Serialize>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    // Serializing a k8s-openapi object cannot fail (plain structs, string-keyed maps); an
    // empty hash on failure only costs one extra apply.
    serde_json::to_vec(value)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// What identifies a version of a child without its status: the spec's generation (objects that
/// have one, so that a Deployment controller's status write is not a change) or else the
/// resourceVersion, plus the metadata the operator sets.
pub fn fingerprint<K: Resource>(object: &K) -> u64 {
    let meta = object.meta();
    let mut hasher = DefaultHasher::new();
    match meta.generation {
        Some(generation) => generation.hash(&mut hasher),
        None => meta.resource_version.hash(&mut hasher),
    }
    meta.uid.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    // The Deployment controller's own bookkeeping (`deployment.kubernetes.io/revision`) is not
    // a change of what the operator applied.
    for (key, value) in meta.annotations.iter().flatten() {
        if !key.starts_with("deployment.kubernetes.io/") {
            (key, value).hash(&mut hasher);
        }
    }
    for owner in object.owner_references() {
        (&owner.uid, owner.controller).hash(&mut hasher);
    }
    hasher.finish()
}

/// The operator's memory; shared by all reconciles.
#[derive(Debug, Default)]
pub struct Memory {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Per server UID: the session key created last (its Deployment may not show it yet).
    created_keys: HashMap<String, Created>,
    /// Per server UID, per child: the last apply.
    applied: HashMap<String, HashMap<ChildKey, Applied>>,
    /// Per server UID: the status last written.
    status: HashMap<String, MCPServerStatus>,
}

impl Memory {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        // A poisoned lock only means a reconcile panicked mid-update; the data is still a cache.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut inner)
    }

    /// The session key created last for the server.
    pub fn created_key(&self, uid: &str) -> Option<Created> {
        self.with(|m| m.created_keys.get(uid).cloned())
    }

    /// Remembers a session key created for the server.
    pub fn remember_created_key(&self, uid: &str, created: Created) {
        self.with(|m| m.created_keys.insert(uid.to_owned(), created));
    }

    /// The last apply of a child of the server.
    pub fn applied(&self, uid: &str, child: &str) -> Option<Applied> {
        self.with(|m| m.applied.get(uid).and_then(|c| c.get(child)).copied())
    }

    /// Remembers an apply.
    pub fn remember_applied(&self, uid: &str, child: ChildKey, applied: Applied) {
        self.with(|m| {
            m.applied
                .entry(uid.to_owned())
                .or_default()
                .insert(child, applied)
        });
    }

    /// Forgets a child (pruned, or found changed by someone else).
    pub fn forget_child(&self, uid: &str, child: &str) {
        self.with(|m| m.applied.get_mut(uid).map(|c| c.remove(child)));
    }

    /// Whether a watch event shows exactly what the operator's own last apply returned: such an
    /// event is the echo of its write, not news.
    pub fn is_echo<K: Resource<DynamicType = ()>>(&self, object: &K) -> bool {
        let Some(owner) = object
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))
        else {
            return false;
        };
        let key = child_key::<K>(&object.namespace().unwrap_or_default(), &object.name_any());
        self.applied(&owner.uid, &key)
            .is_some_and(|a| a.fingerprint == fingerprint(object))
    }

    /// The status last written for the server.
    pub fn status(&self, uid: &str) -> Option<MCPServerStatus> {
        self.with(|m| m.status.get(uid).cloned())
    }

    /// Remembers a written status.
    pub fn remember_status(&self, uid: &str, status: MCPServerStatus) {
        self.with(|m| m.status.insert(uid.to_owned(), status));
    }

    /// Forgets a deleted server.
    pub fn forget_server(&self, uid: &str) {
        self.with(|m| {
            m.created_keys.remove(uid);
            m.applied.remove(uid);
            m.status.remove(uid);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn deployment(yaml: &str) -> Deployment {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn a_status_write_does_not_change_a_fingerprint_but_a_spec_change_does() {
        let created = deployment("metadata: {name: a, generation: 1, resourceVersion: '5'}");
        let status_written = deployment(
            "metadata: {name: a, generation: 1, resourceVersion: '9'}\nstatus: {replicas: 1}",
        );
        let edited = deployment("metadata: {name: a, generation: 2, resourceVersion: '11'}");
        assert_eq!(fingerprint(&created), fingerprint(&status_written));
        assert_ne!(fingerprint(&created), fingerprint(&edited));
        let relabelled =
            deployment("metadata: {name: a, generation: 1, resourceVersion: '12', labels: {x: y}}");
        assert_ne!(fingerprint(&created), fingerprint(&relabelled));
    }

    #[test]
    fn an_object_without_generation_is_fingerprinted_by_version() {
        let a: ConfigMap =
            serde_yaml_ng::from_str("metadata: {name: a, resourceVersion: '5'}").unwrap();
        let b: ConfigMap =
            serde_yaml_ng::from_str("metadata: {name: a, resourceVersion: '6'}").unwrap();
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn only_the_exact_answer_to_an_own_apply_is_an_echo() {
        let memory = Memory::default();
        let ours: ConfigMap = serde_yaml_ng::from_str(
            "metadata: {name: m, namespace: n, resourceVersion: '5', ownerReferences: [{apiVersion: v, kind: MCPServer, name: s, uid: u1, controller: true}]}",
        )
        .unwrap();
        assert!(!memory.is_echo(&ours));
        memory.remember_applied(
            "u1",
            child_key::<ConfigMap>("n", "m"),
            Applied {
                desired: 1,
                fingerprint: fingerprint(&ours),
            },
        );
        assert!(memory.is_echo(&ours));
        let mut changed = ours.clone();
        changed.metadata.resource_version = Some("6".into());
        assert!(!memory.is_echo(&changed));
        memory.forget_server("u1");
        assert!(!memory.is_echo(&ours));
    }
}
