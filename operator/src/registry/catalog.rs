//! The registry's in-memory catalog: the published entries by name (kept from the watch of
//! MCPServers), a bounded set of tombstones for deleted or unpublished ones, and the queries
//! the API answers. Pure: the watch (`watch.rs`) feeds it, the routes read it.

use super::entry::{self, Entry};
use super::query::{ListQuery, Page, VersionWanted};
use super::settings::Settings;
use crate::resource::MCPServer;
use jiff::Timestamp;
use kube::ResourceExt as _;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;

/// A published server before its name is settled (two servers may ask for one name).
#[derive(Clone, Debug)]
struct Candidate {
    entry: Entry,
    wanted: String,
    fallback: String,
    created: Timestamp,
    /// The watch scope (a namespace, or `None` for all) the server was seen in.
    scope: Option<String>,
}

/// Published entries and tombstones.
#[derive(Debug)]
pub struct Catalog {
    settings: Settings,
    /// Published servers by uid.
    candidates: HashMap<String, Candidate>,
    /// Every published server by its settled registry name.
    live: BTreeMap<String, Entry>,
    /// Deleted or unpublished entries by name, the newest per name.
    tombstones: BTreeMap<String, Entry>,
    /// Scopes whose first list has not finished, and the uids seen by a list in progress.
    listing: HashMap<Option<String>, HashSet<String>>,
    /// Scopes listed at least once.
    listed: HashSet<Option<String>>,
    /// Scopes the watch covers.
    scopes: Vec<Option<String>>,
}

impl Catalog {
    /// An empty catalog for a watch of `scopes` (namespaces, or `[None]` for all).
    pub fn new(settings: Settings, scopes: Vec<Option<String>>) -> Self {
        Self {
            settings,
            candidates: HashMap::new(),
            live: BTreeMap::new(),
            tombstones: BTreeMap::new(),
            listing: HashMap::new(),
            listed: HashSet::new(),
            scopes,
        }
    }

    /// The settings it publishes by.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether every scope has been listed once (until then answers would be incomplete).
    pub fn synced(&self) -> bool {
        self.scopes.iter().all(|s| self.listed.contains(s))
    }

    /// A (re)list of `scope` begins.
    pub fn list_started(&mut self, scope: Option<String>) {
        self.listing.insert(scope, HashSet::new());
    }

    /// A (re)list of `scope` ended: servers of that scope it did not see are gone.
    pub fn list_done(&mut self, scope: Option<String>, now: Timestamp) {
        let seen = self.listing.remove(&scope).unwrap_or_default();
        let gone: Vec<String> = self
            .candidates
            .iter()
            .filter(|(uid, c)| c.scope == scope && !seen.contains(*uid))
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in gone {
            self.remove(&uid, now);
        }
        self.listed.insert(scope);
        self.settle(now);
    }

    /// `server` (seen in `scope`) was added or changed.
    pub fn apply(&mut self, scope: Option<String>, server: &MCPServer, now: Timestamp) {
        let uid = server.uid().unwrap_or_default();
        if let Some(seen) = self.listing.get_mut(&scope) {
            seen.insert(uid.clone());
        }
        let wanted = entry::wanted_suffix(server);
        match entry::entry(server, &self.settings, &wanted) {
            Some(entry) => {
                let created = entry.published_at;
                self.candidates.insert(
                    uid,
                    Candidate {
                        entry,
                        wanted,
                        fallback: entry::default_suffix(server),
                        created,
                        scope,
                    },
                );
            }
            None => {
                self.remove(&uid, now);
            }
        }
        // During a list, names settle once it is done (half a list would shuffle them).
        if self.listing.is_empty() {
            self.settle(now);
        }
    }

    /// `server` was deleted.
    pub fn delete(&mut self, server: &MCPServer, now: Timestamp) {
        let at = server
            .metadata
            .deletion_timestamp
            .as_ref()
            .map_or(now, |t| t.0);
        self.remove(&server.uid().unwrap_or_default(), at);
        self.settle(now);
    }

    /// Drops a published server, leaving a tombstone of its entry.
    fn remove(&mut self, uid: &str, at: Timestamp) {
        if self.candidates.remove(uid).is_none() {
            return;
        }
        if let Some((name, _)) = self.live.iter().find(|(_, e)| e.uid == uid) {
            let name = name.clone();
            if let Some(entry) = self.live.remove(&name) {
                self.bury(entry.tombstone(at));
            }
        }
    }

    fn bury(&mut self, tombstone: Entry) {
        self.tombstones.insert(tombstone.name.clone(), tombstone);
        while self.tombstones.len() > self.settings.max_tombstones {
            // Forget the oldest deletion first.
            let oldest = self
                .tombstones
                .iter()
                .min_by_key(|(_, e)| e.updated_at)
                .map(|(name, _)| name.clone());
            match oldest {
                Some(name) => self.tombstones.remove(&name),
                None => break,
            };
        }
    }

    /// Gives every published server its name: the one it asks for when no older server holds
    /// it, else `<namespace>.<name>`, else that with its uid's start (so no two share a name).
    fn settle(&mut self, now: Timestamp) {
        let mut order: Vec<(&String, &Candidate)> = self.candidates.iter().collect();
        order.sort_by(|a, b| (a.1.created, a.0).cmp(&(b.1.created, b.0)));
        let mut taken = HashSet::new();
        let mut live = BTreeMap::new();
        for (uid, candidate) in order {
            let prefix = &self.settings.prefix;
            let short: String = uid.chars().take(8).collect();
            let name = [
                candidate.wanted.clone(),
                candidate.fallback.clone(),
                format!("{}-{short}", candidate.fallback),
            ]
            .into_iter()
            .map(|suffix| format!("{prefix}/{suffix}"))
            .find(|name| !taken.contains(name))
            .unwrap_or_else(|| format!("{prefix}/{}-{uid}", candidate.fallback));
            taken.insert(name.clone());
            let mut entry = candidate.entry.clone();
            entry.rename(&name);
            live.insert(name, entry);
        }
        // An entry that lost its name (renamed, or taken by an older server) leaves a tombstone
        // under the old one, so readers of `updated_since` drop it.
        let old = std::mem::take(&mut self.live);
        for (name, entry) in old {
            let still = live.get(&name).is_some_and(|e| e.uid == entry.uid);
            let exists = self.candidates.contains_key(&entry.uid);
            if !still && exists {
                self.bury(entry.tombstone(now));
            }
        }
        for name in live.keys() {
            self.tombstones.remove(name);
        }
        self.live = live;
    }

    /// One page of the list.
    pub fn list(&self, query: &ListQuery) -> Page {
        let include_deleted = query.include_deleted || query.updated_since.is_some();
        let start = match &query.cursor {
            Some(after) => Bound::Excluded(after.clone()),
            None => Bound::Unbounded,
        };
        let live = self.live.range((start.clone(), Bound::Unbounded));
        let dead = self
            .tombstones
            .range((start, Bound::Unbounded))
            .filter(|_| include_deleted);
        let mut entries: Vec<&Entry> = Vec::with_capacity(query.limit + 1);
        let matches = |entry: &Entry| {
            query
                .search
                .as_ref()
                .is_none_or(|s| entry.search_text.contains(s.as_str()))
                && query.updated_since.is_none_or(|t| entry.updated_at >= t)
                && match &query.version {
                    VersionWanted::Any | VersionWanted::Latest => true,
                    VersionWanted::Exact(v) => entry.version == *v,
                }
        };
        // Both maps are sorted by name and share no name: merge them in order.
        let mut live = live.map(|(_, e)| e).filter(|e| matches(e)).peekable();
        let mut dead = dead.map(|(_, e)| e).filter(|e| matches(e)).peekable();
        while entries.len() <= query.limit {
            let next = match (live.peek(), dead.peek()) {
                (Some(a), Some(b)) if a.name <= b.name => live.next(),
                (Some(_), Some(_)) => dead.next(),
                (Some(_), None) => live.next(),
                (None, Some(_)) => dead.next(),
                (None, None) => None,
            };
            match next {
                Some(entry) => entries.push(entry),
                None => break,
            }
        }
        let more = entries.len() > query.limit;
        entries.truncate(query.limit);
        Page {
            next_cursor: more
                .then(|| entries.last().map(|e| e.name.clone()))
                .flatten(),
            entries: entries.into_iter().cloned().collect(),
        }
    }

    /// The entry of `name` (live, else its tombstone when `include_deleted`).
    pub fn get(&self, name: &str, include_deleted: bool) -> Option<&Entry> {
        self.live
            .get(name)
            .or_else(|| self.tombstones.get(name).filter(|_| include_deleted))
    }

    /// The live entries, in name order.
    pub fn live(&self) -> impl Iterator<Item = &Entry> {
        self.live.values()
    }

    /// How many entries are live and buried.
    pub fn counts(&self) -> (usize, usize) {
        (self.live.len(), self.tombstones.len())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::registry::query::VersionWanted;

    pub(crate) fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// A published MCPServer `namespace/name` created at `created`, Ready and Verified when
    /// `ready`.
    pub(crate) fn server(namespace: &str, name: &str, created: &str, ready: bool) -> MCPServer {
        let status = if ready { "True" } else { "False" };
        serde_yaml_ng::from_str(&format!(
            "apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {{name: {name}, namespace: {namespace}, uid: uid-{namespace}-{name}, generation: 2, creationTimestamp: '{created}'}}
spec:
  title: {name} title
  description: The {name} server
  registry: {{publish: true}}
  tools: [{{name: greet, title: Greet, annotations: {{readOnlyHint: true}}, requiredScopes: [greet], content: [{{type: text, text: hi}}]}}]
status:
  url: https://mcp.example.com/{name}/mcp
  conditions:
  - {{type: Ready, status: '{status}', reason: Available, message: ok, lastTransitionTime: '{created}'}}
  - {{type: Verified, status: '{status}', reason: Serving, message: ok, lastTransitionTime: '{created}'}}
"
        ))
        .unwrap()
    }

    pub(crate) fn catalog_of(servers: &[MCPServer]) -> Catalog {
        let mut catalog = Catalog::new(Settings::default(), vec![None]);
        catalog.list_started(None);
        for server in servers {
            catalog.apply(None, server, at("2026-01-01T00:00:00Z"));
        }
        catalog.list_done(None, at("2026-01-01T00:00:00Z"));
        catalog
    }

    fn names(page: &Page) -> Vec<&str> {
        page.entries.iter().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn pages_follow_the_cursor_in_name_order() {
        let servers: Vec<MCPServer> = (0..5)
            .map(|i| server("ns", &format!("s{i}"), "2025-01-01T00:00:00Z", true))
            .collect();
        let catalog = catalog_of(&servers);
        assert!(catalog.synced());
        let mut query = ListQuery {
            limit: 2,
            ..ListQuery::default()
        };
        let mut seen = Vec::new();
        loop {
            let page = catalog.list(&query);
            assert!(page.entries.len() <= 2);
            seen.extend(names(&page).into_iter().map(str::to_owned));
            match page.next_cursor {
                Some(next) => query.cursor = Some(next),
                None => break,
            }
        }
        let expected: Vec<String> = (0..5).map(|i| format!("local.kube-mcp/ns.s{i}")).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn search_version_and_updated_since_filter() {
        let catalog = catalog_of(&[
            server("ns", "weather", "2025-01-01T00:00:00Z", true),
            server("ns", "tracker", "2025-06-01T00:00:00Z", true),
        ]);
        let list = |query: ListQuery| {
            names(&catalog.list(&query))
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let search = |text: &str| ListQuery {
            search: Some(text.into()),
            ..ListQuery::default()
        };
        assert_eq!(list(search("weath")), ["local.kube-mcp/ns.weather"]);
        assert_eq!(
            list(search("the tracker server")),
            ["local.kube-mcp/ns.tracker"]
        );
        assert!(list(search("nothing")).is_empty());
        let since = ListQuery {
            updated_since: Some(at("2025-03-01T00:00:00Z")),
            ..ListQuery::default()
        };
        assert_eq!(list(since), ["local.kube-mcp/ns.tracker"]);
        let exact = |v: &str| ListQuery {
            version: VersionWanted::Exact(v.into()),
            ..ListQuery::default()
        };
        assert_eq!(list(exact("0.0.0-gen.2")).len(), 2);
        assert!(list(exact("1.0.0")).is_empty());
    }

    #[test]
    fn a_deletion_leaves_a_bounded_tombstone_that_updated_since_sees() {
        let weather = server("ns", "weather", "2025-01-01T00:00:00Z", true);
        let mut catalog = catalog_of(std::slice::from_ref(&weather));
        catalog.delete(&weather, at("2026-02-01T00:00:00Z"));
        assert!(catalog.list(&ListQuery::default()).entries.is_empty());
        let since = ListQuery {
            updated_since: Some(at("2026-01-15T00:00:00Z")),
            ..ListQuery::default()
        };
        let page = catalog.list(&since);
        assert_eq!(page.entries.len(), 1);
        assert_eq!(page.entries[0].status, entry::Status::Deleted);
        assert_eq!(page.entries[0].updated_at, at("2026-02-01T00:00:00Z"));
        assert!(catalog.get("local.kube-mcp/ns.weather", false).is_none());
        assert!(catalog.get("local.kube-mcp/ns.weather", true).is_some());
        // Only so many are remembered.
        let mut catalog = Catalog::new(
            Settings {
                max_tombstones: 3,
                ..Settings::default()
            },
            vec![None],
        );
        catalog.list_started(None);
        catalog.list_done(None, at("2026-01-01T00:00:00Z"));
        for i in 0..10 {
            let s = server("ns", &format!("s{i}"), "2025-01-01T00:00:00Z", true);
            catalog.apply(None, &s, at("2026-01-01T00:00:00Z"));
            catalog.delete(&s, at(&format!("2026-01-01T00:00:{i:02}Z")));
        }
        assert_eq!(catalog.counts(), (0, 3));
        let kept = catalog.list(&ListQuery {
            include_deleted: true,
            ..ListQuery::default()
        });
        assert_eq!(
            names(&kept),
            [
                "local.kube-mcp/ns.s7",
                "local.kube-mcp/ns.s8",
                "local.kube-mcp/ns.s9"
            ]
        );
    }

    #[test]
    fn a_relist_buries_what_it_no_longer_sees_and_unpublishing_buries_too() {
        let (a, b) = (
            server("ns", "a", "2025-01-01T00:00:00Z", true),
            server("ns", "b", "2025-01-01T00:00:00Z", true),
        );
        let mut catalog = catalog_of(&[a.clone(), b.clone()]);
        catalog.list_started(None);
        catalog.apply(None, &a, at("2026-01-02T00:00:00Z"));
        catalog.list_done(None, at("2026-01-02T00:00:00Z"));
        assert_eq!(catalog.counts(), (1, 1));
        let mut private = a.clone();
        private.spec.deployment.registry = None;
        catalog.apply(None, &private, at("2026-01-03T00:00:00Z"));
        assert_eq!(catalog.counts(), (0, 2));
    }

    #[test]
    fn the_older_server_keeps_an_asked_for_name() {
        let mut old = server("team-a", "tracker", "2025-01-01T00:00:00Z", true);
        let mut new = server("team-b", "tracker", "2025-02-01T00:00:00Z", true);
        for s in [&mut old, &mut new] {
            s.metadata.annotations =
                Some([(entry::NAME_ANNOTATION.to_owned(), "tracker".to_owned())].into());
        }
        let mut catalog = catalog_of(&[new.clone(), old.clone()]);
        let all = catalog.list(&ListQuery::default());
        assert_eq!(
            names(&all),
            ["local.kube-mcp/team-b.tracker", "local.kube-mcp/tracker"]
        );
        assert_eq!(all.entries[1].object, "team-a/tracker");
        // When the older one goes, the newer takes the name; its old name is buried.
        catalog.delete(&old, at("2026-03-01T00:00:00Z"));
        let all = catalog.list(&ListQuery::default());
        assert_eq!(names(&all), ["local.kube-mcp/tracker"]);
        assert_eq!(all.entries[0].object, "team-b/tracker");
        assert_eq!(catalog.counts(), (1, 1));
    }
}
