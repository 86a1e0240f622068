//! Watches of one kind in several namespaces (the operator restricted to a list of them, with a
//! Role in each and no cluster-wide rights), merged into one event stream that a single reflector
//! store follows as if it came from one watch. No I/O of its own.
//!
//! One reflector store takes one watcher's events: its initial listing (`Init`, `InitApply`...,
//! `InitDone`) replaces the whole store. So the namespaces' objects are held until every
//! namespace has listed once, then passed on as one listing; a later re-listing of one namespace
//! (after a watch desync) is passed on as changes: its objects as `Apply`, and a `Delete` for each
//! object of that namespace the store holds and the new listing lacks.

use futures_util::stream::{self, BoxStream};
use futures_util::{Stream, StreamExt as _};
use kube::runtime::reflector::Store;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use std::collections::{BTreeMap, HashSet};

/// The events of `streams` (one per namespace, in the order of `namespaces`) as one watch's;
/// `store` is the store the result is reflected into.
pub fn merged<K>(
    namespaces: Vec<String>,
    streams: Vec<BoxStream<'static, Result<Event<K>, watcher::Error>>>,
    store: Store<K>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let mut state = Merge::new(namespaces, store);
    let tagged = streams
        .into_iter()
        .enumerate()
        .map(|(i, events)| events.map(move |event| (i, event)));
    stream::select_all(tagged)
        .map(move |(i, event)| stream::iter(state.next(i, event)))
        .flatten()
}

/// The merging state machine.
struct Merge<K: Resource<DynamicType = ()> + Clone + 'static> {
    namespaces: Vec<String>,
    store: Store<K>,
    /// Namespaces whose first listing is complete.
    listed: Vec<bool>,
    /// Every namespace has listed once: the merged listing was passed on.
    ready: bool,
    /// Until then, per namespace, its objects by name.
    held: Vec<BTreeMap<String, K>>,
    /// Per namespace, the names of its re-listing in progress.
    relisting: Vec<Option<HashSet<String>>>,
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Merge<K> {
    fn new(namespaces: Vec<String>, store: Store<K>) -> Self {
        let n = namespaces.len();
        Self {
            namespaces,
            store,
            listed: vec![false; n],
            ready: false,
            held: vec![BTreeMap::new(); n],
            relisting: vec![None; n],
        }
    }

    fn next(
        &mut self,
        i: usize,
        event: Result<Event<K>, watcher::Error>,
    ) -> Vec<Result<Event<K>, watcher::Error>> {
        let event = match event {
            Ok(event) => event,
            Err(error) => return vec![Err(error)],
        };
        let mut out = Vec::new();
        if !self.ready {
            let held = &mut self.held[i];
            match event {
                Event::Init => {
                    held.clear();
                    self.listed[i] = false;
                }
                Event::InitApply(object) | Event::Apply(object) => {
                    held.insert(object.name_any(), object);
                }
                Event::Delete(object) => drop(held.remove(&object.name_any())),
                Event::InitDone => self.listed[i] = true,
            }
            if self.listed.iter().all(|done| *done) {
                self.ready = true;
                out.push(Event::Init);
                for held in std::mem::take(&mut self.held) {
                    out.extend(held.into_values().map(Event::InitApply));
                }
                out.push(Event::InitDone);
            }
            return out.into_iter().map(Ok).collect();
        }
        match event {
            Event::Init => self.relisting[i] = Some(HashSet::new()),
            Event::InitApply(object) => {
                if let Some(names) = &mut self.relisting[i] {
                    names.insert(object.name_any());
                }
                out.push(Event::Apply(object));
            }
            Event::InitDone => {
                let names = self.relisting[i].take().unwrap_or_default();
                let namespace = &self.namespaces[i];
                for gone in self.store.state().iter().filter(|object| {
                    object.namespace().as_deref() == Some(namespace.as_str())
                        && !names.contains(&object.name_any())
                }) {
                    out.push(Event::Delete(gone.as_ref().clone()));
                }
            }
            Event::Apply(object) => out.push(Event::Apply(object)),
            Event::Delete(object) => out.push(Event::Delete(object)),
        }
        out.into_iter().map(Ok).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::WatchStreamExt as _;
    use kube::runtime::reflector;

    fn config_map(namespace: &str, name: &str) -> ConfigMap {
        serde_yaml_ng::from_str(&format!(
            "metadata: {{name: {name}, namespace: {namespace}}}"
        ))
        .unwrap()
    }

    fn names(store: &Store<ConfigMap>) -> Vec<String> {
        let mut names: Vec<String> = store
            .state()
            .iter()
            .map(|c| format!("{}/{}", c.namespace().unwrap(), c.name_any()))
            .collect();
        names.sort();
        names
    }

    type Events = Vec<Result<Event<ConfigMap>, watcher::Error>>;

    /// Runs the merge of two namespaces' event lists into a store; returns the store.
    async fn run(a: Events, b: Events) -> Store<ConfigMap> {
        let (reader, writer) = reflector::store::<ConfigMap>();
        let events = merged(
            vec!["a".into(), "b".into()],
            vec![stream::iter(a).boxed(), stream::iter(b).boxed()],
            reader.clone(),
        )
        .reflect(writer);
        events.for_each(|_| async {}).await;
        reader
    }

    #[tokio::test]
    async fn the_store_is_ready_when_every_namespace_listed() {
        let a = || {
            vec![
                Ok(Event::Init),
                Ok(Event::InitApply(config_map("a", "x"))),
                Ok(Event::InitDone),
            ]
        };
        let b = vec![Ok(Event::Init), Ok(Event::InitApply(config_map("b", "y")))];
        let store = run(a(), b).await;
        // b never finished its listing: never ready (the writer is gone, so waiting fails),
        // and nothing of a's listing was passed on alone.
        assert!(store.wait_until_ready().await.is_err());
        assert!(names(&store).is_empty());
        let b = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("b", "y"))),
            Ok(Event::InitDone),
            Ok(Event::Apply(config_map("b", "z"))),
        ];
        let store = run(a(), b).await;
        store.wait_until_ready().await.unwrap();
        assert_eq!(names(&store), ["a/x", "b/y", "b/z"]);
    }

    #[tokio::test]
    async fn a_relisting_namespace_drops_only_its_own_missing_objects() {
        let a = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("a", "x"))),
            Ok(Event::InitApply(config_map("a", "gone"))),
            Ok(Event::InitDone),
        ];
        let b = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("b", "y"))),
            Ok(Event::InitDone),
            // b re-lists: `y` is gone, `w` is new.
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("b", "w"))),
            Ok(Event::InitDone),
        ];
        let mut a_then_relist = a;
        a_then_relist.extend([
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("a", "x"))),
            Ok(Event::InitDone),
        ]);
        let store = run(a_then_relist, b).await;
        assert_eq!(names(&store), ["a/x", "b/w"]);
    }

    #[tokio::test]
    async fn a_deletion_during_the_first_listing_is_not_lost() {
        let a = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("a", "x"))),
            Ok(Event::InitDone),
            Ok(Event::Delete(config_map("a", "x"))),
        ];
        let b = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(config_map("b", "y"))),
            Ok(Event::InitDone),
        ];
        let store = run(a, b).await;
        assert_eq!(names(&store), ["b/y"]);
    }
}
