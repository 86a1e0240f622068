//! What a caller sees when the gate stops a call: a tool error (`isError: true`) the model can
//! read, saying who must approve and how, and to call again with the same arguments; and the
//! same in `_meta` for programs, in the shape of SEP-2643's authorization denial (a draft:
//! `reason`, `authorizationContextId`, `remediationHints`). Pure.
//!
//! The key is [`AUTHORIZATION_META`], `kube-mcp.io/authorization`: SEP-2643 puts its object in
//! a JSON-RPC error's `data.authorization`, which a tool result has no place for, and `_meta`
//! keys under `io.modelcontextprotocol/` are the specification's own; so the object keeps its
//! shape under our prefix (as `kube-mcp.io/limit` does for limits) until the draft settles.

use super::gate::Gate;
use super::record::{Approval, format_time};
use serde_json::{Value, json};

/// `_meta` key of a tool result stopped by an approval gate.
pub const AUTHORIZATION_META: &str = "kube-mcp.io/authorization";

/// The text and `_meta` value of a stopped call; `None` for [`Gate::Approved`].
pub fn refusal(gate: &Gate, hint: &dyn Fn(&str) -> String) -> Option<(String, Value)> {
    let (text, id, state, approval) = match gate {
        Gate::Approved { .. } => return None,
        Gate::Pending { approval, .. } => (
            pending_text(approval, hint),
            &approval.id,
            "pending",
            Some(approval),
        ),
        Gate::Denied { id, approver } => (
            format!(
                "{approver} denied this call (approval {id}); an identical call is refused until \
                 that approval expires"
            ),
            id,
            "denied",
            None,
        ),
        Gate::Expired { id, approval } => (
            format!(
                "approval {id} expired before the call came back, so it cannot run. {}",
                pending_text(approval, hint)
            ),
            &approval.id,
            "expired",
            Some(approval),
        ),
    };
    let mut hint_object = json!({"type": "approval", "approvalId": id, "state": state});
    if let Some(approval) = approval {
        hint_object["message"] = json!(approval.message);
        hint_object["approvers"] = json!({"group": approval.approvers});
        hint_object["expires"] = json!(format_time(approval.expires));
        hint_object["approve"] = json!(hint(&approval.id));
    }
    let meta = json!({
        "reason": "insufficient_authorization",
        "authorizationContextId": id,
        "remediationHints": [hint_object],
    });
    Some((text, meta))
}

fn pending_text(approval: &Approval, hint: &dyn Fn(&str) -> String) -> String {
    format!(
        "{} then call again with the same arguments.",
        who_approves(approval, hint)
    )
}

/// The `statusMessage` of a task waiting for `approval`: what the approver is asked, who
/// approves and how.
pub fn waiting_text(approval: &Approval, hint: &dyn Fn(&str) -> String) -> String {
    format!(
        "{} The task completes when they decide.",
        who_approves(approval, hint)
    )
}

fn who_approves(approval: &Approval, hint: &dyn Fn(&str) -> String) -> String {
    format!(
        "This call needs approval by a member of `{group}`: \"{message}\". Approval {id} is \
         pending until {expires}. Ask an approver to run `{command}`;",
        group = approval.approvers,
        message = approval.message,
        id = approval.id,
        expires = format_time(approval.expires),
        command = hint(&approval.id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::call::SealedCall;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_pending_call_says_who_approves_and_how() {
        let call = SealedCall::new(None, "ops", "delete", &json!({"name": "x"}), "v1");
        let approval = Approval::pending(
            call,
            "Delete x?".into(),
            "oncall".into(),
            SystemTime::UNIX_EPOCH,
            Duration::from_secs(60),
        );
        let gate = Gate::Pending {
            approval: approval.clone(),
            created: true,
        };
        let (text, meta) = refusal(&gate, &|id| format!("approve {id}")).unwrap();
        assert!(text.contains("`oncall`"), "{text}");
        assert!(
            text.contains(&format!("run `approve {}`", approval.id)),
            "{text}"
        );
        assert!(text.contains("same arguments"), "{text}");
        assert_eq!(meta["reason"], "insufficient_authorization");
        assert_eq!(meta["authorizationContextId"], json!(approval.id));
        assert_eq!(meta["remediationHints"][0]["state"], "pending");
        assert_eq!(
            meta["remediationHints"][0]["expires"],
            "1970-01-01T00:01:00Z"
        );
        let approved = Gate::Approved {
            id: approval.id,
            approver: "a".into(),
        };
        assert!(refusal(&approved, &|id| id.to_owned()).is_none());
    }
}
