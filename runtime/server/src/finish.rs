//! What the era adds to every result: in 2026-07-28 `resultType`, the server's info in `_meta`
//! and, for cacheable methods, caching hints. [`Finished`] writes the finished result straight
//! to JSON (the transport serializes it once); [`Finished::into_value`] turns what it writes
//! into a `Value`, for callers that need one. Pure.
//!
//! Writing instead of building matters on the stateless path: building deep-copied the server
//! info into every answer and hashed four member names, only for the map to be serialized and
//! dropped (with the response object built around it: 14.5k of 93k instructions per stateless
//! `tools/call`, by callgrind).

use super::served::Served;
use mcp_declaration::{CacheScope, Compiled};
use mcp_protocol::{Era, meta, methods};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Methods whose 2026-07-28 results carry `ttlMs` and `cacheScope`.
const CACHEABLE: &[&str] = &[
    methods::SERVER_DISCOVER,
    methods::TOOLS_LIST,
    methods::PROMPTS_LIST,
    methods::RESOURCES_LIST,
    methods::RESOURCES_TEMPLATES_LIST,
    methods::RESOURCES_READ,
];

/// A method's result and what its era adds to it.
#[derive(Debug)]
pub struct Finished {
    result: Value,
    /// The declaration that served the request; `None` in legacy eras (results go as built:
    /// `ping` must be `{}`).
    modern: Option<Modern>,
}

#[derive(Debug)]
struct Modern {
    decl: Arc<Served>,
    cacheable: bool,
}

impl Finished {
    /// `result` of `method`, served from `decl` in `era`.
    pub fn new(decl: Arc<Served>, era: Era, method: &str, result: Value) -> Self {
        let modern = (era == Era::Modern).then(|| Modern {
            cacheable: CACHEABLE.contains(&method),
            decl,
        });
        Self { result, modern }
    }

    /// The result before the era's additions (what a tool or handler produced).
    pub fn result(&self) -> &Value {
        &self.result
    }

    /// The finished result as a `Value` (legacy transports and tests): what serializing
    /// `self` writes, so the era's additions are defined once.
    pub fn into_value(self) -> Value {
        match self.modern {
            None => self.result,
            // Only a map with non-string keys fails to serialize; no result is built that way.
            Some(_) => serde_json::to_value(&self).unwrap_or(Value::Null),
        }
    }
}

/// What an authenticated server answers depends on who asks: never shared.
fn cache_scope(decl: &Compiled) -> CacheScope {
    if decl.auth.is_some() {
        CacheScope::Private
    } else {
        decl.cache.scope
    }
}

impl Serialize for Finished {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (&self.modern, &self.result) {
            (None, result) => result.serialize(serializer),
            (Some(modern), Value::Object(members)) => write_modern(members, modern, serializer),
            // `null` finishes as `{}` would.
            (Some(modern), Value::Null) => write_modern(&Map::new(), modern, serializer),
            (Some(_), other) => other.serialize(serializer),
        }
    }
}

/// The members of `members` in order, with `_meta`, `ttlMs` and `cacheScope` replaced where
/// they are, then the additions that were missing: `resultType`, `_meta`, `ttlMs`,
/// `cacheScope`.
fn write_modern<S: Serializer>(
    members: &Map<String, Value>,
    modern: &Modern,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let decl = &modern.decl;
    let scope = cache_scope(decl);
    let mut map = serializer.serialize_map(None)?;
    let mut seen_meta = false;
    for (key, value) in members {
        match (key.as_str(), value) {
            ("_meta", Value::Object(own)) => {
                seen_meta = true;
                map.serialize_entry(key, &MergedMeta { own, decl })?;
            }
            ("_meta", _) => {
                seen_meta = true;
                map.serialize_entry(key, &OnlyServerInfo(decl))?;
            }
            ("ttlMs", _) if modern.cacheable => map.serialize_entry(key, &decl.cache.ttl_ms)?,
            ("cacheScope", _) if modern.cacheable => map.serialize_entry(key, &scope)?,
            _ => map.serialize_entry(key, value)?,
        }
    }
    if !members.contains_key("resultType") {
        map.serialize_entry("resultType", "complete")?;
    }
    if !seen_meta {
        map.serialize_entry("_meta", &OnlyServerInfo(decl))?;
    }
    if modern.cacheable {
        if !members.contains_key("ttlMs") {
            map.serialize_entry("ttlMs", &decl.cache.ttl_ms)?;
        }
        if !members.contains_key("cacheScope") {
            map.serialize_entry("cacheScope", &scope)?;
        }
    }
    map.end()
}

/// `{"<server info key>": <server info>}`.
struct OnlyServerInfo<'a>(&'a Compiled);

impl Serialize for OnlyServerInfo<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(meta::SERVER_INFO, &self.0.server_info)?;
        map.end()
    }
}

/// A method's own `_meta` with the server info set (in place when it was there already).
struct MergedMeta<'a> {
    own: &'a Map<String, Value>,
    decl: &'a Compiled,
}

impl Serialize for MergedMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.own {
            if key == meta::SERVER_INFO {
                map.serialize_entry(key, &self.decl.server_info)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        if !self.own.contains_key(meta::SERVER_INFO) {
            map.serialize_entry(meta::SERVER_INFO, &self.decl.server_info)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_declaration::{CompileOptions, compile, parse_manifest};
    use mcp_protocol::LegacyVersion;
    use serde_json::json;

    fn decl(auth: bool) -> Arc<Served> {
        let auth = if auth {
            "\n  auth: {issuer: \"https://issuer.example\", audiences: [bench]}"
        } else {
            ""
        };
        let manifest = format!(
            "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\nmetadata: {{name: finish}}\nspec:\n  title: Finish{auth}\n"
        );
        let manifest = parse_manifest(&manifest, ".".into()).unwrap();
        let compiled = compile(&manifest, &CompileOptions::default()).unwrap();
        Arc::new(Served::new(compiled).unwrap())
    }

    #[test]
    fn writes_what_it_builds() {
        let results = [
            json!({"content": [{"type": "text", "text": "hi"}]}),
            json!({"content": [], "isError": true, "structuredContent": {"b": 1, "a": 2}}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"contents": [], "_meta": {"x": 1}}),
            json!({"_meta": {"io.modelcontextprotocol/serverInfo": 1, "y": 2}, "z": 3}),
            json!({"_meta": "not an object", "ttlMs": 5, "cacheScope": "x", "tail": true}),
            json!({}),
            Value::Null,
            json!("not an object"),
        ];
        let eras = [Era::Modern, Era::Legacy(LegacyVersion::V2025_11_25)];
        let methods = [
            methods::TOOLS_CALL,
            methods::RESOURCES_READ,
            methods::TOOLS_LIST,
        ];
        for decl in [decl(false), decl(true)] {
            for result in &results {
                for era in eras {
                    for method in methods {
                        let finished = Finished::new(decl.clone(), era, method, result.clone());
                        let written = serde_json::to_string(&finished).unwrap();
                        let built = finished.into_value().to_string();
                        assert_eq!(written, built, "{era:?} {method} {result}");
                    }
                }
            }
        }
    }

    #[test]
    fn adds_the_modern_members() {
        let finished = Finished::new(decl(true), Era::Modern, methods::TOOLS_LIST, json!({}));
        let value = finished.into_value();
        assert_eq!(value["resultType"], "complete");
        assert_eq!(value["_meta"][meta::SERVER_INFO]["name"], "finish");
        assert_eq!(value["cacheScope"], "private");
        assert!(value["ttlMs"].is_u64());
        let legacy = Finished::new(
            decl(false),
            Era::Legacy(LegacyVersion::V2025_11_25),
            "ping",
            json!({}),
        );
        assert_eq!(legacy.into_value(), json!({}));
    }

    #[test]
    fn replaces_in_place_and_appends_what_is_missing() {
        let info = decl(false).server_info.clone();
        let finish = |result: Value| {
            Finished::new(decl(false), Era::Modern, methods::TOOLS_LIST, result).into_value()
        };
        let keys = |value: &Value| {
            value
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        // The method's own `_meta` keeps its order; the server info is replaced where it was.
        let own = finish(json!({"_meta": {meta::SERVER_INFO: 1, "y": 2}, "z": 3}));
        assert_eq!(
            keys(&own),
            ["_meta", "z", "resultType", "ttlMs", "cacheScope"]
        );
        assert_eq!(keys(&own["_meta"]), [meta::SERVER_INFO, "y"]);
        assert_eq!(own["_meta"][meta::SERVER_INFO], info);
        // A `_meta` that is no object, and stale caching hints, are replaced where they are.
        let stale = finish(json!({"_meta": "x", "ttlMs": "x", "cacheScope": "x", "tail": true}));
        assert_eq!(
            keys(&stale),
            ["_meta", "ttlMs", "cacheScope", "tail", "resultType"]
        );
        assert_eq!(stale["_meta"], json!({meta::SERVER_INFO: info}));
        assert!(stale["ttlMs"].is_u64() && stale["cacheScope"] != "x");
        // `null` finishes as `{}`; a result that is no object goes as it is.
        assert_eq!(finish(Value::Null), finish(json!({})));
        assert_eq!(finish(json!("text")), json!("text"));
    }
}
