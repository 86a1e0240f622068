//! The first step of `mcp-operator run`: read the installed CRDs (`MCPServer`, `MCPToolSet`,
//! `MCPToolSetGrant`, which share one revision) and raise each to this operator's revision, never
//! lower it. Helm installs the chart's `crds/` on `helm install` only,
//! so raising the CRD on upgrade is this step's job, and a `helm rollback` (which re-applies an
//! old release's stored manifest) has no CRD to lower. I/O.

use crate::reconcile::apply::FIELD_MANAGER;
use crate::resource::{self, CRD_REVISION, RevisionError, Standing};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use std::time::Duration;

/// Name of the `MCPServer` CRD.
pub const CRD_NAME: &str = "mcpservers.kube-mcp.io";

/// Helm's marks of a release's object. A raised CRD loses them: the release no longer holds it,
/// and without them a `helm upgrade` to an older chart that templated the CRD fails instead of
/// adopting the CRD and lowering it.
const HELM_ANNOTATIONS: [&str; 2] = [
    "meta.helm.sh/release-name",
    "meta.helm.sh/release-namespace",
];
const HELM_LABEL: &str = "app.kubernetes.io/managed-by";

/// Each API server swaps the schema it serves a CRD with a moment after the CRD changes, and no
/// condition says when: the operator writes nothing for this long after raising it, so that no
/// status write decodes a server with the old schema (which would drop the new fields).
const SETTLE: Duration = Duration::from_secs(3);
/// Longest wait for a created CRD to be `Established`.
const ESTABLISH_LIMIT: Duration = Duration::from_secs(30);
/// Reads and applies tried when the CRD changes between them.
const ATTEMPTS: u32 = 3;

/// What the step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The CRD already had this operator's revision.
    Current,
    /// No CRD was installed; the operator installed its own.
    Created,
    /// The CRD was older (`None`: it had no revision); the operator applied its own.
    Raised(Option<u32>),
    /// The CRD is newer than the operator and was left as it is.
    LeftNewer(u32),
}

/// Why the operator cannot start with the installed CRD.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// A CRD could not be read (the operator needs `get` on it).
    #[error("cannot read CustomResourceDefinition {0}")]
    Read(String, #[source] kube::Error),
    /// A CRD could not be written (the operator needs `patch` on it).
    #[error("cannot apply CustomResourceDefinition {0}")]
    Apply(String, #[source] kube::Error),
    /// A CRD kept changing while the operator raised it.
    #[error("CustomResourceDefinition {0} changed during each of {ATTEMPTS} attempts to raise it")]
    Busy(String),
    /// The CRD's revision annotation is not a number.
    #[error(transparent)]
    Revision(#[from] RevisionError),
    /// No CRD, and the operator may not install it.
    #[error(
        "CustomResourceDefinition {name} is not installed and --manage-crd is off: {}",
        install_hint(name)
    )]
    Missing {
        /// The CRD's name.
        name: String,
    },
    /// An older CRD, and the operator may not raise it: serving with it would drop the fields
    /// it lacks from stored servers, a newer security field among them.
    #[error(
        "CustomResourceDefinition {name} has {found}, older than this operator's revision \
         {CRD_REVISION}, and --manage-crd is off: stored objects would lose the fields it lacks; \
         {}",
        install_hint(name)
    )]
    Older {
        /// The CRD's name.
        name: String,
        /// The installed revision, in words.
        found: String,
    },
}

/// The command that installs this release's CRD by hand. The two fragment kinds share one file.
fn install_hint(name: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let file = match name {
        CRD_NAME | "mcpapprovals.kube-mcp.io" => name,
        _ => "mcptoolsets.kube-mcp.io",
    };
    format!(
        "run `kubectl apply --server-side --force-conflicts -f crds/{file}.yaml` with the file \
         of kube-mcp {version} (`helm show crds oci://ghcr.io/kube-mcp/charts/kube-mcp --version \
         {version}` prints it), or turn --manage-crd on"
    )
}

/// Reads the installed CRDs and, when `manage` is set, raises each to this operator's revision.
/// Without `manage`, a CRD older than the operator (or none) is an error: the operator refuses to
/// run rather than serve servers whose newer fields the API server drops. Returns what happened
/// to the `MCPServer` CRD (the fragment kinds' are logged).
pub async fn ensure(client: &Client, manage: bool) -> Result<Outcome, CrdError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let servers = ensure_one(&api, resource::crd(), manage).await?;
    for ours in resource::toolset_crds() {
        ensure_one(&api, ours, manage).await?;
    }
    ensure_one(&api, resource::approval_crd(), manage).await?;
    Ok(servers)
}

/// [`ensure`] for one CRD.
async fn ensure_one(
    api: &Api<CustomResourceDefinition>,
    ours: CustomResourceDefinition,
    manage: bool,
) -> Result<Outcome, CrdError> {
    let name = ours.name_any();
    for _ in 0..ATTEMPTS {
        let installed = api
            .get_opt(&name)
            .await
            .map_err(|err| CrdError::Read(name.clone(), err))?;
        let outcome = match resource::standing(installed.as_ref(), CRD_REVISION)? {
            Standing::Current => Outcome::Current,
            Standing::Newer(theirs) => Outcome::LeftNewer(theirs),
            Standing::Missing if !manage => return Err(CrdError::Missing { name }),
            Standing::Older(found) if !manage => {
                let found = found.map_or("no revision".to_owned(), |r| format!("revision {r}"));
                return Err(CrdError::Older { name, found });
            }
            Standing::Missing => Outcome::Created,
            Standing::Older(found) => Outcome::Raised(found),
        };
        match outcome {
            Outcome::Current => {
                tracing::debug!(crd = name, revision = CRD_REVISION, "the CRD is current");
            }
            Outcome::LeftNewer(theirs) => tracing::warn!(
                crd = name,
                installed = theirs,
                ours = CRD_REVISION,
                "the CRD is newer than this operator; leaving it as it is (servers using fields \
                 this operator does not know are refused as Unparseable)"
            ),
            Outcome::Created | Outcome::Raised(_) => {
                match raise(api, ours.clone(), installed.as_ref()).await {
                    Err(kube::Error::Api(status)) if status.code == 409 => continue,
                    other => other.map_err(|err| CrdError::Apply(name.clone(), err))?,
                }
                tracing::info!(crd = name, from = ?outcome, to = CRD_REVISION, "raised the CRD");
                settle(api, &name).await;
            }
        }
        return Ok(outcome);
    }
    Err(CrdError::Busy(name))
}

/// Applies this operator's CRD over `installed`, only if `installed` is still what the API
/// server holds (its resourceVersion), then drops Helm's marks.
async fn raise(
    api: &Api<CustomResourceDefinition>,
    mut ours: CustomResourceDefinition,
    installed: Option<&CustomResourceDefinition>,
) -> Result<(), kube::Error> {
    let name = ours.name_any();
    ours.metadata.resource_version = installed.and_then(|crd| crd.resource_version());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let applied = api.patch(&name, &params, &Patch::Apply(&ours)).await?;
    if applied.annotations().contains_key(HELM_ANNOTATIONS[0]) {
        let mut unmark = json!({"metadata": {"annotations": {
            HELM_ANNOTATIONS[0]: null,
            HELM_ANNOTATIONS[1]: null,
        }}});
        if applied.labels().get(HELM_LABEL).map(String::as_str) == Some("Helm") {
            unmark["metadata"]["labels"] = json!({HELM_LABEL: null});
        }
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&unmark))
            .await?;
    }
    Ok(())
}

/// Waits until the CRD is `Established` (bounded), then for [`SETTLE`].
async fn settle(api: &Api<CustomResourceDefinition>, name: &str) {
    let started = tokio::time::Instant::now();
    while started.elapsed() < ESTABLISH_LIMIT {
        let established = api.get_opt(name).await.ok().flatten().is_some_and(|crd| {
            crd.status
                .and_then(|s| s.conditions)
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
        if established {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(SETTLE).await;
}
