//! A server as the controller's cache keeps it: metadata, status, the spec as the JSON text the
//! API server sent, and the host claim the other servers' reconciles compare against. Parsed
//! spec types take several times their JSON size in memory (a 6 KiB spec became 44 KiB,
//! measured), so a fleet's cache holds text and each reconcile parses its own server. An object
//! this operator cannot read (a field or an enum value of a newer CRD) then fails alone, in its
//! own reconcile, instead of failing the list that every server is watched through. Pure.

use super::{DeploymentFields, MCPServer, MCPServerSpec, MCPServerStatus};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use mcp_declaration::{DEPLOYMENT_FIELDS, Declaration, FieldError, LoadError, spec_from_value};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// An `MCPServer` as cached: see the module comment.
#[derive(Clone, Debug, Deserialize)]
pub struct CachedServer {
    /// The object's metadata (without managed fields and `kubectl apply`'s copy of the object).
    pub metadata: ObjectMeta,
    /// The spec, as JSON text.
    #[serde(default = "empty_spec", deserialize_with = "spec_text")]
    pub spec: Box<str>,
    /// The status, when this operator can read it (else the next reconcile writes a new one).
    #[serde(default, deserialize_with = "readable_status")]
    pub status: Option<MCPServerStatus>,
    /// What the server claims on a shared ingress or gateway (`None`: not exposed, or its spec
    /// is unreadable); set by [`CachedServer::compact`].
    #[serde(skip)]
    pub claim: Option<Claim>,
    /// The namespaces `spec.include` takes sets from: a change of a set or grant there
    /// reconciles this server.
    #[serde(skip)]
    pub include_namespaces: Vec<String>,
}

/// What a server claims on the shared ingress or gateway: a host and the paths under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Field that declares the claim, for messages.
    pub field: &'static str,
    /// Host name, lower case.
    pub host: String,
    /// Path prefix, `/` at the root.
    pub path: String,
    /// Every exact path the server may route, sorted: its endpoints (the server card's
    /// included) and its OAuth metadata, whether or not its spec turns them on now (turning
    /// them on later must not take another server's path).
    pub routes: Vec<String>,
    /// The URL status reports while the server serves the claim (the cluster domain plays no
    /// part in an external URL).
    pub url: String,
}

impl Resource for CachedServer {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        MCPServer::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        MCPServer::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        MCPServer::version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        MCPServer::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl CachedServer {
    /// The server as a reconcile reads it; the error names the first field this operator cannot
    /// read.
    pub fn parse(&self) -> Result<MCPServer, FieldError> {
        Ok(MCPServer {
            metadata: self.metadata.clone(),
            spec: parse_spec(&self.spec)?,
            status: self.status.clone(),
        })
    }

    /// Computes what the cache keeps beside the text: the host claim, by `claim` (the
    /// reconcile's rule, `host_claims::claim`). It runs on every watch event, status writes
    /// included, so it reads only the deployment fields a claim depends on (the served part is
    /// skipped unparsed; the reconcile's strict parse refuses what this one lets by).
    pub fn compact(&mut self, claim: impl FnOnce(&MCPServer) -> Option<Claim>) {
        self.include_namespaces =
            include_namespaces(&self.spec, self.metadata.namespace.as_deref());
        let Ok(deployment) = serde_json::from_str::<DeploymentFields>(&self.spec) else {
            self.claim = None;
            return;
        };
        let server = MCPServer {
            metadata: self.metadata.clone(),
            spec: MCPServerSpec {
                declaration: Declaration::default(),
                deployment,
            },
            status: None,
        };
        self.claim = claim(&server);
    }
}

/// The namespaces a spec's `include` names (its own for entries without one), each once; only
/// `include` is read, unparseable text names none.
fn include_namespaces(text: &str, own: Option<&str>) -> Vec<String> {
    #[derive(Deserialize)]
    struct Includes {
        #[serde(default)]
        include: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        #[serde(default)]
        namespace: Option<String>,
    }
    let Ok(includes) = serde_json::from_str::<Includes>(text) else {
        return Vec::new();
    };
    let mut namespaces: Vec<String> = includes
        .include
        .into_iter()
        .filter_map(|entry| entry.namespace.or_else(|| own.map(str::to_owned)))
        .collect();
    namespaces.sort();
    namespaces.dedup();
    namespaces
}

/// Parses a spec's JSON text: the served part as the runtime reads it and the deployment part,
/// each refusing fields it does not know.
pub fn parse_spec(text: &str) -> Result<MCPServerSpec, FieldError> {
    let unreadable = |message: String| FieldError {
        path: "spec".into(),
        message,
    };
    let all: Map<String, Value> =
        serde_json::from_str(text).map_err(|error| unreadable(error.to_string()))?;
    let (deployment, declaration): (Map<String, Value>, Map<String, Value>) = all
        .into_iter()
        .partition(|(key, _)| DEPLOYMENT_FIELDS.contains(&key.as_str()));
    let field_error = |error: LoadError| {
        let mut errors = error.into_field_errors();
        errors.truncate(1);
        errors
            .pop()
            .unwrap_or_else(|| unreadable("unreadable".into()))
    };
    Ok(MCPServerSpec {
        declaration: spec_from_value::<Declaration>(Value::Object(declaration))
            .map_err(field_error)?,
        deployment: spec_from_value::<DeploymentFields>(Value::Object(deployment))
            .map_err(field_error)?,
    })
}

fn empty_spec() -> Box<str> {
    "{}".into()
}

/// The spec as text; a missing or null spec is an empty one.
fn spec_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Box<str>, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Null => Ok(empty_spec()),
        spec => Ok(spec.to_string().into_boxed_str()),
    }
}

/// The status when it has the shape this operator writes; another shape (written by a newer
/// operator) is dropped with a warning: the next reconcile writes the status anew.
fn readable_status<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<MCPServerStatus>, D::Error> {
    let Some(value) = Option::<Value>::deserialize(deserializer)? else {
        return Ok(None);
    };
    match serde_json::from_value(value) {
        Ok(status) => Ok(Some(status)),
        Err(error) => {
            tracing::warn!(%error, "an MCPServer status this operator cannot read; it is rewritten");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `server` as the watch delivers it.
    fn cached(server: &MCPServer) -> CachedServer {
        serde_json::from_value(serde_json::to_value(server).unwrap()).unwrap()
    }

    #[test]
    fn the_cached_text_parses_to_the_server_it_was() {
        for text in [
            include_str!("../../../examples/issue-tracker/issue-tracker.yaml"),
            include_str!("../../../examples/weather.yaml"),
        ] {
            let original: MCPServer = serde_yaml_ng::from_str(text).unwrap();
            let parsed = cached(&original).parse().unwrap();
            assert_eq!(parsed.spec, original.spec);
            assert_eq!(parsed.metadata, original.metadata);
        }
    }

    #[test]
    fn an_unknown_field_is_named_not_dropped() {
        let err = parse_spec(r#"{"tools": [], "auth": {"issuer": "https://i", "newRule": 1}}"#)
            .unwrap_err();
        assert_eq!(err.path, "spec.auth.newRule");
        assert_eq!(err.message, "unknown field");
        let err = parse_spec(r#"{"ingress": {"host": "a.example.com", "zone": "x"}}"#).unwrap_err();
        assert_eq!(err.path, "spec.ingress.zone");
    }

    #[test]
    fn an_unknown_enum_value_is_named() {
        let err = parse_spec(r#"{"exposure": "Mesh"}"#).unwrap_err();
        assert_eq!(err.path, "spec.exposure");
        assert!(err.message.contains("Mesh"), "{}", err.message);
    }

    #[test]
    fn a_missing_spec_is_empty_and_an_unreadable_status_is_dropped() {
        let cached: CachedServer = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "namespace": "n"},
            "status": {"conditions": "not a list"},
        }))
        .unwrap();
        assert_eq!(cached.parse().unwrap().spec, MCPServerSpec::default());
        assert!(cached.status.is_none());
    }
}
