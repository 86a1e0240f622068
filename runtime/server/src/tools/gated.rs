//! A gated tool's call before it runs: the approval gate (`crate::approvals`) over the sealed
//! call, turned into the tool error a stopped caller reads (or, for a client that takes tasks,
//! a task waiting for the approval), and noted for the audit record
//! (who approved). Store I/O through the gate.

use super::super::RequestContext;
use super::shape;
use crate::Served;
use crate::approvals::{self, ApprovalStore, Ask, Gate, SealedCall};
use crate::backends::ToolReply;
use crate::sessions::Sealer;
use crate::tasks;
use crate::telemetry;
use mcp_declaration::CompiledApproval;
use serde_json::{Value, json};
use std::time::SystemTime;

/// `None` when the call may run now (its approval was approved and is now used); else the
/// result that stops it: for a client that takes tasks (`as_task`: the key task ids are sealed
/// with) and a pending approval, a task that completes once an approver decides
/// (`tasks/approval.rs`); else a tool error.
pub(super) async fn stop(
    decl: &Served,
    store: Option<&dyn ApprovalStore>,
    ctx: &RequestContext,
    tool: &str,
    approval: &CompiledApproval,
    args: &Value,
    as_task: Option<&Sealer>,
) -> Option<Value> {
    let Some(store) = store else {
        // Startup refuses a declaration with approvals and no store; a reload that adds one
        // must not run the tool unguarded either.
        return Some(error(
            ctx,
            "this tool needs approvals, but the server has no approval store configured".into(),
            None,
        ));
    };
    let server = decl.server_info["name"].as_str().unwrap_or_default();
    let message = match decl.templates.render(&approval.message, args) {
        Ok(message) => message,
        Err(err) => return Some(error(ctx, format!("approval message: {err}"), None)),
    };
    let ask = Ask {
        call: SealedCall::new(ctx.caller.as_deref(), server, tool, args, &approval.version),
        message,
        approvers: approval.group.clone(),
        ttl: approval.ttl,
    };
    let gate = match approvals::check(store, &ask, SystemTime::now()).await {
        Ok(gate) => gate,
        Err(err) => {
            tracing::warn!(error = %err, tool, "approval store failed");
            return Some(error(
                ctx,
                "the approval store is unavailable; the call did not run, try again later".into(),
                None,
            ));
        }
    };
    note(&gate, &ask.call.principal);
    let hint = |id: &str| store.approve_hint(id);
    let (text, meta) = approvals::refusal(&gate, &hint)?;
    if let (Some(sealer), Gate::Pending { approval, .. }) = (as_task, &gate) {
        let message = approvals::waiting_text(approval, &hint);
        let task =
            tasks::approval::waiting(sealer, ctx, tool, approval, args, message, meta.clone());
        if let Some(task) = task {
            return Some(task);
        }
    }
    Some(error(ctx, text, Some(meta)))
}

/// Tells the audit record which approval the call went through, who asked and who decided.
fn note(gate: &Gate, requester: &str) {
    let (id, state, approver) = match gate {
        Gate::Approved { id, approver } => (id, "approved", Some(approver.as_str())),
        Gate::Pending { approval, .. } => (&approval.id, "pending", None),
        Gate::Denied { id, approver } => (id, "denied", Some(approver.as_str())),
        Gate::Expired { id, .. } => (id, "expired", None),
    };
    telemetry::record_approval(id, state, requester, approver);
}

fn error(ctx: &RequestContext, text: String, meta: Option<Value>) -> Value {
    let mut result = shape(ToolReply::error(text), ctx.era);
    if let Some(meta) = meta {
        result["_meta"] = json!({ approvals::AUTHORIZATION_META: meta });
    }
    result
}
