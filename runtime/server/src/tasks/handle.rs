//! Task ids that are their own state: the pending work, the tool, the caller's principal, a
//! digest of the arguments, creation time and TTL, sealed (ChaCha20-Poly1305) with the key all
//! replicas share. Any replica answers `tasks/*` by opening the id; no task store exists. A
//! tampered, expired or other-principal id is refused with one message that does not say
//! which. Pure (clock aside).

use crate::sessions::Sealer;
use mcp_protocol::McpError;
use serde::{Deserialize, Serialize};

/// Purpose a task id is sealed for: a session id or `requestState` never opens as one.
const HANDLE_AAD: &[u8] = b"kube-mcp task v1";
/// Longest task id accepted (an upstream status URL is most of it).
pub(crate) const MAX_HANDLE_LEN: usize = 8 * 1024;
/// Longest status URL sealed into an id.
pub(crate) const MAX_STATUS_URL_LEN: usize = 4 * 1024;
/// Longest arguments (as JSON) sealed into an id of a call waiting for its approval: with the
/// rest of the handle and base64, the id stays under [`MAX_HANDLE_LEN`].
pub(crate) const MAX_SEALED_ARGS_BYTES: usize = 4 * 1024;

/// The one refusal of an id that does not open for this caller now.
pub(crate) const UNKNOWN_TASK: &str =
    "unknown task: no task with this id is available to this caller";

/// The work a task waits for, each kind answered by its own code in `tasks.rs`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k")]
pub(crate) enum Pending {
    /// A job an `http.async` tool started upstream: its status URL.
    #[serde(rename = "job")]
    UpstreamJob {
        /// The status URL (checked against the start URL's origin when found).
        #[serde(rename = "s")]
        status_url: String,
    },
    /// A call of a gated tool waiting for its approval (`tasks/approval.rs`): what re-checks
    /// the approval and, once approved, runs the exact call. Sealed, so only a runtime reads
    /// the arguments.
    #[serde(rename = "apr")]
    Approval {
        /// The approval's id.
        #[serde(rename = "i")]
        id: String,
        /// The sealed call's digest (`approvals::SealedCall::digest`).
        #[serde(rename = "d")]
        digest: String,
        /// The call's arguments, whole (at most [`MAX_SEALED_ARGS_BYTES`] as JSON).
        #[serde(rename = "a")]
        args: serde_json::Value,
    },
}

/// What a task id carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskHandle {
    /// The pending work.
    #[serde(rename = "w")]
    pub(crate) work: Pending,
    /// The tool called.
    #[serde(rename = "t")]
    pub(crate) tool: String,
    /// Digest of the caller's principal (`None` without `spec.auth`).
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<String>,
    /// Digest of the arguments the call ran with (`audit::digest`, as audit records give it).
    #[serde(rename = "a")]
    pub(crate) args: String,
    /// Creation, milliseconds since the Unix epoch.
    #[serde(rename = "c")]
    pub(crate) created_ms: u64,
    /// Validity from creation, milliseconds.
    #[serde(rename = "l")]
    pub(crate) ttl_ms: u64,
}

impl TaskHandle {
    /// The task id.
    pub(crate) fn seal(&self, sealer: &Sealer) -> String {
        // Strings and numbers only: serializing cannot fail.
        let plain = serde_json::to_vec(self).unwrap_or_default();
        sealer.seal_bytes(HANDLE_AAD, &plain)
    }

    /// Opens `id` for the caller whose principal digest is `principal`, at `now_ms`.
    pub(crate) fn open(
        sealer: &Sealer,
        id: &str,
        principal: Option<&str>,
        now_ms: u64,
    ) -> Result<Self, McpError> {
        let unknown = || McpError::InvalidParams(UNKNOWN_TASK.into());
        let plain = sealer
            .open_bytes(HANDLE_AAD, id, MAX_HANDLE_LEN)
            .ok_or_else(unknown)?;
        let handle: Self = serde_json::from_slice(&plain).map_err(|_| unknown())?;
        if handle.principal.as_deref() != principal || handle.expires_ms() <= now_ms {
            return Err(unknown());
        }
        Ok(handle)
    }

    /// When the id stops opening.
    pub(crate) fn expires_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.ttl_ms)
    }
}

/// Milliseconds since the Unix epoch (0 on a clock before 1970).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::KEY_LEN;

    fn handle() -> TaskHandle {
        TaskHandle {
            work: Pending::UpstreamJob {
                status_url: "https://jobs.example.com/jobs/7?sig=secret".into(),
            },
            tool: "export".into(),
            principal: Some("ab12".into()),
            args: crate::audit::digest(&serde_json::json!({"id": 7})),
            created_ms: 1_000_000,
            ttl_ms: 60_000,
        }
    }

    #[test]
    fn another_replica_with_the_key_opens_it_and_nobody_reads_it() {
        let id = handle().seal(&Sealer::new(&[7u8; KEY_LEN]));
        assert!(!id.contains("jobs.example.com") && !id.contains("secret"));
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        let other = Sealer::new(&[7u8; KEY_LEN]);
        assert_eq!(
            TaskHandle::open(&other, &id, Some("ab12"), 1_000_001),
            Ok(handle())
        );
    }

    #[test]
    fn tampered_expired_foreign_and_other_principal_ids_are_refused_alike() {
        let sealer = Sealer::new(&[7u8; KEY_LEN]);
        let id = handle().seal(&sealer);
        let mut tampered = id.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        let refusals = [
            TaskHandle::open(&sealer, &tampered, Some("ab12"), 1_000_001),
            TaskHandle::open(&sealer, &id, Some("ab12"), 1_060_000),
            TaskHandle::open(&sealer, &id, Some("cd34"), 1_000_001),
            TaskHandle::open(&sealer, &id, None, 1_000_001),
            TaskHandle::open(&Sealer::new(&[8u8; KEY_LEN]), &id, Some("ab12"), 1_000_001),
            TaskHandle::open(&sealer, "not a task", Some("ab12"), 1_000_001),
            TaskHandle::open(&sealer, &"A".repeat(MAX_HANDLE_LEN + 1), None, 0),
        ];
        for refused in refusals {
            assert_eq!(refused, Err(McpError::InvalidParams(UNKNOWN_TASK.into())));
        }
    }

    #[test]
    fn a_waiting_approval_carries_the_whole_call_and_nobody_reads_it() {
        let sealer = Sealer::new(&[7u8; KEY_LEN]);
        let args = serde_json::json!({"name": "prod-secret-ns", "force": true});
        let waiting = TaskHandle {
            work: Pending::Approval {
                id: "apr-0123456789abcdef".into(),
                digest: "sha256:feed".into(),
                args: args.clone(),
            },
            ..handle()
        };
        let largest = TaskHandle {
            work: Pending::Approval {
                id: "apr-0123456789abcdef".into(),
                digest: format!("sha256:{}", "f".repeat(64)),
                args: serde_json::json!({"x": "y".repeat(MAX_SEALED_ARGS_BYTES - 8)}),
            },
            ..handle()
        };
        assert!(largest.seal(&sealer).len() <= MAX_HANDLE_LEN);
        let id = waiting.seal(&sealer);
        for secret in ["prod-secret-ns", "apr-0123", "feed", "force"] {
            assert!(!id.contains(secret), "{secret} readable in {id}");
        }
        let opened = TaskHandle::open(&sealer, &id, Some("ab12"), 1_000_001).unwrap();
        assert_eq!(opened, waiting);
        assert!(
            matches!(opened.work, Pending::Approval { args: opened_args, .. } if opened_args == args)
        );
        // Another principal, a tampered id or another key: the one refusal.
        let mut tampered = id.clone().into_bytes();
        tampered[10] = if tampered[10] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        let other_key = Sealer::new(&[8u8; KEY_LEN]);
        for refused in [
            TaskHandle::open(&sealer, &id, Some("cd34"), 1_000_001),
            TaskHandle::open(&sealer, &id, None, 1_000_001),
            TaskHandle::open(&sealer, &tampered, Some("ab12"), 1_000_001),
            TaskHandle::open(&other_key, &id, Some("ab12"), 1_000_001),
        ] {
            assert_eq!(refused, Err(McpError::InvalidParams(UNKNOWN_TASK.into())));
        }
    }

    #[test]
    fn a_session_id_or_request_state_never_opens_as_a_task() {
        let sealer = Sealer::new(&[7u8; KEY_LEN]);
        let plain = serde_json::to_vec(&handle()).unwrap();
        let other_purpose = sealer.seal_bytes(b"", &plain);
        assert!(TaskHandle::open(&sealer, &other_purpose, Some("ab12"), 1_000_001).is_err());
    }
}
