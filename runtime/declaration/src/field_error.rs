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

/// Every problem found in a declaration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct InvalidDeclaration {
    /// The problems, in declaration order.
    pub errors: Vec<FieldError>,
}
