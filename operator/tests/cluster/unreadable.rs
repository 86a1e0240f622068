//! Version skew: a CRD newer than the operator (here, the installed CRD with one more spec field)
//! lets the API server store a field the operator does not know. That server alone is refused as
//! `Unparseable`, naming the field (served with it dropped, a newer security field would be
//! silently off); the others keep reconciling.

use crate::support::{Env, apply_server, eventually, server, spec_properties, wait_condition};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use mcp_operator::crd_upgrade::CRD_NAME;
use mcp_operator::resource::MCPServer;
use serde_json::json;
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);

/// Adds (`true`) or removes `spec.futureField` in the installed CRD's schema.
async fn future_field(crds: &Api<CustomResourceDefinition>, present: bool) {
    let mut crd = crds.get(CRD_NAME).await.unwrap();
    let spec = spec_properties(&mut crd);
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
    crds.replace(CRD_NAME, &PostParams::default(), &crd)
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
        let stored = apply_server(&env, &newer).await?;
        if stored.data["spec"].get("futureField").is_some() {
            Ok(())
        } else {
            Err("pruned".into())
        }
    })
    .await;
    apply_server(&env, &server("unreadable-plain", json!({})))
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
