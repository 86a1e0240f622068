//! A fleet upgrade: `tests/e2e/run.sh` brings a fleet of servers up (`a_fleet_comes_up`),
//! restarts the operator with another runtime image and `--max-concurrent-rollouts`, then checks
//! (`an_upgrade_rolls_at_most_the_limit_at_once`) that no more Deployments than that roll at
//! any moment while all of them reach the new image, and that a server waiting for a slot still
//! scales at once (scaling is no rollout). The tests play the kubelet: every pod of the
//! fleet is marked Running and Ready, so rollouts end as on a real node.

use crate::support::{
    Env, apply_server, eventually, loopback_prefix, operator_metrics, server, set_pod,
};
use futures_util::{StreamExt as _, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use mcp_operator::reconcile::status::rollout;
use mcp_operator::resource::MCPServer;
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const NAMESPACE: &str = "e2e-fleet";

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run tests/e2e/run.sh"))
}

fn fleet_size() -> usize {
    var("KUBE_MCP_E2E_FLEET_SIZE").parse().unwrap()
}

/// Marks every pod of the fleet that is not Ready as Running and Ready, with a loopback IP of its
/// own (nothing listens there: the verifier's questions are refused at once).
async fn play_kubelet(env: &Env, prefix: &str, next_ip: &AtomicU32) {
    let pods = env.api::<Pod>().list(&ListParams::default()).await.unwrap();
    let waiting: Vec<String> = pods
        .items
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            !pod.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .map(|pod| pod.name_any())
        .collect();
    stream::iter(waiting)
        .for_each_concurrent(8, |pod| async move {
            let n = next_ip.fetch_add(1, Ordering::Relaxed);
            let ip = format!("{prefix}{}", n % 250 + 1);
            // A pod deleted meanwhile (its ReplicaSet scaled down) is no failure.
            let _ = tokio::spawn({
                let env = env.clone();
                async move { set_pod(&env, &pod, &ip, true).await }
            })
            .await;
        })
        .await;
}

/// The fleet's Deployments.
async fn deployments(env: &Env) -> Vec<Deployment> {
    env.api::<Deployment>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

fn image(deployment: &Deployment) -> Option<&str> {
    deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.as_deref())
}

fn rolled_out(deployment: &Deployment) -> bool {
    rollout(deployment, deployment.spec.replicas.unwrap_or(1)).rolled_out
}

#[tokio::test]
#[ignore = "needs a control plane and a running operator: tests/e2e/run.sh runs it"]
async fn a_fleet_comes_up() {
    let env = Env::get().await.in_namespace(NAMESPACE);
    Api::<Namespace>::all(env.client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap(),
        )
        .await
        .unwrap();
    stream::iter(0..fleet_size())
        .for_each_concurrent(16, |i| {
            let env = &env;
            async move {
                let fleet_server = server(&format!("fleet-{i:03}"), json!({}));
                apply_server(env, &fleet_server).await.unwrap();
            }
        })
        .await;
    let (prefix, next_ip) = (loopback_prefix(), AtomicU32::new(0));
    eventually(
        "every Deployment of the fleet rolled out",
        Duration::from_secs(300),
        || async {
            play_kubelet(&env, &prefix, &next_ip).await;
            let all = deployments(&env).await;
            let done = all
                .iter()
                .filter(|d| rolled_out(d) && rollout(d, 1).available >= 1)
                .count();
            if done == fleet_size() {
                Ok(())
            } else {
                Err(format!("{done} of {} rolled out", fleet_size()))
            }
        },
    )
    .await;
}

fn queued(server: &MCPServer) -> bool {
    server
        .status
        .as_ref()
        .is_some_and(|s| s.rollout_queued == Some(true))
}

/// Scales a server that waits for a rollout slot and sees its Deployment take the replicas on
/// its old pod template. Called before the test plays the kubelet: no rollout can finish and
/// free a slot meanwhile, so the server keeps waiting throughout.
async fn a_queued_server_scales_at_once(env: &Env, new_image: &str) {
    let waiting = eventually(
        "a server waits for a rollout slot",
        Duration::from_secs(60),
        || async {
            let servers = env.api::<MCPServer>().list(&ListParams::default()).await;
            let servers = servers.map_err(|e| e.to_string())?;
            let found = servers.items.iter().find(|s| queued(s));
            found.map(|s| s.name_any()).ok_or_else(|| "none yet".into())
        },
    )
    .await;
    env.api::<MCPServer>()
        .patch(
            &waiting,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .unwrap();
    eventually(
        &format!("{waiting}'s Deployment has 2 replicas of its old pods"),
        Duration::from_secs(30),
        || async {
            let deployment = env.api::<Deployment>().get(&waiting).await;
            let deployment = deployment.map_err(|e| e.to_string())?;
            assert_ne!(image(&deployment), Some(new_image), "{waiting} rolled");
            match deployment.spec.replicas {
                Some(2) => Ok(()),
                other => Err(format!("replicas {other:?}")),
            }
        },
    )
    .await;
}

#[tokio::test]
#[ignore = "needs a control plane and a running operator: tests/e2e/run.sh runs it"]
async fn an_upgrade_rolls_at_most_the_limit_at_once() {
    let env = Env::get().await.in_namespace(NAMESPACE);
    let new_image = var("KUBE_MCP_E2E_FLEET_IMAGE");
    let limit: usize = var("KUBE_MCP_E2E_MAX_ROLLOUTS").parse().unwrap();
    a_queued_server_scales_at_once(&env, &new_image).await;
    let (prefix, next_ip) = (loopback_prefix(), AtomicU32::new(0));
    let mut most = 0;
    let mut queued_seen = false;
    let started = std::time::Instant::now();
    loop {
        let all = deployments(&env).await;
        let upgraded: Vec<&Deployment> = all
            .iter()
            .filter(|d| image(d) == Some(new_image.as_str()))
            .collect();
        let rolling = upgraded.iter().filter(|d| !rolled_out(d)).count();
        most = most.max(rolling);
        assert!(
            rolling <= limit,
            "{rolling} Deployments roll at once; the limit is {limit}"
        );
        if !queued_seen {
            let servers = env.api::<MCPServer>().list(&ListParams::default()).await;
            queued_seen = servers.unwrap().items.iter().any(queued);
        }
        if upgraded.len() == fleet_size() && rolling == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(420),
            "the upgrade did not finish: {} of {} upgraded, {rolling} rolling",
            upgraded.len(),
            fleet_size()
        );
        play_kubelet(&env, &prefix, &next_ip).await;
    }
    assert!(most > 0, "nothing was seen rolling");
    assert!(queued_seen, "no server was seen waiting for a slot");
    let metrics = operator_metrics(&env).await;
    assert!(
        metrics.contains("mcp_operator_rollouts{state=\"queued\"} 0"),
        "{metrics}"
    );
    // Every server says what it runs now.
    eventually(
        "every server's status names the new image",
        Duration::from_secs(60),
        || async {
            let servers = env.api::<MCPServer>().list(&ListParams::default()).await;
            let stale = servers
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .filter(|s| {
                    s.status.as_ref().and_then(|s| s.runtime_image.as_deref())
                        != Some(new_image.as_str())
                })
                .count();
            if stale == 0 {
                Ok(())
            } else {
                Err(format!("{stale} servers name another image"))
            }
        },
    )
    .await;
    println!("fleet upgrade: at most {most} of {limit} rolling at once");
    Api::<Namespace>::all(env.client.clone())
        .delete(NAMESPACE, &DeleteParams::background())
        .await
        .unwrap();
}
