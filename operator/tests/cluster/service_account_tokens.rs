//! `serviceAccountToken` clients of `http.auth` against the real API server: the Deployment the
//! operator writes (and the API server accepts) mounts a projected token of the pod's
//! ServiceAccount for the declared audience, where the runtime reads it, and drops it when no
//! client uses it any more; the automounted token stays off throughout.

use crate::support::{Env, apply_server, eventually, server};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::DeleteParams;
use mcp_operator::resource::MCPServer;
use serde_json::{Value, json};
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);
const AUDIENCE: &str = "https://idp.example.test/assertions";

/// A tool whose client authenticates with the pod's ServiceAccount token for `audience`.
fn sa_tool(audience: &str) -> Value {
    json!({"name": "service", "http": {"url": "https://tracker.example.test/all", "auth": {
        "clientCredentials": {"tokenUrl": "https://idp.example.test/token",
            "client": {"id": "kube-mcp", "serviceAccountToken": {"audience": audience}}}}}})
}

/// The audiences of the projected token volumes of `deployment`'s pods, with their mount paths,
/// and whether the pods automount the ServiceAccount token.
fn projected(deployment: &Deployment) -> (Vec<(String, String)>, Option<bool>) {
    let pod = deployment.spec.template.spec.clone();
    let Some(pod) = pod else {
        return (Vec::new(), None);
    };
    let mounts = pod.containers[0].volume_mounts.clone().unwrap_or_default();
    let found = pod
        .volumes
        .unwrap_or_default()
        .into_iter()
        .filter_map(|volume| {
            let sources = volume.projected?.sources?;
            let token = sources.into_iter().find_map(|s| s.service_account_token)?;
            let mount = mounts.iter().find(|m| m.name == volume.name)?;
            Some((token.audience?, mount.mount_path.clone()))
        })
        .collect();
    (found, pod.automount_service_account_token)
}

#[tokio::test]
#[ignore = "needs a control plane and the operator: tests/e2e/run.sh runs it"]
async fn a_projected_token_is_mounted_only_while_a_client_uses_it() {
    let env = Env::get().await;
    let name = "sa-token";
    let object = server(name, json!({"tools": [sa_tool(AUDIENCE)]}));
    apply_server(&env, &object).await.unwrap();
    let expected = format!(
        "/var/run/kube-mcp/tokens/{}",
        mcp_declaration::token_dir_name(AUDIENCE)
    );
    eventually(
        "the Deployment mounts the projected token",
        SOON,
        || async {
            let deployment = env
                .api::<Deployment>()
                .get(name)
                .await
                .map_err(|e| e.to_string())?;
            match projected(&deployment) {
                (found, Some(false)) if found == [(AUDIENCE.to_owned(), expected.clone())] => {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;

    // Without the client, the volume goes (a pod template change: a rollout).
    apply_server(&env, &server(name, json!({}))).await.unwrap();
    eventually("the Deployment drops the projected token", SOON, || async {
        let deployment = env
            .api::<Deployment>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        match projected(&deployment) {
            (found, Some(false)) if found.is_empty() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    env.api::<MCPServer>()
        .delete(name, &DeleteParams::background())
        .await
        .unwrap();
}
