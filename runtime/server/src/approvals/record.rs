//! One approval as the stores keep it and the CLI shows it: the sealed call, what the approver
//! is asked, who may approve, when it expires, and where it stands (pending, approved, denied,
//! used) with the sealed outcome of the call. Times are RFC 3339 text, as Kubernetes writes them. Pure.

use super::call::SealedCall;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// Longest approval id: a Kubernetes object name label.
pub const MAX_ID_CHARS: usize = 63;

/// Where an approval stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Waiting for an approver.
    #[default]
    Pending,
    /// An approver said yes; the call may run once.
    Approved,
    /// An approver said no.
    Denied,
    /// The call ran.
    Used,
}

impl State {
    /// The state as written in stores and shown to people.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Used => "used",
        }
    }
}

/// One approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// Its id (`apr-` and hex digits; the Kubernetes object's name).
    pub id: String,
    /// The call it is for.
    pub call: SealedCall,
    /// What the approver is asked (the declared message over the call's arguments).
    pub message: String,
    /// The Kubernetes group whose members may approve.
    pub approvers: String,
    /// When it was asked for.
    #[serde(with = "rfc3339")]
    pub created: SystemTime,
    /// After this nobody may approve it and the call does not run.
    #[serde(with = "rfc3339")]
    pub expires: SystemTime,
    /// Where it stands.
    pub state: State,
    /// Who approved or denied it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// The store's revision of this record (Kubernetes `resourceVersion`), the precondition of
    /// marking it used.
    #[serde(skip)]
    pub revision: Option<String>,
    /// When the call ran (a used approval).
    #[serde(skip)]
    pub used_at: Option<SystemTime>,
    /// The call's outcome, sealed with the session key so that only a runtime reads it (people
    /// who may read approvals may not read results); recorded once, after the call ran.
    #[serde(skip)]
    pub outcome: Option<String>,
}

impl Approval {
    /// A new pending approval of `call` with a fresh id.
    pub fn pending(
        call: SealedCall,
        message: String,
        approvers: String,
        now: SystemTime,
        ttl: Duration,
    ) -> Self {
        Self {
            id: new_id(),
            call,
            message,
            approvers,
            created: now,
            expires: now + ttl,
            state: State::Pending,
            decided_by: None,
            revision: None,
            used_at: None,
            outcome: None,
        }
    }

    /// Whether it can no longer be approved or used at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        now >= self.expires
    }
}

/// A fresh id: 64 random bits.
fn new_id() -> String {
    format!("apr-{:016x}", rand::random::<u64>())
}

/// Whether `id` can name an approval: lowercase letters, digits and `-`, at most
/// [`MAX_ID_CHARS`] (so it is also a safe file name and object name).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
}

/// RFC 3339 text for a time (seconds precision, UTC).
pub fn format_time(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// (De)serializes a `SystemTime` as RFC 3339 text.
pub(crate) mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub(crate) fn serialize<S: Serializer>(time: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_time(*time))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_rfc3339_weak(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_names() {
        let call = SealedCall::new(None, "s", "t", &serde_json::json!({}), "v");
        let approval = Approval::pending(
            call,
            "m".into(),
            "g".into(),
            SystemTime::now(),
            Duration::from_secs(1),
        );
        assert!(valid_id(&approval.id), "{}", approval.id);
        for bad in ["", "../x", "A", "a/b", "-a", &"a".repeat(64)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn expiry_is_exclusive_of_the_last_instant() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let call = SealedCall::new(None, "s", "t", &serde_json::json!({}), "v");
        let approval = Approval::pending(call, "m".into(), "g".into(), now, Duration::from_secs(5));
        assert!(!approval.expired(now + Duration::from_secs(4)));
        assert!(approval.expired(now + Duration::from_secs(5)));
        let json = serde_json::to_value(&approval).unwrap();
        assert_eq!(json["expires"], "1970-01-01T00:16:45Z");
        assert_eq!(json["state"], "pending");
        let back: Approval = serde_json::from_value(json).unwrap();
        assert_eq!(back, approval);
    }
}
