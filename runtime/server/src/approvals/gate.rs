//! The approval gate of one call: given the sealed call, decide whether it may run now (an
//! approved, unused, unexpired approval, which is marked used before the call runs), or is
//! pending (an approval is created, or the pending one reused), denied or expired. Callable
//! from any path that runs a gated tool: today's `tools/call`, later a task. Store I/O only.

use super::call::SealedCall;
use super::record::{Approval, State};
use super::store::{ApprovalStore, StoreError};
use std::time::{Duration, SystemTime};

/// What a gated call asks for.
#[derive(Clone, Debug)]
pub struct Ask {
    /// The call.
    pub call: SealedCall,
    /// The declared message over the call's arguments.
    pub message: String,
    /// The group whose members may approve.
    pub approvers: String,
    /// How long a new approval stays valid.
    pub ttl: Duration,
}

/// The gate's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Run the call: the approval `id` was approved by `approver` and is now used.
    Approved {
        /// The approval.
        id: String,
        /// Who approved it.
        approver: String,
    },
    /// Wait: `approval` waits for an approver (created by this call when `created`).
    Pending {
        /// The pending approval.
        approval: Approval,
        /// Whether this call asked for it (else an earlier identical call did).
        created: bool,
    },
    /// Refused: an approver denied the call (until the approval expires, a new identical call
    /// is refused too rather than asking again).
    Denied {
        /// The approval.
        id: String,
        /// Who denied it.
        approver: String,
    },
    /// Refused: the approval `id` was approved but expired before the call came back; a new
    /// one, `approval`, now waits.
    Expired {
        /// The expired approval.
        id: String,
        /// The new pending approval.
        approval: Approval,
    },
}

/// Decides `ask` at `now` against `store`.
pub async fn check(
    store: &dyn ApprovalStore,
    ask: &Ask,
    now: SystemTime,
) -> Result<Gate, StoreError> {
    let mut found = store.find(&ask.call.digest).await?;
    // Newest first: the latest word on this call decides.
    found.sort_by_key(|a| std::cmp::Reverse(a.created));
    for approval in found.iter().filter(|a| a.state == State::Approved) {
        if approval.expired(now) {
            continue;
        }
        if store.claim(approval).await? {
            return Ok(Gate::Approved {
                id: approval.id.clone(),
                approver: approval.decided_by.clone().unwrap_or_default(),
            });
        }
        // Another request ran it first: this call needs an approval of its own.
    }
    let newest = found.first();
    match newest {
        Some(approval) if approval.state == State::Pending && !approval.expired(now) => {
            Ok(Gate::Pending {
                approval: approval.clone(),
                created: false,
            })
        }
        Some(approval) if approval.state == State::Denied && !approval.expired(now) => {
            Ok(Gate::Denied {
                id: approval.id.clone(),
                approver: approval.decided_by.clone().unwrap_or_default(),
            })
        }
        Some(approval) if approval.state == State::Approved => {
            // Approved, not claimed above: expired before this call came back.
            let expired = approval.id.clone();
            let approval = create(store, ask, now).await?;
            Ok(Gate::Expired {
                id: expired,
                approval,
            })
        }
        _ => Ok(Gate::Pending {
            approval: create(store, ask, now).await?,
            created: true,
        }),
    }
}

async fn create(
    store: &dyn ApprovalStore,
    ask: &Ask,
    now: SystemTime,
) -> Result<Approval, StoreError> {
    let approval = Approval::pending(
        ask.call.clone(),
        ask.message.clone(),
        ask.approvers.clone(),
        now,
        ask.ttl,
    );
    store.create(&approval).await?;
    Ok(approval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::directory::DirectoryStore;
    use serde_json::json;

    fn ask(name: &str, ttl: Duration) -> Ask {
        Ask {
            call: SealedCall::new(None, "ops", "delete", &json!({ "name": name }), "v1"),
            message: format!("Delete {name}?"),
            approvers: "oncall".into(),
            ttl,
        }
    }

    fn pending_id(gate: &Gate) -> String {
        match gate {
            Gate::Pending { approval, .. } | Gate::Expired { approval, .. } => approval.id.clone(),
            other => panic!("not pending: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_runs_once_per_approval() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::create(dir.path()).unwrap();
        let now = SystemTime::now();
        let ask = ask("prod", Duration::from_secs(60));
        let first = check(&store, &ask, now).await.unwrap();
        let id = pending_id(&first);
        assert!(matches!(first, Gate::Pending { created: true, .. }));
        let again = check(&store, &ask, now).await.unwrap();
        assert_eq!(pending_id(&again), id, "the pending approval is reused");
        assert!(matches!(again, Gate::Pending { created: false, .. }));
        // Other arguments are another call.
        let other = check(&store, &self::ask("dev", Duration::from_secs(60)), now)
            .await
            .unwrap();
        assert_ne!(pending_id(&other), id);
        store.decide(&id, true, "alice", now).unwrap();
        assert_eq!(
            check(&store, &ask, now).await.unwrap(),
            Gate::Approved {
                id: id.clone(),
                approver: "alice".into()
            }
        );
        let next = check(&store, &ask, now).await.unwrap();
        assert!(matches!(next, Gate::Pending { created: true, .. }));
        assert_ne!(pending_id(&next), id);
    }

    #[tokio::test]
    async fn denied_and_expired_approvals_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::create(dir.path()).unwrap();
        let now = SystemTime::now();
        let ask = ask("prod", Duration::from_secs(2));
        let id = pending_id(&check(&store, &ask, now).await.unwrap());
        store.decide(&id, false, "bob", now).unwrap();
        assert_eq!(
            check(&store, &ask, now).await.unwrap(),
            Gate::Denied {
                id: id.clone(),
                approver: "bob".into()
            }
        );
        // After the denial expires, the caller may ask again.
        let later = now + Duration::from_secs(3);
        let fresh = pending_id(&check(&store, &ask, later).await.unwrap());
        assert_ne!(fresh, id);
        store.decide(&fresh, true, "alice", later).unwrap();
        let too_late = later + Duration::from_secs(3);
        match check(&store, &ask, too_late).await.unwrap() {
            Gate::Expired { id, approval } => {
                assert_eq!(id, fresh);
                assert_eq!(approval.state, State::Pending);
            }
            other => panic!("not expired: {other:?}"),
        }
    }
}
