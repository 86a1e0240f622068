//! The `act` chain of an issued token (RFC 8693 section 4.1), for audit records and spans: who
//! acts for the token's subject, the current actor first. Read from the payload when the token
//! is a JWT, without verifying it: the upstream verifies the token; this only reports what the
//! server issued. An opaque token, or one without `act`, has an empty chain. Pure.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

/// Nested actors read at most.
const MAX_DEPTH: usize = 8;
/// Characters kept of each actor's `sub`.
const MAX_SUBJECT_CHARS: usize = 256;
/// Payloads longer than this (base64 characters) are not decoded.
const MAX_PAYLOAD_CHARS: usize = 64 * 1024;

/// The `sub` of each nested `act` claim of `token`, outermost (the current actor) first.
pub(crate) fn act_chain(token: &str) -> Vec<String> {
    let mut parts = token.split('.');
    let (Some(_header), Some(payload), Some(_signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Vec::new();
    };
    if payload.len() > MAX_PAYLOAD_CHARS {
        return Vec::new();
    }
    let Some(claims) = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    else {
        return Vec::new();
    };
    let mut chain = Vec::new();
    let mut actor = claims.get("act");
    while let Some(sub) = actor.and_then(|a| a.get("sub")).and_then(Value::as_str) {
        if chain.len() == MAX_DEPTH {
            break;
        }
        chain.push(sub.chars().take(MAX_SUBJECT_CHARS).collect());
        actor = actor.and_then(|a| a.get("act"));
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &Value) -> String {
        let encode = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        format!(
            "{}.{}.c2ln",
            encode(&serde_json::json!({"alg": "RS256"})),
            encode(claims)
        )
    }

    #[test]
    fn nested_actors_are_listed_current_first() {
        let token = jwt(&serde_json::json!({
            "sub": "alice",
            "act": {"sub": "kube-mcp", "act": {"sub": "gateway"}}
        }));
        assert_eq!(act_chain(&token), ["kube-mcp", "gateway"]);
    }

    #[test]
    fn no_act_or_no_jwt_is_an_empty_chain() {
        assert!(act_chain(&jwt(&serde_json::json!({"sub": "alice"}))).is_empty());
        assert!(act_chain("opaque-token").is_empty());
        assert!(act_chain("a.b.c.d").is_empty());
        assert!(act_chain("a.%%%.c").is_empty());
    }

    #[test]
    fn depth_and_length_are_bounded() {
        let mut act = serde_json::json!({"sub": "x".repeat(1_000)});
        for _ in 0..20 {
            act = serde_json::json!({"sub": "x".repeat(1_000), "act": act});
        }
        let chain = act_chain(&jwt(&serde_json::json!({"sub": "alice", "act": act})));
        assert_eq!(chain.len(), MAX_DEPTH);
        assert!(chain.iter().all(|s| s.chars().count() == MAX_SUBJECT_CHARS));
    }
}
