//! What an import did with every operation: how many became tools or resources, which were
//! skipped and why, grouped for one line on stderr and listed as comments atop the manifest.
//! Pure.

use std::collections::BTreeMap;

/// Why an operation (or part of one) was not imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    /// The group it is counted under, such as `multipart body`.
    pub kind: &'static str,
    /// The specifics, such as the parameter's name.
    pub detail: String,
}

impl Reason {
    /// A reason of kind `kind`.
    pub fn new(kind: &'static str, detail: String) -> Self {
        Self { kind, detail }
    }
}

/// A skipped operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// `GET /items/{id}`.
    pub operation: String,
    /// Why.
    pub reason: Reason,
}

/// The account of one import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Operations in the spec (before filters).
    pub operations: usize,
    /// Operations left out by the selection options (`--methods` included).
    pub filtered: usize,
    /// Of those, the write operations left out only because the import is read-only by default.
    pub writes_left_out: usize,
    /// Tools emitted.
    pub tools: usize,
    /// Resources emitted.
    pub resources: usize,
    /// Resource templates emitted.
    pub resource_templates: usize,
    /// Operations skipped, in spec order.
    pub skipped: Vec<Skipped>,
    /// Things dropped from imported operations (an ignored header, a shortened description).
    pub notes: Vec<String>,
}

impl Summary {
    /// One line: `152 operations: 140 tools, 8 skipped: multipart body, 4 skipped: ...`.
    pub fn line(&self) -> String {
        let mut parts = vec![format!("{} tools", self.tools)];
        if self.resources > 0 {
            parts.push(format!("{} resources", self.resources));
        }
        if self.resource_templates > 0 {
            parts.push(format!("{} resource templates", self.resource_templates));
        }
        if self.filtered > 0 {
            parts.push(format!("{} left out by filters", self.filtered));
        }
        if self.writes_left_out > 0 {
            parts.push(format!(
                "{} of them writes (read-only by default: --methods all imports them)",
                self.writes_left_out
            ));
        }
        let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
        for skipped in &self.skipped {
            *by_kind.entry(skipped.reason.kind).or_default() += 1;
        }
        let mut kinds: Vec<(&str, usize)> = by_kind.into_iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        parts.extend(
            kinds
                .into_iter()
                .map(|(kind, n)| format!("{n} skipped: {kind}")),
        );
        format!("{} operations: {}", self.operations, parts.join(", "))
    }

    /// Whether every operation is accounted for exactly once.
    pub fn balanced(&self) -> bool {
        self.tools + self.resources + self.resource_templates + self.filtered + self.skipped.len()
            == self.operations
    }

    /// The summary as YAML comment lines.
    pub fn comments(&self) -> String {
        let mut out = format!(
            "# Imported by mcp-runtime import openapi.\n# {}\n",
            self.line()
        );
        for skipped in &self.skipped {
            out.push_str(&format!(
                "#   skipped {}: {}: {}\n",
                one_line(&skipped.operation),
                skipped.reason.kind,
                one_line(&skipped.reason.detail)
            ));
        }
        for note in &self.notes {
            out.push_str(&format!("#   note: {}\n", one_line(note)));
        }
        out
    }
}

/// Text made safe for one comment line: no line breaks, bounded.
pub(super) fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect();
    flat
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_groups_skips_by_reason_most_first() {
        let skip = |kind| Skipped {
            operation: "POST /x".into(),
            reason: Reason::new(kind, "detail\nwith a newline".into()),
        };
        let summary = Summary {
            operations: 6,
            tools: 3,
            skipped: vec![
                skip("security"),
                skip("multipart body"),
                skip("multipart body"),
            ],
            ..Default::default()
        };
        assert_eq!(
            summary.line(),
            "6 operations: 3 tools, 2 skipped: multipart body, 1 skipped: security"
        );
        assert!(summary.balanced());
        assert!(
            summary
                .comments()
                .contains("#   skipped POST /x: security: detail with a newline\n")
        );
    }
}
