//! What a tool's reply becomes: checked against the tool's `outputSchema` (and its arguments
//! against `inputSchema`, with bounded messages), then shaped for the era. Pure. Shared by
//! `tools/call` (`tools.rs`) and the results of tasks (`tasks.rs`).

use crate::backends::{ToolReply, text_block};
use mcp_declaration::CompiledTool;
use mcp_protocol::{Era, LegacyVersion, object};
use serde_json::Value;

/// How many schema violations a tool error lists.
const MAX_REPORTED_VIOLATIONS: usize = 5;

/// `reply` checked against the tool's `outputSchema`: a success without the structured result
/// it declares, or with one that does not match, becomes a tool error.
pub(crate) fn checked(tool: &CompiledTool, reply: ToolReply) -> ToolReply {
    if tool.output.is_some() && reply.structured.is_none() && !reply.is_error {
        return ToolReply::error(
            "the tool declares an outputSchema but produced no structured result",
        );
    }
    let mut reply = reply;
    if let (Some(validator), Some(structured)) = (&tool.output, &reply.structured)
        && let Some(problem) = violations(validator, structured)
    {
        if reply.is_error {
            // An error's details need not follow the success schema; the content still tells.
            reply.structured = None;
            return reply;
        }
        return ToolReply::error(format!(
            "the tool's structured result does not match its outputSchema: {problem}"
        ));
    }
    reply
}

/// The first few schema violations, each located by its JSON pointer.
pub(crate) fn violations(validator: &jsonschema::Validator, value: &Value) -> Option<String> {
    // The common case, valid input, takes the validator's short-circuiting path.
    if validator.is_valid(value) {
        return None;
    }
    let found: Vec<String> = validator
        .iter_errors(value)
        .take(MAX_REPORTED_VIOLATIONS)
        .map(|err| {
            let message = without_long_echo(&err.to_string(), &err.instance().to_string());
            match err.instance_path().to_string() {
                path if path.is_empty() => message,
                path => format!("{path}: {message}"),
            }
        })
        .collect();
    (!found.is_empty()).then(|| found.join("; "))
}

/// Longest offending value a violation message quotes.
const MAX_ECHOED_CHARS: usize = 64;

/// A violation message that quotes the offending value at most [`MAX_ECHOED_CHARS`] long: a
/// large argument would otherwise come back once per violation.
fn without_long_echo(message: &str, instance: &str) -> String {
    if instance.chars().count() <= MAX_ECHOED_CHARS {
        return message.to_owned();
    }
    let short: String = instance.chars().take(MAX_ECHOED_CHARS).collect();
    let short = format!("{short}… ({} bytes)", instance.len());
    let message = message.replace(instance, &short);
    // A message that quotes the value in another form is cut instead.
    match message.char_indices().nth(4 * MAX_ECHOED_CHARS) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message,
    }
}

/// Era shaping: `structuredContent` is any JSON in 2026-07-28, an object from 2025-06-18, and
/// absent before (the JSON text block carries it).
pub(crate) fn shape(reply: ToolReply, era: Era) -> Value {
    let content = match era {
        Era::Legacy(version) => reply
            .content
            .into_iter()
            .map(|block| downgrade(block, version))
            .collect(),
        Era::Modern => reply.content,
    };
    let mut result = object([("content", Value::Array(content))]);
    if reply.is_error {
        result["isError"] = Value::Bool(true);
    }
    if let Some(structured) = reply.structured {
        let allowed = match era {
            Era::Modern => true,
            Era::Legacy(version) => version.has_structured_content() && structured.is_object(),
        };
        if allowed {
            result["structuredContent"] = structured;
        }
    }
    result
}

/// Content blocks an older protocol version cannot carry become text that says what they were:
/// audio arrived in 2025-03-26, resource links in 2025-06-18.
fn downgrade(block: Value, version: LegacyVersion) -> Value {
    let field = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match block.get("type").and_then(Value::as_str) {
        Some("audio") if version < LegacyVersion::V2025_03_26 => text_block(format!(
            "[{} audio omitted: protocol {} cannot carry audio]",
            field("mimeType"),
            version.as_str()
        )),
        Some("resource_link") if version < LegacyVersion::V2025_06_18 => {
            text_block(format!("{}: {}", field("name"), field("uri")))
        }
        _ => block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn older_versions_get_text_instead_of_blocks_they_cannot_carry() {
        let audio = json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"});
        let link = json!({"type": "resource_link", "uri": "docs://a", "name": "a"});
        let old = downgrade(audio.clone(), LegacyVersion::V2024_11_05);
        assert_eq!(old["type"], "text");
        assert!(
            old["text"]
                .as_str()
                .unwrap()
                .contains("audio/wav audio omitted")
        );
        assert_eq!(downgrade(audio.clone(), LegacyVersion::V2025_03_26), audio);
        assert_eq!(
            downgrade(link.clone(), LegacyVersion::V2025_03_26),
            json!({"type": "text", "text": "a: docs://a"})
        );
        assert_eq!(downgrade(link.clone(), LegacyVersion::V2025_06_18), link);
    }
}

#[cfg(test)]
mod echo_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_do_not_echo_large_values() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 3},
            "b": {"type": "string", "maxLength": 3},
            "c": {"type": "integer"}
        }});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let big = "x".repeat(100_000);
        let args = json!({"a": big, "b": big, "c": big});
        let problem = violations(&validator, &args).unwrap();
        // Before, each of the three violations quoted all 100,000 characters.
        assert!(problem.len() < 2_000, "{} bytes", problem.len());
        assert!(
            problem.contains("/a") && problem.contains("/c"),
            "{problem}"
        );
    }
}
