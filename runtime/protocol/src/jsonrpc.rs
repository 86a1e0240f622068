//! JSON-RPC 2.0 framing: classifying an incoming message and building outgoing ones.

use super::envelope::Envelope;
use super::error::McpError;
use serde_json::{Map, Value};

/// A request id: a string or an integer, never null.
pub type RequestId = Value;

/// One incoming JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A call expecting a response.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// `params`, or an empty object.
        params: Value,
    },
    /// A one-way message.
    Notification {
        /// The method.
        method: String,
        /// `params`, or an empty object.
        params: Value,
    },
    /// The client's answer to a request the server sent (such as a ping).
    Response {
        /// The id of the server's request.
        id: RequestId,
        /// Whether it succeeded.
        ok: bool,
        /// Its `result` (when `ok`) or `error`.
        outcome: Value,
    },
}

/// Parses one message. Batches are refused (removed from the protocol in 2025-06-18).
pub fn parse_message(body: &[u8]) -> Result<Incoming, McpError> {
    super::weight::check(body)?;
    parse_fit(body)
}

/// [`parse_message`] for a body [`super::weight::weigh`] already found fit to parse (and whose
/// weight the caller charged to a budget): the density check is not made again.
pub fn parse_weighed(body: &[u8], _fit: &super::weight::Weighed) -> Result<Incoming, McpError> {
    parse_fit(body)
}

fn parse_fit(body: &[u8]) -> Result<Incoming, McpError> {
    let message: Envelope =
        serde_json::from_slice(body).map_err(|err| McpError::Parse(err.to_string()))?;
    if !message.is_object {
        return Err(McpError::InvalidRequest(
            "expected a single JSON-RPC message object".into(),
        ));
    }
    if message.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(McpError::InvalidRequest("`jsonrpc` must be \"2.0\"".into()));
    }
    let id = match message.id {
        None => None,
        Some(id @ Value::String(_)) => Some(id),
        // Only integers that fit 64 bits: a larger or fractional number would be read as a
        // float and answered with another id than the client sent.
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(_) => {
            return Err(McpError::InvalidRequest(
                "`id` must be a string or an integer of at most 64 bits".into(),
            ));
        }
    };
    let params = match message.params {
        None => Value::Object(Map::new()),
        Some(params @ Value::Object(_)) => params,
        Some(_) => {
            return Err(McpError::InvalidRequest(
                "`params` must be an object".into(),
            ));
        }
    };
    match (message.method, id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(_), _) => Err(McpError::InvalidRequest("`method` must be a string".into())),
        (None, Some(id)) if message.has_result || message.has_error => Ok(Incoming::Response {
            ok: message.has_result && !message.has_error,
            id,
            outcome: message.outcome.unwrap_or(Value::Null),
        }),
        (None, _) => Err(McpError::InvalidRequest("missing `method`".into())),
    }
}

/// Objects up to this many members are searched member by member.
const SCANNED: usize = 8;

/// The member `key` of `value`, if it is an object that has one: what `value.get(key)` finds.
/// A small object is scanned instead of looked up, which would hash the key first (with
/// SipHash, several times the cost of comparing a few short names); request params and
/// `_meta` are small.
pub fn member<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    match value {
        Value::Object(map) if map.len() <= SCANNED => map
            .iter()
            .find_map(|(name, member)| (name == key).then_some(member)),
        Value::Object(map) => map.get(key),
        _ => None,
    }
}

/// A JSON object of `entries`, in order. Values are moved in: `json!` would serialize each
/// interpolated value into a copy, which on the request path costs as much as the rest of the
/// response building together.
pub fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    let mut map = Map::with_capacity(N);
    for (key, value) in entries {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

fn version() -> Value {
    Value::String("2.0".to_owned())
}

/// A success response.
pub fn success_response(id: &RequestId, result: Value) -> Value {
    object([
        ("jsonrpc", version()),
        ("id", id.clone()),
        ("result", result),
    ])
}

/// A success response written straight to JSON, members in the order [`success_response`]
/// builds them: the result is not copied into a response object first.
#[derive(Debug)]
pub struct Success<R> {
    /// The request's id.
    pub id: RequestId,
    /// The result.
    pub result: R,
}

impl<R: serde::Serialize> serde::Serialize for Success<R> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", "2.0")?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("result", &self.result)?;
        map.end()
    }
}

/// An error response; `id` is null when the request's id could not be read.
pub fn error_response(id: Option<&RequestId>, error: Value) -> Value {
    let id = id.cloned().unwrap_or(Value::Null);
    object([("jsonrpc", version()), ("id", id), ("error", error)])
}

/// A notification.
pub fn notification(method: &str, params: Value) -> Value {
    object([
        ("jsonrpc", version()),
        ("method", Value::String(method.to_owned())),
        ("params", params),
    ])
}

/// A server-to-client request.
pub fn request(id: &RequestId, method: &str, params: Value) -> Value {
    object([
        ("jsonrpc", version()),
        ("id", id.clone()),
        ("method", Value::String(method.to_owned())),
        ("params", params),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn classifies_messages() {
        let request = parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        assert_eq!(
            request,
            Incoming::Request {
                id: json!(1),
                method: "tools/list".into(),
                params: json!({})
            }
        );
        let note =
            parse_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Incoming::Notification { .. }));
        let response = parse_message(br#"{"jsonrpc":"2.0","id":"p1","result":{}}"#).unwrap();
        assert_eq!(
            response,
            Incoming::Response {
                id: json!("p1"),
                ok: true,
                outcome: json!({})
            }
        );
    }

    #[test]
    fn member_finds_what_get_finds() {
        let small = json!({"a": 1, "_meta": {"x": 2}});
        let large: Value = (0..20)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect::<Map<_, _>>()
            .into();
        for (value, key) in [
            (&small, "a"),
            (&small, "_meta"),
            (&small, "b"),
            (&large, "k13"),
            (&large, "k99"),
        ] {
            assert_eq!(member(value, key), value.get(key), "{key}");
        }
        assert_eq!(member(&json!([1]), "a"), None);
        assert_eq!(member(&json!("a"), "a"), None);
    }

    #[test]
    fn success_is_written_as_success_response_builds_it() {
        let result = json!({"content": [{"type": "text", "text": "hi"}], "z": 1, "a": 2});
        for id in [json!(7), json!("x")] {
            let written = serde_json::to_string(&Success {
                id: id.clone(),
                result: result.clone(),
            })
            .unwrap();
            assert_eq!(written, success_response(&id, result.clone()).to_string());
        }
    }

    #[test]
    fn refuses_malformed_messages() {
        assert!(matches!(parse_message(b"{nope"), Err(McpError::Parse(_))));
        assert!(matches!(
            parse_message(b"[]"),
            Err(McpError::InvalidRequest(_))
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#),
            Err(McpError::InvalidRequest(_))
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Err(McpError::InvalidRequest(_))
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            Err(McpError::InvalidRequest(_))
        ));
    }

    #[test]
    fn ids_beyond_64_bits_are_refused_not_rounded() {
        // These came back as 1.8446744073709552e19 and 1.5: not the id the client sent.
        for id in ["18446744073709551616", "1.5", "1e3", "-9223372036854775809"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let err = parse_message(body.as_bytes()).unwrap_err();
            assert!(matches!(err, McpError::InvalidRequest(_)), "{id}: {err:?}");
        }
        for id in [json!(u64::MAX), json!(i64::MIN), json!("x")] {
            let body = request(&id, "ping", json!({})).to_string();
            assert!(
                matches!(parse_message(body.as_bytes()), Ok(Incoming::Request { id: got, .. }) if got == id)
            );
        }
    }

    fn id_strategy() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ]
    }

    fn params_strategy() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        let value = leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(any::<String>(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        proptest::collection::btree_map("[a-z_]{1,8}", value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn never_panics_on_any_bytes(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_message(&body);
        }

        #[test]
        fn never_panics_on_near_messages(body in r#"\{("(jsonrpc|id|method|params|result|error)":(null|1|-1|1\.5|1e400|"2\.0"|"x"|\[\]|\{\}|true),?){0,6}\}"#) {
            let _ = parse_message(body.as_bytes());
        }

        #[test]
        fn requests_round_trip(id in id_strategy(), method in any::<String>(), params in params_strategy()) {
            let body = request(&id, &method, params.clone()).to_string();
            let parsed = parse_message(body.as_bytes());
            prop_assert_eq!(parsed.ok(), Some(Incoming::Request { id, method, params }));
        }
    }
}
