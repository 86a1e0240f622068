//! Session keys against a real API server, with the operator's own RBAC: a Secret planted under
//! the name older operators used is never mounted; a key is created by the operator, owned by
//! its server; a rotation mounts a new sealing key next to the replaced one, which is unmounted
//! and deleted once the operator's `--session-key-overlap` (passed in) has passed.

use crate::support::{Env, apply_server, eventually, server};
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{DeleteParams, PostParams};
use mcp_operator::resource::MCPServer;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);
const SERVER: &str = "keys";
const KEY: &str = "kube-mcp.io/session-key";
const PREVIOUS: &str = "kube-mcp.io/previous-session-key";

/// The operator's `--session-key-overlap`.
fn overlap() -> Duration {
    let seconds = std::env::var("KUBE_MCP_E2E_SESSION_KEY_OVERLAP_S")
        .expect("KUBE_MCP_E2E_SESSION_KEY_OVERLAP_S is not set: run tests/e2e/run.sh");
    Duration::from_secs(seconds.parse().unwrap())
}

/// The Deployment's recorded keys and the Secrets its pod template mounts, once `done` holds.
async fn keys_when(
    env: &Env,
    what: &str,
    limit: Duration,
    done: impl Fn(&BTreeMap<String, String>) -> bool,
) -> (BTreeMap<String, String>, Vec<String>) {
    eventually(what, limit, || async {
        let deployment = env
            .api::<Deployment>()
            .get(SERVER)
            .await
            .map_err(|e| e.to_string())?;
        let annotations = deployment.annotations().clone();
        if !done(&annotations) {
            return Err(format!("{annotations:?}"));
        }
        let mounted = deployment
            .spec
            .template
            .spec
            .and_then(|p| p.volumes)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.secret.and_then(|s| s.secret_name))
            .collect();
        Ok((annotations, mounted))
    })
    .await
}

/// Asserts the Secret is a 32-byte immutable key controlled by the server.
async fn assert_owned_key(env: &Env, name: &str, server_uid: &str) {
    let secret = env.api::<Secret>().get(name).await.unwrap();
    assert_eq!(secret.immutable, Some(true), "{name}");
    assert_eq!(secret.data.unwrap()["key"].0.len(), 32, "{name}");
    let owner = secret
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .find(|o| o.controller == Some(true))
        .unwrap();
    assert_eq!(owner.uid, server_uid, "{name}");
}

#[tokio::test]
#[ignore = "needs a control plane and a running operator: tests/e2e/run.sh runs it"]
async fn a_planted_key_is_never_mounted_and_a_rotation_retires_the_old_key() {
    let env = Env::get().await;
    let secrets = env.api::<Secret>();
    // Someone who may create Secrets (not MCPServers) plants the name older operators used.
    let planted = format!("{SERVER}-session-key");
    let mut secret = Secret {
        data: Some(BTreeMap::from([(
            "key".to_owned(),
            ByteString(vec![7; 32]),
        )])),
        ..Default::default()
    };
    secret.metadata.name = Some(planted.clone());
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    let servers = env.api::<MCPServer>();
    let applied = apply_server(&env, &server(SERVER, json!({})))
        .await
        .unwrap();
    let uid = applied.uid().unwrap();

    let (annotations, mounted) = keys_when(&env, "the Deployment records its key", SOON, |a| {
        a.contains_key(KEY)
    })
    .await;
    let first = annotations[KEY].clone();
    assert_ne!(first, planted);
    assert!(first.starts_with(&format!("{planted}-")), "{first}");
    assert_eq!(mounted, vec![first.clone()]);
    assert_owned_key(&env, &first, &uid).await;
    let untouched = secrets.get(&planted).await.unwrap();
    assert!(untouched.owner_references().is_empty());

    // A rotation: a new key seals, the first one still opens.
    let mut rotated = server(SERVER, json!({}));
    rotated["metadata"]["annotations"] = json!({"kube-mcp.io/rotate-session-key": "one"});
    apply_server(&env, &rotated).await.unwrap();
    let (annotations, mounted) = keys_when(&env, "the Deployment mounts a new key", SOON, |a| {
        a.get(KEY) != Some(&first) && a.get(PREVIOUS) == Some(&first)
    })
    .await;
    let second = annotations[KEY].clone();
    assert_owned_key(&env, &second, &uid).await;
    assert_eq!(mounted, vec![second.clone(), first.clone()]);
    let args = env
        .api::<Deployment>()
        .get(SERVER)
        .await
        .unwrap()
        .spec
        .template
        .spec
        .unwrap()
        .containers[0]
        .args
        .clone()
        .unwrap();
    assert!(args.iter().any(|a| a == "--previous-session-key-file"));

    // After the overlap the first key is unmounted and deleted; the second stays.
    keys_when(&env, "the replaced key retires", overlap() + SOON, |a| {
        a.get(PREVIOUS).is_none()
    })
    .await;
    eventually("the replaced key's Secret is deleted", SOON, || async {
        match secrets.get_opt(&first).await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_owned_key(&env, &second, &uid).await;

    servers
        .delete(SERVER, &DeleteParams::background())
        .await
        .unwrap();
    secrets
        .delete(&planted, &DeleteParams::background())
        .await
        .unwrap();
}
