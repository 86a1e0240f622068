//! The list methods: pre-built entries, paged by an opaque cursor. Pure.

use super::params::ListPage;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_protocol::McpError;
use serde_json::{Value, json};

/// Builds `{<key>: [...], nextCursor?}` for the page that `params.cursor` asks for.
pub(crate) fn list<'a>(
    params: &Value,
    page_size: usize,
    key: &str,
    entries: impl ExactSizeIterator<Item = &'a Value>,
) -> Result<Value, McpError> {
    let total = entries.len();
    let start = match ListPage::parse(params)?.cursor {
        None => 0,
        Some(cursor) => decode_cursor(cursor)
            .filter(|&offset| offset <= total)
            .ok_or_else(|| {
                McpError::InvalidParams(
                    "invalid cursor: it was not issued by this server or the list changed".into(),
                )
            })?,
    };
    let page: Vec<&Value> = entries.skip(start).take(page_size).collect();
    let mut result = json!({ key: page });
    let end = start + page.len();
    if end < total {
        result["nextCursor"] = json!(encode_cursor(end));
    }
    Ok(result)
}

fn encode_cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("offset:{offset}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("offset:")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_through_every_entry_once() {
        let entries: Vec<Value> = (0..5).map(|i| json!({"name": i})).collect();
        let mut seen = Vec::new();
        let mut params = json!({});
        loop {
            let page = list(&params, 2, "tools", entries.iter()).unwrap();
            seen.extend(page["tools"].as_array().unwrap().iter().cloned());
            match page.get("nextCursor") {
                Some(cursor) => params = json!({"cursor": cursor}),
                None => break,
            }
        }
        assert_eq!(seen, entries);
    }

    #[test]
    fn refuses_foreign_cursors() {
        let entries = [json!(1)];
        let err = list(&json!({"cursor": "bogus"}), 2, "tools", entries.iter()).unwrap_err();
        assert!(matches!(err, McpError::InvalidParams(_)));
        let beyond = encode_cursor(9);
        assert!(list(&json!({"cursor": beyond}), 2, "tools", entries.iter()).is_err());
    }
}
