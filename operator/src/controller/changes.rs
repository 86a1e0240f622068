//! Turns a watch event stream into a stream of the objects that are news, so that only news
//! triggers a reconcile. An object is news when the part of it the operator cares about (its
//! `key`) changed since it was last seen and it is not the echo of the operator's own write; a
//! deletion is news when the object had been seen. An object that a re-listing (after a watch
//! desync) no longer holds was deleted unseen: `lost` hears of it. No I/O.

use futures_util::{Stream, StreamExt as _};
use kube::Resource;
use kube::runtime::watcher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// What makes an object of kind `K` news.
pub struct Filter<Key, Echo, Delete, Lost = fn(&Identity)> {
    /// The part of the object that matters, hashed.
    pub key: Key,
    /// Whether the object is exactly what the operator's own last write produced.
    pub echo: Echo,
    /// The key assumed for an object seen for the first time (`None`: every new object is news).
    pub baseline: Option<u64>,
    /// Called on deletion; false keeps the deletion from being news.
    pub on_delete: Delete,
    /// Called for an object a re-listing no longer holds (its deletion event was missed).
    pub lost: Lost,
}

/// A filter's `lost` that does nothing (children: their server's next reconcile re-creates
/// what is missing).
pub fn ignore_lost(_: &Identity) {}

/// Hash of one value.
pub fn hash_one<T: Hash>(value: &T) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// Namespace, name and UID: a re-created object is a new object.
pub type Identity = (Option<String>, Option<String>, Option<String>);

fn identity<K: Resource>(object: &K) -> Identity {
    let meta = object.meta();
    (meta.namespace.clone(), meta.name.clone(), meta.uid.clone())
}

/// The objects of `events` that are news by `filter`.
pub fn changes<K, S, Key, Echo, Delete, Lost>(
    events: S,
    filter: Filter<Key, Echo, Delete, Lost>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    Key: Fn(&K) -> u64 + Send + 'static,
    Echo: Fn(&K) -> bool + Send + 'static,
    Delete: Fn(&K) -> bool + Send + 'static,
    Lost: Fn(&Identity) + Send + 'static,
{
    let mut last: HashMap<Identity, u64> = HashMap::new();
    // The identities a listing in progress has given so far.
    let mut listing: Option<HashSet<Identity>> = None;
    events.filter_map(move |event| {
        let news = match event {
            Err(error) => Some(Err(error)),
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                if let Some(listed) = &mut listing {
                    listed.insert(identity(&object));
                }
                let key = (filter.key)(&object);
                let previous = last.insert(identity(&object), key).or(filter.baseline);
                (previous != Some(key) && !(filter.echo)(&object)).then_some(Ok(object))
            }
            Ok(watcher::Event::Delete(object)) => {
                let previous = last.remove(&identity(&object)).or(filter.baseline);
                let seen = previous.is_some() && previous != filter.baseline;
                ((filter.on_delete)(&object) && seen).then_some(Ok(object))
            }
            Ok(watcher::Event::Init) => {
                listing = Some(HashSet::new());
                None
            }
            Ok(watcher::Event::InitDone) => {
                let listed = listing.take().unwrap_or_default();
                last.retain(|seen, _| {
                    let kept = listed.contains(seen);
                    if !kept {
                        (filter.lost)(seen);
                    }
                    kept
                });
                None
            }
        };
        std::future::ready(news)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::ResourceExt;

    fn config_map(name: &str, version: &str) -> ConfigMap {
        serde_yaml_ng::from_str(&format!(
            "metadata: {{name: {name}, namespace: n, uid: u-{name}, resourceVersion: '{version}'}}"
        ))
        .unwrap()
    }

    async fn news(events: Vec<watcher::Event<ConfigMap>>, baseline: Option<u64>) -> Vec<String> {
        let filter = Filter {
            key: |c: &ConfigMap| hash_one(&c.resource_version()),
            echo: |c: &ConfigMap| c.resource_version().as_deref() == Some("echo"),
            baseline,
            on_delete: |_: &ConfigMap| true,
            lost: ignore_lost,
        };
        changes(
            futures_util::stream::iter(events.into_iter().map(Ok)),
            filter,
        )
        .map(|c| {
            let c = c.unwrap();
            format!(
                "{}@{}",
                c.name_any(),
                c.resource_version().unwrap_or_default()
            )
        })
        .collect()
        .await
    }

    #[tokio::test]
    async fn repeats_and_echoes_are_not_news_but_changes_and_deletions_are() {
        use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
        let got = news(
            vec![
                Init,
                InitApply(config_map("a", "1")),
                InitDone,
                Apply(config_map("a", "1")),
                Apply(config_map("a", "2")),
                Apply(config_map("a", "echo")),
                Delete(config_map("a", "echo")),
                Delete(config_map("never-seen", "1")),
            ],
            None,
        )
        .await;
        assert_eq!(got, ["a@1", "a@2", "a@echo"]);
    }

    #[tokio::test]
    async fn a_relisting_reports_what_it_lost() {
        use watcher::Event::{Init, InitApply, InitDone};
        let lost = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let heard = lost.clone();
        let filter = Filter {
            key: |c: &ConfigMap| hash_one(&c.resource_version()),
            echo: |_: &ConfigMap| false,
            baseline: None,
            on_delete: |_: &ConfigMap| true,
            lost: move |gone: &Identity| heard.lock().unwrap().push(gone.1.clone().unwrap()),
        };
        let events = vec![
            Init,
            InitApply(config_map("a", "1")),
            InitApply(config_map("b", "1")),
            InitDone,
            // The watch fell behind; `b` was deleted meanwhile and the new listing lacks it.
            Init,
            InitApply(config_map("a", "1")),
            InitDone,
        ];
        let news: Vec<_> = changes(
            futures_util::stream::iter(events.into_iter().map(Ok)),
            filter,
        )
        .collect()
        .await;
        assert_eq!(
            news.len(),
            2,
            "the first listing is news, the unchanged relisting is not"
        );
        assert_eq!(*lost.lock().unwrap(), ["b"]);
    }

    #[tokio::test]
    async fn with_a_baseline_a_new_object_at_the_baseline_is_not_news() {
        use watcher::Event::{Apply, Delete};
        let baseline = Some(hash_one(&Some("1".to_owned())));
        let got = news(
            vec![
                Apply(config_map("a", "1")),
                Delete(config_map("a", "1")),
                Apply(config_map("b", "2")),
                Delete(config_map("b", "2")),
            ],
            baseline,
        )
        .await;
        assert_eq!(got, ["b@2", "b@2"]);
    }
}
