//! The approvals command line: `serve`'s flags choosing the approval store, and the local
//! approver's commands (`approvals list`, `approve`, `deny`) over a `--approvals-dir`.

use clap::{Args, Subcommand};
use mcp_server::approvals::{
    Approval, DirectoryStore, KubeConfig, Owner, State, StoreConfig, format_time,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

/// `serve`'s approval store flags.
#[derive(Args)]
pub(crate) struct ApprovalsArgs {
    /// Keep the approvals of gated tools (tools[].approval) in DIR, one file each; decide them
    /// with `mcp-runtime approve|deny ID --approvals-dir DIR`.
    #[arg(long, value_name = "DIR", conflicts_with = "approvals_kube")]
    approvals_dir: Option<PathBuf>,
    /// Keep the approvals of gated tools as MCPApproval objects in the cluster (in-cluster
    /// ServiceAccount credentials unless the --kube-* flags say otherwise).
    #[arg(long)]
    approvals_kube: bool,
    /// The MCPServer that owns the MCPApprovals (deleted with it); with --approvals-owner-uid.
    #[arg(long, value_name = "NAME", requires_all = ["approvals_kube", "approvals_owner_uid"])]
    approvals_owner_name: Option<String>,
    /// The uid of that MCPServer.
    #[arg(long, value_name = "UID", requires = "approvals_owner_name")]
    approvals_owner_uid: Option<String>,
    /// Kubernetes API server URL (default: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT).
    #[arg(long, value_name = "URL", requires = "approvals_kube")]
    kube_api_url: Option<String>,
    /// Bearer token file, read again for each request (default: the pod's ServiceAccount token).
    #[arg(long, value_name = "FILE", requires = "approvals_kube")]
    kube_token_file: Option<PathBuf>,
    /// CA bundle of the API server (default: the pod's ServiceAccount ca.crt).
    #[arg(long, value_name = "FILE", requires = "approvals_kube")]
    kube_ca_file: Option<PathBuf>,
    /// Namespace of the MCPApprovals (default: the pod's namespace).
    #[arg(long, value_name = "NAMESPACE", requires = "approvals_kube")]
    kube_namespace: Option<String>,
}

impl ApprovalsArgs {
    /// The store these flags choose.
    pub(crate) fn store_config(&self) -> anyhow::Result<StoreConfig> {
        if let Some(dir) = &self.approvals_dir {
            return Ok(StoreConfig::Directory(dir.clone()));
        }
        if !self.approvals_kube {
            return Ok(StoreConfig::None);
        }
        let config = KubeConfig::in_cluster(
            |name| std::env::var(name).ok(),
            self.kube_api_url.clone(),
            self.kube_token_file.clone(),
            self.kube_ca_file.clone(),
            self.kube_namespace.clone(),
        )?;
        let owner = self
            .approvals_owner_name
            .clone()
            .zip(self.approvals_owner_uid.clone())
            .map(|(name, uid)| Owner { name, uid });
        Ok(StoreConfig::Kube(config, owner))
    }
}

/// `mcp-runtime approvals ...`.
#[derive(Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// List every approval (pending, approved, denied, used) with its id, tool, caller and expiry.
    List(ListArgs),
}

/// `approvals list` flags.
#[derive(Args)]
pub(crate) struct ListArgs {
    /// The directory `serve --approvals-dir` keeps approvals in.
    #[arg(long, value_name = "DIR")]
    approvals_dir: PathBuf,
    /// Print a JSON array (id, tool, principal, expires, state, ...) instead of a table.
    #[arg(long)]
    json: bool,
}

/// `approve` and `deny` flags.
#[derive(Args)]
pub(crate) struct DecideArgs {
    /// The approval's id, as the caller's tool error and `approvals list` show it.
    id: String,
    /// The directory `serve --approvals-dir` keeps approvals in.
    #[arg(long, value_name = "DIR")]
    approvals_dir: PathBuf,
}

/// `approvals list`.
pub(crate) fn list(command: &ApprovalsCommand) -> ExitCode {
    let ApprovalsCommand::List(args) = command;
    let listed = DirectoryStore::open(&args.approvals_dir).and_then(|store| store.list());
    let approvals = match listed {
        Ok(approvals) => approvals,
        Err(err) => return fail(&err),
    };
    let now = SystemTime::now();
    if args.json {
        let rows: Vec<serde_json::Value> = approvals.iter().map(|a| row(a, now)).collect();
        println!("{}", serde_json::Value::Array(rows));
        return ExitCode::SUCCESS;
    }
    println!(
        "{:<21} {:<9} {:<24} {:<24} {:<21} MESSAGE",
        "ID", "STATE", "TOOL", "PRINCIPAL", "EXPIRES"
    );
    for approval in &approvals {
        println!(
            "{:<21} {:<9} {:<24} {:<24} {:<21} {}",
            approval.id,
            shown_state(approval, now),
            approval.call.tool,
            approval.call.principal,
            format_time(approval.expires),
            approval.message
        );
    }
    ExitCode::SUCCESS
}

/// `approve` (`approve: true`) and `deny`.
pub(crate) fn decide(args: &DecideArgs, approve: bool) -> ExitCode {
    let decided = DirectoryStore::open(&args.approvals_dir)
        .map_err(Into::into)
        .and_then(|store| store.decide(&args.id, approve, &os_user(), SystemTime::now()));
    match decided {
        Ok(approval) => {
            println!(
                "{} {} ({}: {}) as {}",
                approval.state.as_str(),
                approval.id,
                approval.call.tool,
                approval.message,
                approval.decided_by.as_deref().unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(err) => fail(&err),
    }
}

/// One approval in `--json`.
fn row(approval: &Approval, now: SystemTime) -> serde_json::Value {
    serde_json::json!({
        "id": approval.id,
        "state": shown_state(approval, now),
        "tool": approval.call.tool,
        "server": approval.call.server,
        "principal": approval.call.principal,
        "message": approval.message,
        "approvers": {"group": approval.approvers},
        "decidedBy": approval.decided_by,
        "created": format_time(approval.created),
        "expires": format_time(approval.expires),
        "digest": approval.call.digest,
    })
}

/// The state, with `expired` for one that can no longer be decided or used.
fn shown_state(approval: &Approval, now: SystemTime) -> &'static str {
    match approval.state {
        State::Pending | State::Approved if approval.expired(now) => "expired",
        state => state.as_str(),
    }
}

/// Who decides locally: the OS user (`USER`, `LOGNAME`), else the process's uid.
fn os_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt as _;
                if let Ok(meta) = std::fs::metadata("/proc/self") {
                    return format!("uid:{}", meta.uid());
                }
            }
            "unknown".into()
        })
}

fn fail(err: &dyn std::error::Error) -> ExitCode {
    eprintln!("error: {err}");
    ExitCode::FAILURE
}
