//! What the compiler reports: each problem of a declaration located by its field path (shared
//! by the compiler, the access rules and the cluster rules). Pure.

/// One problem in a declaration, located by its field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Such as `spec.tools[2].content[0].text`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// How many problems a message lists: one mistake repeated over a thousand imported tools (a
/// Secret not mounted, say) would otherwise make a log line or condition of megabytes.
pub(crate) const LISTED_ERRORS: usize = 20;

/// Every problem found in a declaration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct InvalidDeclaration {
    /// The problems, in declaration order.
    pub errors: Vec<FieldError>,
}

impl std::fmt::Display for InvalidDeclaration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, error) in self.errors.iter().take(LISTED_ERRORS).enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        match self.errors.len().saturating_sub(LISTED_ERRORS) {
            0 => Ok(()),
            more => write!(f, "; and {more} more"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(count: usize) -> InvalidDeclaration {
        let errors = (0..count)
            .map(|i| FieldError {
                path: format!("spec.tools[{i}]"),
                message: "bad".into(),
            })
            .collect();
        InvalidDeclaration { errors }
    }

    #[test]
    fn a_message_lists_the_first_problems_and_counts_the_rest() {
        assert_eq!(
            invalid(2).to_string(),
            "spec.tools[0]: bad; spec.tools[1]: bad"
        );
        let long = invalid(LISTED_ERRORS + 1196).to_string();
        assert!(long.starts_with("spec.tools[0]: bad; "), "{long}");
        assert!(long.contains(&format!("spec.tools[{}]: bad", LISTED_ERRORS - 1)));
        assert!(!long.contains(&format!("spec.tools[{LISTED_ERRORS}]")));
        assert!(long.ends_with("; and 1196 more"), "{long}");
    }
}
