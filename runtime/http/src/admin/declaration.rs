//! `GET /declaration` on the admin port: what this replica serves (the declaration's hash and
//! item counts, the same report as `_meta["kube-mcp.io/declaration"]`), when it was loaded, and
//! how the last reload went. The operator's `Verified` condition asks every Ready pod here.
//! Read-only, no secrets (hashes, counts, times, and a compile error naming a field), and not
//! behind the MCP port's authentication. Pure: `routes.rs` serves it.

use crate::reload::ReloadLog;
use mcp_server::{Server, served_declaration};
use serde_json::{Value, json};

/// The report.
pub fn report(server: &Server, log: &ReloadLog) -> Value {
    let mut report = served_declaration(&server.declaration());
    let (loaded_at, last) = log.read();
    report["loadedAt"] = json!(loaded_at.to_string());
    if let Some(last) = last {
        let mut reload = json!({"at": last.at.to_string(), "outcome": last.outcome.as_str()});
        if let Some(hash) = last.hash {
            reload["hash"] = json!(hash);
        }
        if let Some(error) = last.error {
            reload["error"] = json!(error);
        }
        report["lastReload"] = reload;
    }
    report
}
