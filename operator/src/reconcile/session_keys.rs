//! The session keys of a server: which Secret seals its legacy session ids (and the runtime's
//! other tokens), which one still opens them after a rotation, and what to create or delete to
//! get there. Pure: the caller passes the clock and a fresh name.
//!
//! Every key Secret gets a random name the operator picks (`<server>-session-key-<random>`) and
//! is created, never adopted: a Secret someone planted under a name the operator would use is a
//! refused create, not a key. Which key a server uses is recorded in its Deployment's annotations
//! (the watch cache keeps no pod template), which only the operator writes.
//!
//! A rotation (the server's `kube-mcp.io/rotate-session-key` annotation set to a new value, or a
//! Deployment from an operator that used the one fixed name `<server>-session-key`) creates a new
//! key that seals, keeps the replaced one mounted as the previous key that only opens, and
//! retires (unmounts and deletes) that one once the overlap has passed: by default longer than
//! the runtime's 24-hour session limit, so no session is cut.

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use rand::Rng as _;
use std::collections::BTreeMap;
use std::time::Duration;

/// Deployment annotation: the Secret whose key seals.
pub const KEY_ANNOTATION: &str = "kube-mcp.io/session-key";
/// Deployment annotation: the Secret whose key only opens, during a rotation.
pub const PREVIOUS_ANNOTATION: &str = "kube-mcp.io/previous-session-key";
/// Deployment annotation: when the previous key was replaced (RFC 3339).
pub const ROTATED_AT_ANNOTATION: &str = "kube-mcp.io/session-key-rotated-at";
/// On an MCPServer, a rotation request: each new value rotates the key once. On its Deployment,
/// the value last honoured.
pub const ROTATE_ANNOTATION: &str = "kube-mcp.io/rotate-session-key";
/// How long a replaced key keeps opening by default: the runtime's session limit (24 hours)
/// and an hour for pods that started late.
pub const DEFAULT_OVERLAP: Duration = Duration::from_secs(25 * 3600);

/// Length of the random part of a key's name.
const SUFFIX_LEN: usize = 10;
const SUFFIX_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The keys a server's pods mount, and the rotation facts its Deployment records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionKeys {
    /// The Secret whose key seals.
    pub current: String,
    /// The Secret whose key only opens, until it retires.
    pub previous: Option<String>,
    /// When `previous` was replaced.
    pub rotated_at: Option<jiff::Timestamp>,
    /// The rotation request last honoured.
    pub rotation: Option<String>,
}

impl SessionKeys {
    /// The Deployment annotations recording these keys.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations = BTreeMap::from([(KEY_ANNOTATION.to_owned(), self.current.clone())]);
        if let Some(previous) = &self.previous {
            annotations.insert(PREVIOUS_ANNOTATION.to_owned(), previous.clone());
        }
        if let (Some(_), Some(at)) = (&self.previous, self.rotated_at) {
            annotations.insert(ROTATED_AT_ANNOTATION.to_owned(), at.to_string());
        }
        if let Some(rotation) = &self.rotation {
            annotations.insert(ROTATE_ANNOTATION.to_owned(), rotation.clone());
        }
        annotations
    }
}

/// A key the operator created that its Deployment may not show yet (remembered in memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The Secret's name.
    pub name: String,
    /// The key it replaced, if it was a rotation.
    pub replaced: Option<String>,
    /// When it replaced that key.
    pub at: jiff::Timestamp,
}

/// What to do about a server's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// What the Deployment should mount and record.
    pub keys: SessionKeys,
    /// A Secret to create (named `keys.current`) before the Deployment is applied.
    pub create: bool,
    /// Secrets to delete once the Deployment no longer mounts them.
    pub retire: Vec<String>,
    /// When the previous key is due to retire.
    pub recheck: Option<Duration>,
}

/// What the plan starts from.
pub struct Facts<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The server's rotation request.
    pub requested: Option<&'a str>,
    /// The server's Deployment, from the watch cache, when this server controls it.
    pub deployment: Option<&'a Deployment>,
    /// The key this operator created last for the server.
    pub created: Option<&'a Created>,
    /// Now.
    pub now: jiff::Timestamp,
    /// How long a replaced key keeps opening.
    pub overlap: Duration,
}

/// The name of the one key of Deployments made before keys rotated: it is rotated away.
pub fn legacy_name(server: &str) -> String {
    format!("{server}-session-key")
}

/// A new key name for `server`, with a random part nobody can guess ahead.
pub fn fresh_name(server: &str) -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..SUFFIX_LEN)
        .map(|_| char::from(SUFFIX_CHARS[rng.random_range(0..SUFFIX_CHARS.len())]))
        .collect();
    format!("{}-{suffix}", legacy_name(server))
}

/// Whether `name` is one of `server`'s key names (so a Deployment annotation edited to name
/// any other Secret is neither mounted nor ever deleted).
fn is_key_name(server: &str, name: &str) -> bool {
    if name == legacy_name(server) {
        return true;
    }
    name.strip_prefix(&legacy_name(server))
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|suffix| {
            suffix.len() == SUFFIX_LEN && suffix.bytes().all(|b| SUFFIX_CHARS.contains(&b))
        })
}

/// The keys a Deployment records. A Deployment without the annotation predates rotation and
/// mounts the legacy key.
fn recorded(server: &str, deployment: &Deployment) -> SessionKeys {
    let annotations = deployment.annotations();
    let named = |key: &str| {
        annotations
            .get(key)
            .filter(|name| is_key_name(server, name))
            .cloned()
    };
    SessionKeys {
        current: named(KEY_ANNOTATION).unwrap_or_else(|| legacy_name(server)),
        previous: named(PREVIOUS_ANNOTATION),
        rotated_at: annotations
            .get(ROTATED_AT_ANNOTATION)
            .and_then(|at| at.parse().ok()),
        rotation: annotations.get(ROTATE_ANNOTATION).cloned(),
    }
}

/// Decides the server's keys. `fresh` names a key to create, when one is needed.
pub fn plan(facts: &Facts<'_>, fresh: impl FnOnce() -> String) -> Plan {
    let requested = facts.requested.map(str::to_owned);
    let Some(deployment) = facts.deployment else {
        // No Deployment yet: the key created for it, or a new one.
        let (current, create) = match facts.created {
            Some(created) => (created.name.clone(), false),
            None => (fresh(), true),
        };
        return Plan {
            keys: SessionKeys {
                current,
                rotation: requested,
                ..Default::default()
            },
            create,
            retire: Vec::new(),
            recheck: None,
        };
    };
    let mounted = recorded(facts.server, deployment);
    // A key created for this Deployment that it does not show yet (the cache lags the write,
    // or the write failed and is retried): carry on with it.
    if let Some(created) = facts.created.filter(|c| c.name != mounted.current) {
        let previous = created.replaced.clone();
        return Plan {
            retire: retired(&mounted, &[Some(&created.name), previous.as_ref()]),
            recheck: previous
                .as_ref()
                .map(|_| left(created.at, facts).unwrap_or_default()),
            keys: SessionKeys {
                current: created.name.clone(),
                rotated_at: previous.as_ref().map(|_| created.at),
                previous,
                rotation: requested.or(mounted.rotation.clone()),
            },
            create: false,
        };
    }
    let asked = requested.is_some() && requested != mounted.rotation;
    if asked || mounted.current == legacy_name(facts.server) {
        let keys = SessionKeys {
            current: fresh(),
            previous: Some(mounted.current.clone()),
            rotated_at: Some(facts.now),
            rotation: requested.or(mounted.rotation.clone()),
        };
        return Plan {
            retire: retired(&mounted, &[Some(&keys.current), keys.previous.as_ref()]),
            keys,
            create: true,
            recheck: Some(facts.overlap),
        };
    }
    let Some(previous) = &mounted.previous else {
        return Plan {
            keys: mounted,
            create: false,
            retire: Vec::new(),
            recheck: None,
        };
    };
    // A missing or garbled time restarts the overlap: a key retired late costs nothing.
    let rotated_at = mounted.rotated_at.unwrap_or(facts.now);
    match left(rotated_at, facts) {
        Some(left) => Plan {
            keys: SessionKeys {
                rotated_at: Some(rotated_at),
                ..mounted
            },
            create: false,
            retire: Vec::new(),
            recheck: Some(left),
        },
        None => Plan {
            retire: vec![previous.clone()],
            keys: SessionKeys {
                previous: None,
                rotated_at: None,
                ..mounted
            },
            create: false,
            recheck: None,
        },
    }
}

/// How long a key replaced at `rotated_at` still opens; `None` once it is due to retire.
fn left(rotated_at: jiff::Timestamp, facts: &Facts<'_>) -> Option<Duration> {
    let elapsed = facts.now.duration_since(rotated_at);
    let elapsed = Duration::try_from(elapsed).unwrap_or_default();
    facts
        .overlap
        .checked_sub(elapsed)
        .filter(|left| !left.is_zero())
}

/// The keys `mounted` has that `kept` does not: to delete once the Deployment drops them.
fn retired(mounted: &SessionKeys, kept: &[Option<&String>]) -> Vec<String> {
    [Some(&mounted.current), mounted.previous.as_ref()]
        .into_iter()
        .flatten()
        .filter(|name| !kept.contains(&Some(*name)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const HOUR: Duration = Duration::from_secs(3600);

    fn now() -> jiff::Timestamp {
        "2026-12-02T12:00:00Z".parse().unwrap()
    }

    fn deployment(keys: &SessionKeys) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                annotations: Some(keys.annotations()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn facts<'a>(deployment: Option<&'a Deployment>, created: Option<&'a Created>) -> Facts<'a> {
        Facts {
            server: "weather",
            requested: None,
            deployment,
            created,
            now: now(),
            overlap: 25 * HOUR,
        }
    }

    /// Keys rotated at `now()` by the request `r1`, from `b...` to `c...`.
    fn rotating() -> SessionKeys {
        SessionKeys {
            current: key("cccccccccc"),
            previous: Some(key("bbbbbbbbbb")),
            rotated_at: Some(now()),
            rotation: Some("r1".into()),
        }
    }

    fn key(suffix: &str) -> String {
        format!("weather-session-key-{suffix}")
    }

    #[test]
    fn a_new_server_gets_a_new_randomly_named_key() {
        let first = plan(&facts(None, None), || fresh_name("weather"));
        assert!(first.create);
        assert!(is_key_name("weather", &first.keys.current), "{first:?}");
        assert_ne!(first.keys.current, fresh_name("weather"));
        // Created but not yet on the Deployment: the same key, not another.
        let created = Created {
            name: first.keys.current.clone(),
            replaced: None,
            at: now(),
        };
        let again = plan(&facts(None, Some(&created)), || unreachable!());
        assert_eq!((again.create, again.keys), (false, first.keys));
    }

    #[test]
    fn a_settled_server_keeps_its_key_and_writes_nothing() {
        let keys = SessionKeys {
            current: key("bbbbbbbbbb"),
            ..Default::default()
        };
        let settled = plan(&facts(Some(&deployment(&keys)), None), || unreachable!());
        assert_eq!(
            settled,
            Plan {
                keys,
                create: false,
                retire: vec![],
                recheck: None
            }
        );
    }

    #[test]
    fn a_rotation_request_seals_with_a_new_key_and_keeps_the_old_one_opening() {
        let keys = SessionKeys {
            current: key("bbbbbbbbbb"),
            ..Default::default()
        };
        let mounted = deployment(&keys);
        let mut asked = facts(Some(&mounted), None);
        asked.requested = Some("2026-12-02");
        let rotated = plan(&asked, || key("cccccccccc"));
        assert!(rotated.create);
        assert_eq!(
            rotated.keys,
            SessionKeys {
                current: key("cccccccccc"),
                previous: Some(key("bbbbbbbbbb")),
                rotated_at: Some(now()),
                rotation: Some("2026-12-02".into()),
            }
        );
        assert_eq!(rotated.recheck, Some(25 * HOUR));
        assert!(rotated.retire.is_empty());
        // Honoured: the same request rotates nothing more.
        let after = deployment(&rotated.keys);
        let mut again = facts(Some(&after), None);
        again.requested = Some("2026-12-02");
        again.now = now() + 2 * HOUR;
        let settled = plan(&again, || unreachable!());
        assert_eq!((settled.create, &settled.keys), (false, &rotated.keys));
        assert_eq!(settled.recheck, Some(23 * HOUR));
    }

    #[test]
    fn the_previous_key_retires_after_the_overlap() {
        let mounted = deployment(&rotating());
        let mut later = facts(Some(&mounted), None);
        later.requested = Some("r1");
        later.now = now() + 25 * HOUR;
        let retired = plan(&later, || unreachable!());
        assert_eq!(retired.retire, vec![key("bbbbbbbbbb")]);
        assert_eq!(
            retired.keys,
            SessionKeys {
                current: key("cccccccccc"),
                rotation: Some("r1".into()),
                ..Default::default()
            }
        );
    }

    #[test]
    fn a_second_rotation_retires_the_oldest_key_at_once() {
        let mounted = deployment(&rotating());
        let mut asked = facts(Some(&mounted), None);
        asked.requested = Some("r2");
        let rotated = plan(&asked, || key("dddddddddd"));
        assert_eq!(rotated.keys.previous, Some(key("cccccccccc")));
        assert_eq!(rotated.retire, vec![key("bbbbbbbbbb")]);
    }

    #[test]
    fn a_deployment_of_the_fixed_key_name_rotates_away_from_it() {
        // Made by an operator before rotation: no annotations, the legacy key mounted.
        let legacy = Deployment::default();
        let rotated = plan(&facts(Some(&legacy), None), || key("cccccccccc"));
        assert!(rotated.create);
        assert_eq!(rotated.keys.previous, Some("weather-session-key".into()));
        assert_eq!(rotated.keys.current, key("cccccccccc"));
    }

    #[test]
    fn a_created_key_the_cache_does_not_show_yet_is_kept() {
        let keys = SessionKeys {
            current: key("bbbbbbbbbb"),
            ..Default::default()
        };
        let stale = deployment(&keys);
        let created = Created {
            name: key("cccccccccc"),
            replaced: Some(key("bbbbbbbbbb")),
            at: now(),
        };
        let mut lagging = facts(Some(&stale), Some(&created));
        lagging.requested = Some("r1");
        lagging.now = now() + HOUR;
        let carried = plan(&lagging, || unreachable!());
        assert!(!carried.create);
        assert_eq!(carried.keys.current, key("cccccccccc"));
        assert_eq!(carried.keys.previous, Some(key("bbbbbbbbbb")));
        assert_eq!(carried.keys.rotated_at, Some(now()));
        assert!(carried.retire.is_empty());
    }

    #[test]
    fn an_annotation_naming_another_secret_is_not_a_key() {
        let mut tampered = deployment(&SessionKeys {
            current: key("bbbbbbbbbb"),
            ..Default::default()
        });
        tampered
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(PREVIOUS_ANNOTATION.into(), "database-credentials".into());
        let settled = plan(&facts(Some(&tampered), None), || unreachable!());
        assert_eq!(settled.keys.previous, None);
        assert!(settled.retire.is_empty());
        for name in [
            "weather-session-key-BBBBBBBBBB",
            "weather-session-key-bbbbb",
            "weather-session-keyx",
            "other-session-key-bbbbbbbbbb",
        ] {
            assert!(!is_key_name("weather", name), "{name}");
        }
    }
}
