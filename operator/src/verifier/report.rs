//! What a runtime pod says it serves: the JSON of `GET /declaration` on its admin port (the
//! declaration's hash and item counts, when it was loaded, and how its last reload went). Pure.

use crate::resource::Counts;
use serde::Deserialize;

/// Path of the report on the runtime's admin port.
pub const PATH: &str = "/declaration";
/// Longest report read; a real one is a few hundred bytes (the error is bounded by the runtime).
pub const MAX_BYTES: usize = 64 * 1024;

/// A runtime's answer to `GET /declaration`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Hash of the declaration it serves (the operator's stamp, or the runtime's own hash of a
    /// manifest without one).
    pub hash: String,
    /// Tools served.
    pub tools: u32,
    /// Fixed resources served.
    pub resources: u32,
    /// Resource templates served.
    pub resource_templates: u32,
    /// Prompts served.
    pub prompts: u32,
    /// When the served declaration was loaded (RFC 3339).
    #[serde(default)]
    pub loaded_at: Option<String>,
    /// The last reload attempt since the process started, if any.
    #[serde(default)]
    pub last_reload: Option<Reload>,
}

/// How a reload attempt went.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reload {
    /// When it happened (RFC 3339).
    #[serde(default)]
    pub at: Option<String>,
    /// `loaded` or `refused`.
    pub outcome: String,
    /// Hash the refused manifest was stamped with, when it could be read.
    #[serde(default)]
    pub hash: Option<String>,
    /// Why it was refused.
    #[serde(default)]
    pub error: Option<String>,
}

impl Report {
    /// What the served declaration holds.
    pub fn counts(&self) -> Counts {
        Counts {
            tools: self.tools,
            resources: self.resources,
            resource_templates: self.resource_templates,
            prompts: self.prompts,
        }
    }

    /// The refused reload that explains why `want` is not served: the last reload was refused,
    /// and it was `want` that was refused (or the runtime could not tell which hash it was).
    pub fn refused(&self, want: &str) -> Option<&Reload> {
        self.last_reload.as_ref().filter(|reload| {
            self.hash != want
                && reload.outcome == "refused"
                && reload.hash.as_deref().is_none_or(|hash| hash == want)
        })
    }
}

/// Reads a report from the body of `GET /declaration`.
pub fn parse(body: &[u8]) -> Result<Report, String> {
    serde_json::from_slice(body).map_err(|error| {
        format!("not a declaration report ({error}); is the runtime older than the operator?")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_report_and_tells_a_relevant_refusal() {
        let report = parse(
            br#"{"hash": "aa", "tools": 2, "resources": 1, "resourceTemplates": 0, "prompts": 3,
                 "loadedAt": "2026-12-01T10:00:00Z",
                 "lastReload": {"at": "2026-12-01T10:05:00Z", "outcome": "refused", "hash": "bb",
                                "error": "spec.tools[0]: bad"}}"#,
        )
        .unwrap();
        assert_eq!(
            report.counts(),
            Counts {
                tools: 2,
                resources: 1,
                resource_templates: 0,
                prompts: 3
            }
        );
        assert_eq!(
            report.refused("bb").and_then(|r| r.error.as_deref()),
            Some("spec.tools[0]: bad")
        );
        // A refusal of another version does not explain why `cc` is missing; serving the
        // wanted hash means nothing was refused that matters.
        assert_eq!(report.refused("cc"), None);
        assert_eq!(report.refused("aa"), None);
    }

    #[test]
    fn something_else_is_not_a_report() {
        let error = parse(b"<html>404</html>").unwrap_err();
        assert!(error.starts_with("not a declaration report"), "{error}");
        assert!(parse(br#"{"hash": "aa"}"#).is_err());
    }
}
