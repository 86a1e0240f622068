//! The approvals of a local `serve --approvals-dir DIR`: one file per approval, written by the
//! runtime; decisions and uses are files of their own, each created exclusively, so the first
//! approver's decision stands and an approved call runs once even when two runtimes share the
//! directory. Does file I/O (blocking; the async side runs it on the blocking pool).
//!
//! ```text
//! DIR/apr-0123456789abcdef.json            the request (sealed call, message, expiry)
//! DIR/apr-0123456789abcdef.decision.json   approved or denied, by whom (CLI)
//! DIR/apr-0123456789abcdef.used.json       the call ran (runtime)
//! DIR/apr-0123456789abcdef.outcome.json    its sealed outcome, once (runtime)
//! ```

use super::record::{Approval, State, format_time, valid_id};
use super::store::{ApprovalStore, MAX_OUTCOME_CHARS, StoreError};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Most approval records a directory may hold (each call of a gated tool reads them all).
pub const MAX_RECORDS: usize = 10_000;
/// Largest record file read.
const MAX_RECORD_BYTES: u64 = 64 * 1024;
/// How long an expired approval's files stay (so `approvals list` can still show it).
const KEEP_EXPIRED: Duration = Duration::from_secs(24 * 3600);

const RECORD: &str = ".json";
const DECISION: &str = ".decision.json";
const USED: &str = ".used.json";
const OUTCOME: &str = ".outcome.json";
/// Largest outcome file read: the sealed outcome and its JSON around it.
const MAX_OUTCOME_FILE_BYTES: u64 = MAX_OUTCOME_CHARS as u64 + 1024;

/// A decision file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Decision {
    state: State,
    decided_by: String,
    decided_at: String,
}

/// A use file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Used {
    used_at: String,
}

/// An outcome file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Settled {
    outcome: String,
    settled_at: String,
}

/// Approvals kept in a directory.
#[derive(Clone, Debug)]
pub struct DirectoryStore {
    dir: PathBuf,
}

/// Why a decision was refused.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// Not an id the runtime writes.
    #[error("`{0}` is not an approval id (apr- and hex digits)")]
    InvalidId(String),
    /// No such approval.
    #[error("no approval `{id}` in {dir}")]
    Unknown {
        /// The id.
        id: String,
        /// The directory.
        dir: String,
    },
    /// Too late.
    #[error("approval `{id}` expired at {expires}; the caller must call again")]
    Expired {
        /// The id.
        id: String,
        /// When.
        expires: String,
    },
    /// Someone decided first.
    #[error("approval `{id}` is already {state} by {by}")]
    AlreadyDecided {
        /// The id.
        id: String,
        /// `approved` or `denied`.
        state: &'static str,
        /// Who.
        by: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DirectoryStore {
    /// The store in `dir`, which is created (owner-only) when missing.
    pub fn create(dir: &Path) -> Result<Self, StoreError> {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(dir).map_err(|source| io(dir, source))?;
        Self::open(dir)
    }

    /// The store in `dir`, which must exist (the CLI never invents one).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let meta = fs::metadata(dir).map_err(|source| io(dir, source))?;
        if !meta.is_dir() {
            return Err(io(
                dir,
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// Every approval in the directory, oldest first.
    pub fn list(&self) -> Result<Vec<Approval>, StoreError> {
        let mut all = Vec::new();
        for id in self.ids()? {
            if let Some(approval) = self.read(&id)? {
                all.push(approval);
            }
        }
        all.sort_by_key(|a| a.created);
        Ok(all)
    }

    /// Approves (`approve`) or denies approval `id` as `by`, at `now`. The first decision
    /// stands; an expired approval cannot be decided.
    pub fn decide(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        now: SystemTime,
    ) -> Result<Approval, DecideError> {
        if !valid_id(id) {
            return Err(DecideError::InvalidId(id.to_owned()));
        }
        let Some(mut approval) = self.read(id)? else {
            return Err(DecideError::Unknown {
                id: id.to_owned(),
                dir: self.dir.display().to_string(),
            });
        };
        if approval.state != State::Pending {
            return Err(already(&approval));
        }
        if approval.expired(now) {
            return Err(DecideError::Expired {
                id: id.to_owned(),
                expires: format_time(approval.expires),
            });
        }
        let state = if approve {
            State::Approved
        } else {
            State::Denied
        };
        let decision = Decision {
            state,
            decided_by: by.to_owned(),
            decided_at: format_time(now),
        };
        if !self.create_exclusive(&format!("{id}{DECISION}"), &to_json(&decision)?)? {
            // Another approver was quicker: report theirs.
            let current = self.read(id)?.unwrap_or(approval);
            return Err(already(&current));
        }
        approval.state = state;
        approval.decided_by = Some(by.to_owned());
        Ok(approval)
    }

    fn ids(&self) -> Result<Vec<String>, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(|source| io(&self.dir, source))?;
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| io(&self.dir, source))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(RECORD)) else {
                continue;
            };
            if valid_id(id) {
                if ids.len() == MAX_RECORDS {
                    return Err(StoreError::Full { max: MAX_RECORDS });
                }
                ids.push(id.to_owned());
            }
        }
        Ok(ids)
    }

    /// The approval `id` with its decision and use, if its record exists.
    fn read(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let Some(mut approval) = self.read_json::<Approval>(&format!("{id}{RECORD}"))? else {
            return Ok(None);
        };
        // The record is the runtime's; only the file name says which approval it is.
        approval.id = id.to_owned();
        approval.state = State::Pending;
        approval.decided_by = None;
        if let Some(decision) = self.read_json::<Decision>(&format!("{id}{DECISION}"))?
            && matches!(decision.state, State::Approved | State::Denied)
        {
            approval.state = decision.state;
            approval.decided_by = Some(decision.decided_by);
        }
        approval.used_at = None;
        approval.outcome = None;
        if approval.state == State::Approved
            && let Some(used) = self.read_json::<Used>(&format!("{id}{USED}"))?
        {
            approval.state = State::Used;
            // An unreadable time counts as "just now": the outcome is waited for, boundedly.
            approval.used_at = Some(
                humantime::parse_rfc3339_weak(&used.used_at).unwrap_or_else(|_| SystemTime::now()),
            );
            let name = format!("{id}{OUTCOME}");
            approval.outcome = self
                .read_json_within::<Settled>(&name, MAX_OUTCOME_FILE_BYTES)?
                .map(|settled| settled.outcome);
        }
        Ok(Some(approval))
    }

    fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        self.read_json_within(name, MAX_RECORD_BYTES)
    }

    fn read_json_within<T: serde::de::DeserializeOwned>(
        &self,
        name: &str,
        max_bytes: u64,
    ) -> Result<Option<T>, StoreError> {
        let path = self.dir.join(name);
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io(&path, source)),
        };
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(file, max_bytes + 1), &mut text)
            .map_err(|source| io(&path, source))?;
        if text.len() as u64 > max_bytes {
            return Err(invalid(&path, format!("larger than {max_bytes} bytes")));
        }
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|err| invalid(&path, err.to_string()))
    }

    /// Writes `name` with `text` unless it exists: a complete temporary file, then a hard link
    /// to the name, which fails when the name exists. `Ok(false)`: it existed.
    fn create_exclusive(&self, name: &str, text: &str) -> Result<bool, StoreError> {
        let temp = self.write_temp(name, text)?;
        let target = self.dir.join(name);
        let linked = fs::hard_link(&temp, &target);
        let _ = fs::remove_file(&temp);
        match linked {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(source) => Err(io(&target, source)),
        }
    }

    /// A complete, synced temporary file beside `name` (readers skip it: no record suffix).
    fn write_temp(&self, name: &str, text: &str) -> Result<PathBuf, StoreError> {
        let temp = self
            .dir
            .join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|source| io(&temp, source))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|source| io(&temp, source))?;
        Ok(temp)
    }

    fn find_sync(&self, digest: &str) -> Result<Vec<Approval>, StoreError> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|a| a.call.digest == digest)
            .collect())
    }

    fn create_sync(&self, approval: &Approval) -> Result<(), StoreError> {
        self.remove_long_expired(SystemTime::now())?;
        let name = format!("{}{RECORD}", approval.id);
        let temp = self.write_temp(&name, &to_json(approval)?)?;
        let target = self.dir.join(&name);
        // Ids are random: a rename never replaces another approval.
        fs::rename(&temp, &target).map_err(|source| io(&target, source))
    }

    fn claim_sync(&self, approval: &Approval) -> Result<bool, StoreError> {
        let used = Used {
            used_at: format_time(SystemTime::now()),
        };
        self.create_exclusive(&format!("{}{USED}", approval.id), &to_json(&used)?)
    }

    fn settle_sync(&self, approval: &Approval, outcome: &str) -> Result<bool, StoreError> {
        let refused = |message: &str| StoreError::Refused {
            id: approval.id.clone(),
            message: message.to_owned(),
        };
        if outcome.len() > MAX_OUTCOME_CHARS {
            return Err(refused("the outcome is larger than an approval records"));
        }
        let current = self.read(&approval.id)?;
        if current.is_none_or(|current| current.state != State::Used) {
            return Err(refused("only the outcome of a used approval is recorded"));
        }
        let settled = Settled {
            outcome: outcome.to_owned(),
            settled_at: format_time(SystemTime::now()),
        };
        self.create_exclusive(&format!("{}{OUTCOME}", approval.id), &to_json(&settled)?)
    }

    /// Removes the files of approvals that expired more than a day ago: the directory stays
    /// bounded by the calls of one day.
    fn remove_long_expired(&self, now: SystemTime) -> Result<(), StoreError> {
        for approval in self.list()? {
            if approval.expires + KEEP_EXPIRED < now {
                for suffix in [OUTCOME, USED, DECISION, RECORD] {
                    let path = self.dir.join(format!("{}{suffix}", approval.id));
                    match fs::remove_file(&path) {
                        Ok(()) => {}
                        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => return Err(io(&path, source)),
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl ApprovalStore for DirectoryStore {
    async fn find(&self, digest: &str) -> Result<Vec<Approval>, StoreError> {
        let (store, digest) = (self.clone(), digest.to_owned());
        blocking(move || store.find_sync(&digest)).await
    }

    async fn create(&self, approval: &Approval) -> Result<(), StoreError> {
        let (store, approval) = (self.clone(), approval.clone());
        blocking(move || store.create_sync(&approval)).await
    }

    async fn claim(&self, approval: &Approval) -> Result<bool, StoreError> {
        let (store, approval) = (self.clone(), approval.clone());
        blocking(move || store.claim_sync(&approval)).await
    }

    async fn settle(&self, approval: &Approval, outcome: &str) -> Result<bool, StoreError> {
        let (store, approval, outcome) = (self.clone(), approval.clone(), outcome.to_owned());
        blocking(move || store.settle_sync(&approval, &outcome)).await
    }

    fn approve_hint(&self, id: &str) -> String {
        format!(
            "mcp-runtime approve {id} --approvals-dir {}",
            self.dir.display()
        )
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| Err(StoreError::Kube(format!("approvals task failed: {err}"))))
}

fn already(approval: &Approval) -> DecideError {
    DecideError::AlreadyDecided {
        id: approval.id.clone(),
        state: approval.state.as_str(),
        by: approval
            .decided_by
            .clone()
            .unwrap_or_else(|| "someone".into()),
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string_pretty(value).map_err(|err| StoreError::Invalid {
        path: "(new record)".into(),
        message: err.to_string(),
    })
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn invalid(path: &Path, message: String) -> StoreError {
    StoreError::Invalid {
        path: path.display().to_string(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::call::SealedCall;
    use serde_json::json;
    use std::sync::Arc;

    fn pending(ttl: Duration) -> Approval {
        let call = SealedCall::new(None, "ops", "delete", &json!({"name": "x"}), "v1");
        Approval::pending(
            call,
            "Delete x?".into(),
            "oncall".into(),
            SystemTime::now(),
            ttl,
        )
    }

    #[tokio::test]
    async fn an_approved_call_is_claimed_once_under_concurrency() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(DirectoryStore::create(dir.path()).unwrap());
        let approval = pending(Duration::from_secs(60));
        store.create(&approval).await.unwrap();
        store
            .decide(&approval.id, true, "alice", SystemTime::now())
            .unwrap();
        let found = store.find(&approval.call.digest).await.unwrap();
        assert_eq!(found[0].state, State::Approved);
        // Two stores on one directory, as two runtimes would be.
        let other = Arc::new(DirectoryStore::open(dir.path()).unwrap());
        let mut claims = Vec::new();
        for i in 0..16 {
            let store = if i % 2 == 0 {
                store.clone()
            } else {
                other.clone()
            };
            let approval = found[0].clone();
            claims.push(tokio::spawn(async move { store.claim(&approval).await }));
        }
        let mut won = 0;
        for claim in claims {
            if claim.await.unwrap().unwrap() {
                won += 1;
            }
        }
        assert_eq!(won, 1);
        let after = store.find(&approval.call.digest).await.unwrap();
        assert_eq!(after[0].state, State::Used);
        assert_eq!(after[0].decided_by.as_deref(), Some("alice"));
    }

    #[tokio::test]
    async fn an_outcome_is_recorded_once_on_a_used_approval_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(DirectoryStore::create(dir.path()).unwrap());
        let approval = pending(Duration::from_secs(60));
        store.create(&approval).await.unwrap();
        // Not used yet: nothing to record.
        assert!(store.settle(&approval, "sealed").await.is_err());
        store
            .decide(&approval.id, true, "alice", SystemTime::now())
            .unwrap();
        assert!(store.claim(&approval).await.unwrap());
        let used = store.find(&approval.call.digest).await.unwrap().remove(0);
        assert_eq!(used.state, State::Used);
        assert!(used.used_at.is_some() && used.outcome.is_none());
        // Two runtimes on one directory race to record: one outcome stands.
        let other = Arc::new(DirectoryStore::open(dir.path()).unwrap());
        let mut settles = Vec::new();
        for i in 0..16 {
            let store = if i % 2 == 0 {
                store.clone()
            } else {
                other.clone()
            };
            let used = used.clone();
            settles.push(tokio::spawn(async move {
                store.settle(&used, &format!("outcome-{i}")).await
            }));
        }
        let mut won = Vec::new();
        for (i, settle) in settles.into_iter().enumerate() {
            if settle.await.unwrap().unwrap() {
                won.push(format!("outcome-{i}"));
            }
        }
        assert_eq!(won.len(), 1);
        let after = store.find(&approval.call.digest).await.unwrap().remove(0);
        assert_eq!(after.outcome.as_ref(), Some(&won[0]));
        let too_large = "x".repeat(MAX_OUTCOME_CHARS + 1);
        assert!(store.settle(&after, &too_large).await.is_err());
        // The record the CLI lists never carries the outcome.
        let listed = serde_json::to_value(&store.list().unwrap()[0]).unwrap();
        assert!(listed.get("outcome").is_none(), "{listed}");
    }

    #[test]
    fn the_first_decision_stands_and_unknown_or_expired_ids_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::create(dir.path()).unwrap();
        let approval = pending(Duration::from_secs(60));
        store.create_sync(&approval).unwrap();
        store
            .decide(&approval.id, false, "bob", SystemTime::now())
            .unwrap();
        let err = store
            .decide(&approval.id, true, "alice", SystemTime::now())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("approval `{}` is already denied by bob", approval.id)
        );
        let err = store
            .decide("apr-0000000000000000", true, "alice", SystemTime::now())
            .unwrap_err();
        assert!(matches!(err, DecideError::Unknown { .. }), "{err}");
        let err = store
            .decide("../etc/passwd", true, "alice", SystemTime::now())
            .unwrap_err();
        assert!(matches!(err, DecideError::InvalidId(_)), "{err}");
        let short = pending(Duration::from_secs(1));
        store.create_sync(&short).unwrap();
        let later = SystemTime::now() + Duration::from_secs(2);
        let err = store.decide(&short.id, true, "alice", later).unwrap_err();
        assert!(matches!(err, DecideError::Expired { .. }), "{err}");
    }

    #[test]
    fn long_expired_approvals_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::create(dir.path()).unwrap();
        let old = pending(Duration::from_secs(1));
        store.create_sync(&old).unwrap();
        store
            .remove_long_expired(SystemTime::now() + KEEP_EXPIRED + Duration::from_secs(5))
            .unwrap();
        assert!(store.list().unwrap().is_empty());
    }
}
