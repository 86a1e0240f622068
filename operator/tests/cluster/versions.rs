//! Served versions: a server written as `kube-mcp.io/v1beta1` is the same object as one written
//! as `v1alpha1` (one schema, `conversion: None`). It is stored in the storage version, read back
//! whole in either, and reconciled by the operator like any other.

use crate::support::{Env, apply_server, server, wait_condition};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, ResourceExt};
use mcp_operator::crd_upgrade::CRD_NAME;
use mcp_operator::resource::MCPServer;
use serde_json::json;
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);

fn in_version(env: &Env, version: &str) -> Api<DynamicObject> {
    let mut resource = ApiResource::erase::<MCPServer>(&());
    resource.version = version.into();
    resource.api_version = format!("{}/{version}", resource.group);
    Api::namespaced_with(env.client.clone(), &env.namespace, &resource)
}

#[tokio::test]
#[ignore = "needs a control plane and the operator: tests/e2e/run.sh runs it"]
async fn a_v1beta1_server_is_the_same_server() {
    let env = Env::get().await;
    let mut beta = server(
        "versions-beta",
        json!({"title": "Beta", "replicas": 2, "sessions": {"idleTimeout": "10m"},
               "prompts": [{"name": "greet", "messages": [{"role": "user",
                            "content": {"type": "text", "text": "hello"}}]}]}),
    );
    beta["apiVersion"] = json!("kube-mcp.io/v1beta1");
    let written = in_version(&env, "v1beta1")
        .patch(
            "versions-beta",
            &PatchParams::apply("e2e-cluster-tests").force(),
            &Patch::Apply(&beta),
        )
        .await
        .unwrap();
    assert_eq!(written.data["spec"], beta["spec"], "stored whole");

    let as_alpha = in_version(&env, "v1alpha1")
        .get("versions-beta")
        .await
        .unwrap();
    assert_eq!(
        as_alpha.types.as_ref().unwrap().api_version,
        "kube-mcp.io/v1alpha1"
    );
    assert_eq!(
        as_alpha.data["spec"], beta["spec"],
        "read whole as v1alpha1"
    );
    assert_eq!(as_alpha.uid(), written.uid(), "one object");

    wait_condition(
        &env,
        "versions-beta",
        "Accepted",
        ("True", "Compiled"),
        SOON,
        |_| true,
    )
    .await;
    // The operator's status, written in the storage version, reads the same in v1beta1.
    let status = in_version(&env, "v1beta1")
        .get_status("versions-beta")
        .await
        .unwrap();
    assert_eq!(status.data["status"]["counts"]["prompts"], json!(1));

    // A write in one version and a write in the other leave one object, holding the last.
    beta["spec"]["title"] = json!("Beta, retitled");
    beta["apiVersion"] = json!("kube-mcp.io/v1alpha1");
    let rewritten = apply_server(&env, &beta).await.unwrap();
    assert_eq!(rewritten.data["spec"]["title"], "Beta, retitled");

    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd = crds.get(CRD_NAME).await.unwrap();
    assert_eq!(
        crd.status.unwrap().stored_versions,
        Some(vec!["v1alpha1".to_owned()]),
        "only the storage version was ever stored"
    );
}
