//! The sealed call an approval is for: who asks (the principal), which server, which tool,
//! which arguments and which declaration of the tool, reduced to one digest. The one place the
//! digest is computed, so the gate, the stores and a later task path agree on what "the same
//! call" means. Pure.

use crate::Principal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Who an unauthenticated caller is: without `spec.auth` every caller is the same nobody.
pub const ANONYMOUS: &str = "anonymous";

/// One call, as an approval binds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealedCall {
    /// `sha256:` over the fields below (the principal's identity, not its display).
    pub digest: String,
    /// Who asked, for people: `subject (issuer)`, or `anonymous`.
    pub principal: String,
    /// `serverInfo.name`.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// `sha256:` over the arguments as canonical JSON.
    pub arguments_digest: String,
    /// The tool's declaration version (`CompiledApproval::version`).
    pub declaration_version: String,
}

impl SealedCall {
    /// The call of `tool` on `server` with `args` by `caller` (`None`: unauthenticated), under
    /// the tool's declaration `version`.
    pub fn new(
        caller: Option<&Principal>,
        server: &str,
        tool: &str,
        args: &Value,
        version: &str,
    ) -> Self {
        let identity = caller.map_or_else(|| ANONYMOUS.to_owned(), identity);
        // The audit record's digest of arguments: one canonical form of JSON in the runtime.
        let arguments_digest = crate::audit::digest(args);
        // Length-prefixed fields: no two different calls join into the same text.
        let mut sealed = String::new();
        for field in [identity.as_str(), server, tool, &arguments_digest, version] {
            sealed.push_str(&format!("{}:{field};", field.len()));
        }
        Self {
            digest: sha256(sealed.as_bytes()),
            principal: caller.map_or_else(|| ANONYMOUS.to_owned(), display),
            server: server.to_owned(),
            tool: tool.to_owned(),
            arguments_digest,
            declaration_version: version.to_owned(),
        }
    }
}

/// What binds a caller: issuer, subject and client (a token for another client of the same
/// user is another caller).
fn identity(caller: &Principal) -> String {
    format!(
        "{}\n{}\n{}",
        caller.issuer,
        caller.subject.as_deref().unwrap_or_default(),
        caller.client().unwrap_or_default()
    )
}

/// The caller as an approver reads it.
fn display(caller: &Principal) -> String {
    let who = caller
        .subject
        .as_deref()
        .or_else(|| caller.client())
        .unwrap_or("unknown subject");
    format!("{who} ({})", caller.issuer)
}

/// `sha256:` and 64 hex digits.
pub(crate) fn sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn call(args: &Value) -> SealedCall {
        SealedCall::new(None, "ops", "delete_namespace", args, "sha256:v1")
    }

    #[test]
    fn key_order_does_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"name":"x","opts":{"a":1,"b":[1,{"d":2,"c":3}]}}"#).unwrap();
        let b: Value =
            serde_json::from_str(r#"{"opts":{"b":[1,{"c":3,"d":2}],"a":1},"name":"x"}"#).unwrap();
        assert_eq!(call(&a).digest, call(&b).digest);
    }

    #[test]
    fn any_change_of_the_call_changes_the_digest() {
        let args = json!({"name": "prod", "force": false, "n": 1});
        let base = call(&args).digest;
        for changed in [
            json!({"name": "prod2", "force": false, "n": 1}),
            json!({"name": "prod", "force": true, "n": 1}),
            json!({"name": "prod", "force": false, "n": 1.5}),
            json!({"name": "prod", "force": false, "n": "1"}),
            json!({"name": "prod", "force": false}),
            json!({"name": "prod", "force": false, "n": 1, "extra": null}),
            json!({"name": ["prod"], "force": false, "n": 1}),
        ] {
            assert_ne!(call(&changed).digest, base, "{changed}");
        }
        let other_tool = SealedCall::new(None, "ops", "delete_other", &args, "sha256:v1");
        let other_server = SealedCall::new(None, "ops2", "delete_namespace", &args, "sha256:v1");
        let other_version = SealedCall::new(None, "ops", "delete_namespace", &args, "sha256:v2");
        for other in [other_tool, other_server, other_version] {
            assert_ne!(other.digest, base);
        }
    }

    #[test]
    fn another_caller_is_another_call() {
        let claims = |sub: &str| {
            let mut claims = Map::new();
            claims.insert("iss".into(), json!("https://idp"));
            claims.insert("sub".into(), json!(sub));
            Principal::from_claims(claims, 0)
        };
        let args = json!({"name": "prod"});
        let alice = SealedCall::new(Some(&claims("alice")), "ops", "t", &args, "v");
        let bob = SealedCall::new(Some(&claims("bob")), "ops", "t", &args, "v");
        let nobody = SealedCall::new(None, "ops", "t", &args, "v");
        assert_ne!(alice.digest, bob.digest);
        assert_ne!(alice.digest, nobody.digest);
        assert_eq!(alice.principal, "alice (https://idp)");
        assert_eq!(nobody.principal, ANONYMOUS);
    }
}
