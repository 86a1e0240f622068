//! Why pods do not start, in `Ready`: a quota that refuses the pods (`FailedCreate`, from the
//! ReplicaSet's failure the real Deployment controller copies), and a pod no node can run
//! (`Unschedulable`, written here as the scheduler would: this control plane has none).

use crate::support::{Env, apply_server, eventually, server, wait_condition};
use k8s_openapi::api::core::v1::{Namespace, Pod, ResourceQuota};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use mcp_operator::resource::MCPServer;
use serde_json::json;
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);

#[tokio::test]
#[ignore = "needs a control plane and a running operator: tests/e2e/run.sh runs it"]
async fn a_quota_that_refuses_the_pods_is_failed_create() {
    let env = Env::get().await;
    let namespace = format!("e2e-quota-{}", rand::random_range(1000..9999));
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap(),
        )
        .await
        .unwrap();
    Api::<ResourceQuota>::namespaced(env.client.clone(), &namespace)
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "none"}, "spec": {"hard": {"pods": "0"}}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let in_namespace = env.in_namespace(&namespace);
    apply_server(&in_namespace, &server("quota", json!({})))
        .await
        .unwrap();
    let ready = wait_condition(
        &in_namespace,
        "quota",
        "Ready",
        ("False", "FailedCreate"),
        SOON,
        |m| m.contains("exceeded quota"),
    )
    .await;
    assert!(
        ready
            .message
            .starts_with("0 of 1 replicas available: pods cannot be created: "),
        "{}",
        ready.message
    );
    namespaces
        .delete(&namespace, &DeleteParams::background())
        .await
        .unwrap();
}

#[tokio::test]
#[ignore = "needs a control plane and a running operator: tests/e2e/run.sh runs it"]
async fn a_pod_no_node_can_run_is_unschedulable() {
    let env = Env::get().await;
    apply_server(&env, &server("unplaced", json!({})))
        .await
        .unwrap();
    let pod = eventually("the Deployment controller makes a pod", SOON, || async {
        env.api::<Pod>()
            .list(&ListParams::default().labels("kube-mcp.io/server=unplaced"))
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .next()
            .ok_or_else(|| "no pod yet".to_owned())
    })
    .await;
    let scheduler_says = json!({"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
    }]}});
    env.api::<Pod>()
        .patch_status(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&scheduler_says),
        )
        .await
        .unwrap();
    let ready = wait_condition(
        &env,
        "unplaced",
        "Ready",
        ("False", "Unschedulable"),
        SOON,
        |m| m.contains("3 Insufficient memory"),
    )
    .await;
    assert!(
        ready.message.starts_with(&format!(
            "0 of 1 replicas available: pod {}: Unschedulable: 0/3 nodes are available",
            pod.name_any()
        )),
        "{}",
        ready.message
    );
    env.api::<MCPServer>()
        .delete("unplaced", &DeleteParams::background())
        .await
        .unwrap();
}
