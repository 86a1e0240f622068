//! 2026-07-28 multi round-trip: answers travel in `inputResponses`; the answers of earlier rounds
//! travel back and forth in `requestState`, sealed (ChaCha20-Poly1305) with the key all replicas
//! share and bound to the method, a digest of the original params, the caller's principal, the
//! questions that round asked, a nonce and a short expiry. An answer counts only for a question
//! the state says was asked (a first call carrying answers is asked anyway), and a state opens
//! once ([`Rounds::redeem`]). Any replica continues any round. Pure (clock and the table of used
//! nonces aside).

use super::knows;
use super::replay::Rounds;
use crate::sessions::{Sealer, unix_now};
use base64::Engine as _;
use mcp_declaration::CompiledInteraction;
use mcp_protocol::McpError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Purpose a `requestState` is sealed for: a session id never opens as one, nor the reverse.
const STATE_AAD: &[u8] = b"kube-mcp requestState v1";
/// How long a round may take: a person reads and answers the question in this time.
pub(crate) const STATE_TTL_SECS: u64 = 600;
/// Longest `requestState` accepted or produced (answers of earlier rounds, sampling text
/// included).
const MAX_STATE_LEN: usize = 512 * 1024;

#[derive(Serialize, Deserialize)]
struct State {
    /// Method.
    m: String,
    /// Digest of the original params.
    d: String,
    /// The caller's principal, when authentication is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    /// Expiry, seconds since the Unix epoch.
    e: u64,
    /// Answers of earlier rounds, by input-request key.
    a: Map<String, Value>,
    /// The input-request keys this round asked: the only answers the next request may give.
    q: Vec<String>,
    /// Makes the state single-use.
    n: String,
}

/// The answers so far: those sealed in `requestState` (checked, and the state used up) plus
/// this round's `inputResponses` to the questions the state says were asked (others, and any
/// without a state, are ignored: those questions are asked).
pub(crate) fn answers(
    rounds: &Rounds,
    principal: Option<&str>,
    method: &str,
    params: &Value,
    interaction: &CompiledInteraction,
) -> Result<Map<String, Value>, McpError> {
    let (mut answers, asked) = match params.get("requestState") {
        None | Some(Value::Null) => (Map::new(), Vec::new()),
        Some(Value::String(token)) => {
            let state = open(&rounds.sealer, principal, method, params, token)?;
            rounds.redeem(&state.n, state.e)?;
            (state.a, state.q)
        }
        Some(_) => {
            return Err(McpError::InvalidParams(
                "`requestState` must be a string".into(),
            ));
        }
    };
    match params.get("inputResponses") {
        None => {}
        Some(Value::Object(responses)) => {
            for (key, response) in responses {
                if !knows(interaction, key) || !asked.contains(key) {
                    continue;
                }
                if !response.is_object() {
                    return Err(McpError::InvalidParams(format!(
                        "input response `{key}` must be an object"
                    )));
                }
                answers.insert(key.clone(), response.clone());
            }
        }
        Some(_) => {
            return Err(McpError::InvalidParams(
                "`inputResponses` must be an object".into(),
            ));
        }
    }
    Ok(answers)
}

/// The `input_required` result for `plan`'s input requests, carrying `answers` (minus those
/// asked again) sealed in `requestState`.
pub(crate) fn input_required(
    sealer: &Sealer,
    principal: Option<&str>,
    method: &str,
    params: &Value,
    mut answers: Map<String, Value>,
    ask: Map<String, Value>,
) -> Result<Value, McpError> {
    answers.retain(|key, _| !ask.contains_key(key));
    let state = State {
        m: method.to_owned(),
        d: digest(params),
        p: principal.map(str::to_owned),
        e: unix_now() + STATE_TTL_SECS,
        a: answers,
        q: ask.keys().cloned().collect(),
        n: Rounds::nonce(),
    };
    let plain = serde_json::to_vec(&state).map_err(|err| McpError::Internal(err.to_string()))?;
    let token = sealer.seal_bytes(STATE_AAD, &plain);
    if token.len() > MAX_STATE_LEN {
        return Err(McpError::Internal(
            "the answers so far are too large to carry in requestState".into(),
        ));
    }
    Ok(json!({"resultType": "input_required", "inputRequests": ask, "requestState": token}))
}

fn open(
    sealer: &Sealer,
    principal: Option<&str>,
    method: &str,
    params: &Value,
    token: &str,
) -> Result<State, McpError> {
    let refused = |why: &str| McpError::InvalidParams(format!("requestState refused: {why}"));
    let plain = sealer
        .open_bytes(STATE_AAD, token, MAX_STATE_LEN)
        .ok_or_else(|| refused("it was altered or not issued by this server"))?;
    let state: State =
        serde_json::from_slice(&plain).map_err(|_| refused("it is not a request state"))?;
    if state.e < unix_now() {
        return Err(refused("it expired; call again without it"));
    }
    if state.m != method || state.d != digest(params) {
        return Err(refused("it belongs to another request"));
    }
    if state.p.as_deref() != principal {
        return Err(refused("it belongs to another caller"));
    }
    Ok(state)
}

/// SHA-256 of the params that define the request (not the round's answers, state or `_meta`),
/// over a canonical form (keys sorted), so a client re-serializing them differently still
/// matches.
fn digest(params: &Value) -> String {
    let mut defining = params.clone();
    if let Some(object) = defining.as_object_mut() {
        for key in ["inputResponses", "requestState", "_meta"] {
            object.remove(key);
        }
    }
    let mut hasher = Sha256::new();
    canonical(&defining, &mut hasher);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hasher.finalize())
}

fn canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            out.update(b"{");
            for key in keys {
                out.update(Value::String(key.clone()).to_string().as_bytes());
                out.update(b":");
                canonical(&object[key], out);
                out.update(b",");
            }
            out.update(b"}");
        }
        Value::Array(items) => {
            out.update(b"[");
            for item in items {
                canonical(item, out);
                out.update(b",");
            }
            out.update(b"]");
        }
        other => out.update(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::KEY_LEN;

    fn params(state: Option<&str>) -> Value {
        let mut params =
            json!({"name": "t", "arguments": {"a": 1, "b": [1, 2]}, "_meta": {"x": 1}});
        if let Some(state) = state {
            params["requestState"] = json!(state);
        }
        params
    }

    fn issued(sealer: &Sealer, principal: Option<&str>) -> String {
        let mut answers = Map::new();
        answers.insert("k".into(), json!({"action": "accept"}));
        let result = input_required(
            sealer,
            principal,
            "tools/call",
            &params(None),
            answers,
            Map::new(),
        )
        .unwrap();
        result["requestState"].as_str().unwrap().to_owned()
    }

    #[test]
    fn state_round_trips_on_any_replica_with_the_key() {
        let token = issued(&Sealer::new(&[1; KEY_LEN]), Some("alice"));
        let other = Sealer::new(&[1; KEY_LEN]);
        let state = open(&other, Some("alice"), "tools/call", &params(None), &token).unwrap();
        assert_eq!(state.a["k"], json!({"action": "accept"}));
    }

    #[test]
    fn refuses_tampered_foreign_misbound_and_cross_principal_state() {
        let sealer = Sealer::new(&[1; KEY_LEN]);
        let token = issued(&sealer, Some("alice"));
        let check = |sealer: &Sealer, principal: Option<&str>, method: &str, p: &Value, t: &str| {
            open(sealer, principal, method, p, t)
                .err()
                .unwrap()
                .to_string()
        };
        let tampered = format!("{token}-TAMPERED");
        assert!(
            check(
                &sealer,
                Some("alice"),
                "tools/call",
                &params(None),
                &tampered
            )
            .contains("altered")
        );
        let foreign = Sealer::new(&[2; KEY_LEN]);
        assert!(
            check(&foreign, Some("alice"), "tools/call", &params(None), &token).contains("altered")
        );
        assert!(
            check(&sealer, Some("alice"), "prompts/get", &params(None), &token)
                .contains("another request")
        );
        let mut changed = params(None);
        changed["arguments"]["a"] = json!(2);
        assert!(
            check(&sealer, Some("alice"), "tools/call", &changed, &token)
                .contains("another request")
        );
        assert!(
            check(&sealer, Some("bob"), "tools/call", &params(None), &token)
                .contains("another caller")
        );
        assert!(
            check(&sealer, None, "tools/call", &params(None), &token).contains("another caller")
        );
    }

    #[test]
    fn refuses_expired_state() {
        let sealer = Sealer::new(&[1; KEY_LEN]);
        let state = State {
            m: "tools/call".into(),
            d: digest(&params(None)),
            p: None,
            e: unix_now() - 1,
            a: Map::new(),
            q: Vec::new(),
            n: Rounds::nonce(),
        };
        let token = sealer.seal_bytes(STATE_AAD, &serde_json::to_vec(&state).unwrap());
        let err = open(&sealer, None, "tools/call", &params(None), &token)
            .err()
            .unwrap();
        assert!(err.to_string().contains("expired"));
    }

    #[test]
    fn digest_ignores_key_order_meta_and_round_fields() {
        let a = json!({"name": "t", "arguments": {"x": 1, "y": 2}});
        let b = json!({"arguments": {"y": 2, "x": 1}, "name": "t", "_meta": {"z": 1},
            "inputResponses": {"k": {}}, "requestState": "s"});
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(
            digest(&a),
            digest(&json!({"name": "u", "arguments": {"x": 1, "y": 2}}))
        );
    }
}
