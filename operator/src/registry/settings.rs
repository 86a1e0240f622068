//! What the registry publishes and how it names entries: the reverse-DNS prefix, which servers
//! are listed without asking (namespaces, labels), and the bounds of its answers. Pure.

use crate::resource::MCPServer;
use kube::ResourceExt as _;
use std::net::SocketAddr;

/// Default entries per page, and the most a client may ask for.
pub const DEFAULT_PAGE: usize = 30;
/// The most entries one page holds, whatever `limit` asks.
pub const MAX_PAGE: usize = 100;
/// Default number of deleted entries remembered (so `updated_since` readers learn of them).
pub const DEFAULT_TOMBSTONES: usize = 1000;

/// How the registry runs.
#[derive(Clone, Debug)]
pub struct RegistryConfig {
    /// Where the API and the catalog page listen.
    pub listen: SocketAddr,
    /// What is published and how.
    pub settings: Settings,
}

/// What is published, and how it is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The part of every name before the `/`, such as `com.example.mcp` (letters, digits, `.`
    /// and `-`: the registry's name pattern).
    pub prefix: String,
    /// Namespaces whose servers are listed unless they set `spec.registry.publish: false`.
    pub namespaces: Vec<String>,
    /// Labels (`key=value`) whose servers are listed unless they opt out.
    pub labels: Vec<(String, String)>,
    /// Deleted entries remembered, oldest forgotten first.
    pub max_tombstones: usize,
    /// The runtimes serve server cards: `/.well-known/ai-catalog.json` lists them.
    pub server_cards: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            prefix: "local.kube-mcp".into(),
            namespaces: Vec::new(),
            labels: Vec::new(),
            max_tombstones: DEFAULT_TOMBSTONES,
            server_cards: false,
        }
    }
}

/// Why a setting is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// The prefix does not fit the registry's name pattern.
    #[error(
        "registry namespace `{0}` must be 1-100 characters of letters, digits, `.` and `-`, such as `com.example.mcp`"
    )]
    Prefix(String),
    /// A label selector is not `key=value`.
    #[error("registry label `{0}` must be `key=value`")]
    Label(String),
}

/// Checks a reverse-DNS prefix.
pub fn parse_prefix(text: &str) -> Result<String, SettingsError> {
    let ok = (1..=100).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && !text.starts_with('.')
        && !text.ends_with('.');
    ok.then(|| text.to_owned())
        .ok_or_else(|| SettingsError::Prefix(text.to_owned()))
}

/// Parses `key=value`.
pub fn parse_label(text: &str) -> Result<(String, String), SettingsError> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(SettingsError::Label(text.to_owned())),
    }
}

impl Settings {
    /// Whether `server` is listed: its own `spec.registry.publish` decides when set, else its
    /// namespace or labels.
    pub fn publishes(&self, server: &MCPServer) -> bool {
        if let Some(publish) = server
            .spec
            .deployment
            .registry
            .as_ref()
            .and_then(|r| r.publish)
        {
            return publish;
        }
        let namespace = server.namespace().unwrap_or_default();
        self.namespaces.contains(&namespace)
            || self
                .labels
                .iter()
                .any(|(key, value)| server.labels().get(key) == Some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(yaml: &str) -> MCPServer {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn the_server_decides_then_namespaces_and_labels() {
        let settings = Settings {
            namespaces: vec!["team-a".into()],
            labels: vec![("catalog".into(), "yes".into())],
            ..Settings::default()
        };
        let base = "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPServer\n";
        let cases = [
            ("metadata: {name: a, namespace: other}\nspec: {}", false),
            (
                "metadata: {name: a, namespace: other}\nspec: {registry: {publish: true}}",
                true,
            ),
            ("metadata: {name: a, namespace: team-a}\nspec: {}", true),
            (
                "metadata: {name: a, namespace: team-a}\nspec: {registry: {publish: false}}",
                false,
            ),
            (
                "metadata: {name: a, namespace: other, labels: {catalog: 'yes'}}\nspec: {}",
                true,
            ),
            (
                "metadata: {name: a, namespace: other, labels: {catalog: 'no'}}\nspec: {}",
                false,
            ),
        ];
        for (yaml, published) in cases {
            assert_eq!(
                settings.publishes(&server(&format!("{base}{yaml}"))),
                published,
                "{yaml}"
            );
        }
    }

    #[test]
    fn prefixes_and_labels_are_checked() {
        assert_eq!(parse_prefix("com.example.mcp").unwrap(), "com.example.mcp");
        for bad in ["", "a/b", "a b", ".a", "a.", &"a".repeat(101)] {
            assert!(parse_prefix(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_label("a=b").unwrap(), ("a".into(), "b".into()));
        assert!(parse_label("=b").is_err());
        assert!(parse_label("ab").is_err());
    }
}
