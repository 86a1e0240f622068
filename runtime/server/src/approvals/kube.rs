//! Approvals as `MCPApproval` objects (group `kube-mcp.io`, namespaced, status subresource),
//! owned by the `MCPServer` so they go with it. The runtime creates them and marks them used;
//! people approve or deny them by patching their status, which Kubernetes RBAC (who may patch
//! `mcpapprovals/status`) and the chart's admission policy (the decider recorded truthfully,
//! only pending -> approved|denied, only the creator marks one used) decide. "Used" is written
//! with the object's `resourceVersion` as a precondition: a conflict means another request or
//! replica ran it. The call's sealed outcome goes into `status.outcome`, once, the same way.
//! Does network I/O (`kube/api.rs`).

mod api;

pub use api::KubeConfig;

use super::call::SealedCall;
use super::record::{Approval, State, format_time};
use super::store::{ApprovalStore, MAX_OUTCOME_CHARS, StoreError};
use api::{Api, refused};
use async_trait::async_trait;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

/// The API group and version of `MCPApproval`.
const API_VERSION: &str = "kube-mcp.io/v1alpha1";
/// Label holding (a prefix of) the call digest, so one call's approvals are listed alone.
const DIGEST_LABEL: &str = "kube-mcp.io/call-digest";
/// Most approvals listed for one call digest.
const MAX_LISTED: usize = 100;

/// The `MCPServer` approvals belong to (their owner).
#[derive(Clone, Debug)]
pub struct Owner {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// Approvals kept as `MCPApproval` objects.
#[derive(Debug)]
pub struct KubeStore {
    api: Api,
    owner: Option<Owner>,
    /// Who this runtime is to the API server (its ServiceAccount's user name), asked once.
    user: OnceCell<String>,
}

impl KubeStore {
    /// A store in `config.namespace`, creating approvals owned by `owner`.
    pub fn new(config: KubeConfig, owner: Option<Owner>) -> Result<Self, StoreError> {
        Ok(Self {
            api: Api::new(config)?,
            owner,
            user: OnceCell::new(),
        })
    }

    fn collection(&self) -> String {
        format!(
            "/apis/{API_VERSION}/namespaces/{}/mcpapprovals",
            self.api.namespace()
        )
    }

    /// This runtime's user name, from a SelfSubjectReview (recorded in each approval as
    /// `spec.requestedBy`; the admission policy checks it is the creator's).
    async fn user(&self) -> Result<&str, StoreError> {
        self.user
            .get_or_try_init(|| async {
                let review = json!({
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "SelfSubjectReview",
                });
                let answer = self
                    .api
                    .send(
                        Method::POST,
                        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                        Some(&review),
                    )
                    .await?;
                answer
                    .body
                    .pointer("/status/userInfo/username")
                    .and_then(Value::as_str)
                    .filter(|_| answer.status == 201 || answer.status == 200)
                    .map(str::to_owned)
                    .ok_or_else(|| refused("who am I (SelfSubjectReview)", &answer))
            })
            .await
            .map(String::as_str)
    }

    /// The object for a new approval.
    fn object(&self, approval: &Approval, requested_by: &str) -> Value {
        let mut metadata = json!({
            "name": approval.id,
            "namespace": self.api.namespace(),
            "labels": {
                DIGEST_LABEL: digest_label(&approval.call.digest),
                "app.kubernetes.io/managed-by": "mcp-runtime",
            },
        });
        if let Some(owner) = &self.owner {
            metadata["ownerReferences"] = json!([{
                "apiVersion": API_VERSION,
                "kind": "MCPServer",
                "name": owner.name,
                "uid": owner.uid,
            }]);
        }
        json!({
            "apiVersion": API_VERSION,
            "kind": "MCPApproval",
            "metadata": metadata,
            "spec": {
                "call": approval.call,
                "principal": approval.call.principal,
                "tool": approval.call.tool,
                "message": approval.message,
                "approvers": {"group": approval.approvers},
                "requestedBy": requested_by,
                "created": format_time(approval.created),
                "expires": format_time(approval.expires),
            },
        })
    }
}

#[async_trait]
impl ApprovalStore for KubeStore {
    async fn find(&self, digest: &str) -> Result<Vec<Approval>, StoreError> {
        let path = format!(
            "{}?labelSelector={DIGEST_LABEL}%3D{}&limit={MAX_LISTED}",
            self.collection(),
            digest_label(digest)
        );
        let answer = self.api.send(Method::GET, &path, None).await?;
        if answer.status != 200 {
            return Err(refused("list MCPApprovals", &answer));
        }
        let items = answer
            .body
            .get("items")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        Ok(items
            .iter()
            .filter_map(from_object)
            // The label holds a prefix; the spec holds the whole digest.
            .filter(|approval| approval.call.digest == digest)
            .collect())
    }

    async fn create(&self, approval: &Approval) -> Result<(), StoreError> {
        let requested_by = self.user().await?.to_owned();
        let object = self.object(approval, &requested_by);
        let answer = self
            .api
            .send(Method::POST, &self.collection(), Some(&object))
            .await?;
        if answer.status != 201 {
            return Err(refused("create MCPApproval", &answer));
        }
        Ok(())
    }

    async fn claim(&self, approval: &Approval) -> Result<bool, StoreError> {
        let Some(revision) = &approval.revision else {
            return Ok(false);
        };
        let path = format!("{}/{}/status", self.collection(), approval.id);
        let current = self.api.send(Method::GET, &path, None).await?;
        if current.status != 200 {
            return Err(refused("read MCPApproval", &current));
        }
        let mut object = current.body;
        if object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(revision.as_str())
        {
            return Ok(false);
        }
        object["status"]["state"] = json!(State::Used.as_str());
        object["status"]["usedAt"] = json!(format_time(std::time::SystemTime::now()));
        // PUT with the resourceVersion read: the API server refuses it (409) if anything
        // changed since, so of two claims only one succeeds.
        let answer = self.api.send(Method::PUT, &path, Some(&object)).await?;
        match answer.status {
            200 => Ok(true),
            409 => Ok(false),
            _ => Err(refused("mark MCPApproval used", &answer)),
        }
    }

    async fn settle(&self, approval: &Approval, outcome: &str) -> Result<bool, StoreError> {
        if outcome.len() > MAX_OUTCOME_CHARS {
            return Err(StoreError::Refused {
                id: approval.id.clone(),
                message: "the outcome is larger than an approval records".into(),
            });
        }
        let path = format!("{}/{}/status", self.collection(), approval.id);
        let current = self.api.send(Method::GET, &path, None).await?;
        if current.status != 200 {
            return Err(refused("read MCPApproval", &current));
        }
        let mut object = current.body;
        if object.pointer("/status/outcome").is_some() {
            return Ok(false);
        }
        if object.pointer("/status/state").and_then(Value::as_str) != Some(State::Used.as_str()) {
            return Err(StoreError::Refused {
                id: approval.id.clone(),
                message: "only the outcome of a used approval is recorded".into(),
            });
        }
        object["status"]["outcome"] = json!(outcome);
        // With the resourceVersion just read: of two writers only one succeeds (409).
        let answer = self.api.send(Method::PUT, &path, Some(&object)).await?;
        match answer.status {
            200 => Ok(true),
            409 => Ok(false),
            _ => Err(refused("record the MCPApproval's outcome", &answer)),
        }
    }

    fn approve_hint(&self, id: &str) -> String {
        format!(
            "kubectl -n {} patch mcpapproval {id} --subresource=status --type=merge \
             -p '{{\"status\":{{\"state\":\"approved\",\"decidedBy\":\"<your user name>\"}}}}'",
            self.api.namespace()
        )
    }
}

/// The label value of a digest: its hex digits, cut to a label's 63 characters.
fn digest_label(digest: &str) -> String {
    digest
        .trim_start_matches("sha256:")
        .chars()
        .take(63)
        .collect()
}

/// An approval read from its object; `None` for an object that is not one the runtime wrote.
fn from_object(object: &Value) -> Option<Approval> {
    let spec = object.get("spec")?;
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let time = |key: &str| humantime::parse_rfc3339_weak(&text(spec, key)?).ok();
    let status = object.get("status").unwrap_or(&Value::Null);
    let state = match status.get("state").and_then(Value::as_str) {
        None | Some("pending") => State::Pending,
        Some("approved") => State::Approved,
        Some("denied") => State::Denied,
        Some("used") => State::Used,
        Some(_) => return None,
    };
    Some(Approval {
        id: text(object.get("metadata")?, "name")?,
        call: serde_json::from_value::<SealedCall>(spec.get("call")?.clone()).ok()?,
        message: text(spec, "message")?,
        approvers: text(spec.get("approvers")?, "group")?,
        created: time("created")?,
        expires: time("expires")?,
        state,
        decided_by: text(status, "decidedBy"),
        revision: text(object.get("metadata")?, "resourceVersion"),
        used_at: text(status, "usedAt").and_then(|t| humantime::parse_rfc3339_weak(&t).ok()),
        outcome: text(status, "outcome"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn an_object_reads_back_as_the_approval_it_was_made_from() {
        let config = KubeConfig {
            api_url: "https://127.0.0.1:1".into(),
            token_file: "/nonexistent".into(),
            ca_file: None,
            namespace: "ops".into(),
        };
        let owner = Owner {
            name: "ops".into(),
            uid: "u-1".into(),
        };
        let store = KubeStore::new(config, Some(owner)).unwrap();
        let call = SealedCall::new(None, "ops", "delete", &json!({"name": "x"}), "v1");
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let approval = Approval::pending(
            call,
            "Delete x?".into(),
            "oncall".into(),
            now,
            Duration::from_secs(60),
        );
        let mut object = store.object(&approval, "system:serviceaccount:ops:ops");
        assert_eq!(object["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(object["spec"]["expires"], "1970-01-12T13:47:40Z");
        assert_eq!(
            object["metadata"]["labels"][DIGEST_LABEL]
                .as_str()
                .unwrap()
                .len(),
            63
        );
        object["metadata"]["resourceVersion"] = json!("7");
        let back = from_object(&object).unwrap();
        assert_eq!(back.revision.as_deref(), Some("7"));
        assert_eq!(
            Approval {
                revision: None,
                ..back.clone()
            },
            approval
        );
        object["status"] = json!({"state": "approved", "decidedBy": "alice"});
        let decided = from_object(&object).unwrap();
        assert_eq!(decided.state, State::Approved);
        assert_eq!(decided.decided_by.as_deref(), Some("alice"));
        object["status"] = json!({"state": "used", "decidedBy": "alice",
            "usedAt": "1970-01-12T13:47:00Z", "outcome": "sealed"});
        let used = from_object(&object).unwrap();
        assert_eq!(used.outcome.as_deref(), Some("sealed"));
        assert_eq!(used.used_at, Some(now + Duration::from_secs(20)));
        object["status"]["state"] = json!("approved-by-me");
        assert!(
            from_object(&object).is_none(),
            "unknown states are not approvals"
        );
    }
}
