//! Protocol versions and the two eras: 2026-07-28 (stateless) and the session-based legacy ones.

/// The stateless protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Every version served, newest first (sent as `supportedVersions`).
pub const SUPPORTED_VERSIONS: &[&str] = &[
    MODERN_VERSION,
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// The `_meta` keys of the 2026-07-28 protocol.
pub mod meta {
    /// Protocol version of a stateless request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// Client capabilities of a stateless request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// Per-request log level.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// Server identity on results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The listen request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// A session-based protocol version, oldest first so that comparisons read naturally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LegacyVersion {
    /// HTTP+SSE era.
    V2024_11_05,
    /// Streamable HTTP, sessions, audio, tool annotations.
    V2025_03_26,
    /// Structured content, resource links, protocol version header.
    V2025_06_18,
    /// Icons, SSE priming.
    V2025_11_25,
}

/// The newest legacy version, offered when a client asks for one we do not know.
pub const LATEST_LEGACY: LegacyVersion = LegacyVersion::V2025_11_25;

impl LegacyVersion {
    /// Parses a version string.
    pub fn parse(version: &str) -> Option<Self> {
        Some(match version {
            "2024-11-05" => Self::V2024_11_05,
            "2025-03-26" => Self::V2025_03_26,
            "2025-06-18" => Self::V2025_06_18,
            "2025-11-25" => Self::V2025_11_25,
            _ => return None,
        })
    }

    /// Negotiates from `initialize` params: the requested `protocolVersion` when served, else
    /// the newest legacy one.
    pub fn negotiate(initialize_params: &serde_json::Value) -> Self {
        initialize_params
            .get("protocolVersion")
            .and_then(serde_json::Value::as_str)
            .and_then(Self::parse)
            .unwrap_or(LATEST_LEGACY)
    }

    /// The version string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
        }
    }

    /// Whether results may carry `structuredContent` and `resource_link` blocks.
    pub fn has_structured_content(self) -> bool {
        self >= Self::V2025_06_18
    }
}

/// How a request is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: stateless, `_meta` on every request, `resultType` on every result.
    Modern,
    /// A session negotiated at this version.
    Legacy(LegacyVersion),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions_and_offers_the_newest_otherwise() {
        let asked = |version: &str| serde_json::json!({"protocolVersion": version});
        assert_eq!(
            LegacyVersion::negotiate(&asked("2025-03-26")),
            LegacyVersion::V2025_03_26
        );
        assert_eq!(
            LegacyVersion::negotiate(&asked("1999-01-01")),
            LATEST_LEGACY
        );
        assert_eq!(
            LegacyVersion::negotiate(&serde_json::json!({})),
            LATEST_LEGACY
        );
        assert!(LegacyVersion::V2025_06_18.has_structured_content());
        assert!(!LegacyVersion::V2025_03_26.has_structured_content());
    }
}
