//! Version skew: a CRD newer than the operator (here, the installed CRD with one more spec field)
//! lets the API server store a field the operator does not know. That server alone is refused as
//! `Unparseable`, naming the field (served with it dropped, a newer security field would be
//! silently off); the others keep reconciling.

use crate::support::{Env, eventually, wait_condition};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use mcp_operator::resource::MCPServer;
use serde_json::{Value, json};
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);
const CRD: &str = "mcpservers.kube-mcp.io";

fn server(name: &str, extra: Value) -> Value {
    let mut spec = json!({"tools": [{"name": "hi", "content": [{"type": "text", "text": "hi"}]}]});
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    json!({"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPServer",
           "metadata": {"name": name}, "spec": spec})
}

/// Applies `object` and returns what the API server stored, unknown fields included.
async fn apply(env: &Env, name: &str, object: &Value) -> Result<DynamicObject, String> {
    let resource = ApiResource::erase::<MCPServer>(&());
    Api::<DynamicObject>::namespaced_with(env.client.clone(), &env.namespace, &resource)
        .patch(
            name,
            &PatchParams::apply("e2e-cluster-tests").force(),
            &Patch::Apply(object),
        )
        .await
        .map_err(|e| e.to_string())
}

/// Adds (`true`) or removes `spec.futureField` in the installed CRD's schema.
async fn future_field(crds: &Api<CustomResourceDefinition>, present: bool) {
    let mut crd = crds.get(CRD).await.unwrap();
    let spec = crd.spec.versions[0]
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
        .and_then(|s| s.properties.as_mut())
        .and_then(|p| p.get_mut("spec"))
        .and_then(|s| s.properties.as_mut())
        .expect("the CRD has spec properties");
    if present {
        spec.insert(
            "futureField".into(),
            JSONSchemaProps {
                type_: Some("string".into()),
                ..Default::default()
            },
        );
    } else {
        spec.remove("futureField");
    }
    crds.replace(CRD, &PostParams::default(), &crd)
        .await
        .unwrap();
}

#[tokio::test]
#[ignore = "needs a control plane and the operator: tests/e2e/run.sh runs it"]
async fn an_unreadable_server_is_refused_alone_naming_the_field() {
    let env = Env::get().await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    future_field(&crds, true).await;

    // The API server keeps the field once the new schema is in effect.
    let newer = server("unreadable-newer", json!({"futureField": "on"}));
    eventually("the API server keeps futureField", SOON, || async {
        let stored = apply(&env, "unreadable-newer", &newer).await?;
        if stored.data["spec"].get("futureField").is_some() {
            Ok(())
        } else {
            Err("pruned".into())
        }
    })
    .await;
    apply(
        &env,
        "unreadable-plain",
        &server("unreadable-plain", json!({})),
    )
    .await
    .unwrap();

    let refused = wait_condition(
        &env,
        "unreadable-newer",
        "Accepted",
        ("False", "Unparseable"),
        SOON,
        |_| true,
    )
    .await;
    assert!(
        refused.message.contains("spec.futureField: unknown field"),
        "{}",
        refused.message
    );
    wait_condition(
        &env,
        "unreadable-plain",
        "Accepted",
        ("True", "Compiled"),
        SOON,
        |_| true,
    )
    .await;

    for name in ["unreadable-newer", "unreadable-plain"] {
        env.api::<MCPServer>()
            .delete(name, &DeleteParams::background())
            .await
            .unwrap();
    }
    future_field(&crds, false).await;
}
