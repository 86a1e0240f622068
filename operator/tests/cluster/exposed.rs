//! `Exposed`: what routes clients from outside took the server, from the route's and the
//! Ingress's own status. No Gateway or ingress controller runs here: the test writes their
//! status as one would (a Gateway that refuses the route, then takes it; an address on the
//! Ingress). Needs the Gateway API CRDs (`tests/e2e/tenant.sh` installs them and runs it).

use crate::support::{Env, apply_server, eventually, server, wait_condition};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{DeleteParams, Patch, PatchParams};
use mcp_operator::reconcile::build::HttpRoute;
use mcp_operator::resource::MCPServer;
use serde_json::{Value, json};
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);

async fn apply(env: &Env, name: &str, exposure: Value) {
    apply_server(env, &server(name, exposure)).await.unwrap();
}

/// What a Gateway controller writes on a route it has looked at.
fn gateway_answer(generation: i64, accepted: (&str, &str, &str)) -> Value {
    let now = jiff::Timestamp::now().to_string();
    json!({"status": {"parents": [{
        "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "shared",
                      "namespace": "gateway-system", "sectionName": "https"},
        "controllerName": "example.com/gateway-controller",
        "conditions": [
            {"type": "Accepted", "status": accepted.0, "reason": accepted.1, "message": accepted.2,
             "observedGeneration": generation, "lastTransitionTime": now},
            {"type": "ResolvedRefs", "status": "True", "reason": "ResolvedRefs", "message": "",
             "observedGeneration": generation, "lastTransitionTime": now},
        ],
    }]}})
}

#[tokio::test]
#[ignore = "needs a control plane with the Gateway API CRDs: tests/e2e/tenant.sh runs it"]
async fn exposed_reads_what_the_gateway_and_the_ingress_controller_say() {
    let env = Env::get().await;
    let domain = std::env::var("KUBE_MCP_E2E_DOMAIN").unwrap_or_else(|_| "example.com".into());

    apply(
        &env,
        "exposed-gw",
        json!({"exposure": "gateway", "gateway": {"host": format!("exposed-gw.{domain}"),
            "parentRefs": [{"name": "shared", "namespace": "gateway-system", "sectionName": "https"}]}}),
    )
    .await;
    wait_condition(
        &env,
        "exposed-gw",
        "Exposed",
        ("Unknown", "Pending"),
        SOON,
        |m| m.contains("Gateway gateway-system/shared (listener https)"),
    )
    .await;
    let routes = env.api::<HttpRoute>();
    let generation = eventually("the HTTPRoute exists", SOON, || async {
        routes
            .get("exposed-gw")
            .await
            .map_err(|e| e.to_string())
            .map(|r| r.metadata.generation.unwrap_or(1))
    })
    .await;
    let refusal = "listener https does not allow routes from namespace";
    routes
        .patch_status(
            "exposed-gw",
            &PatchParams::default(),
            &Patch::Merge(&gateway_answer(
                generation,
                ("False", "NotAllowedByListeners", refusal),
            )),
        )
        .await
        .unwrap();
    let refused = wait_condition(
        &env,
        "exposed-gw",
        "Exposed",
        ("False", "RouteRefused"),
        SOON,
        |m| m.contains(refusal),
    )
    .await;
    assert_eq!(
        refused.message,
        format!(
            "Gateway gateway-system/shared (listener https) refused it: Accepted=False NotAllowedByListeners: {refusal}"
        )
    );
    routes
        .patch_status(
            "exposed-gw",
            &PatchParams::default(),
            &Patch::Merge(&gateway_answer(generation, ("True", "Accepted", ""))),
        )
        .await
        .unwrap();
    wait_condition(
        &env,
        "exposed-gw",
        "Exposed",
        ("True", "Admitted"),
        SOON,
        |m| m == "the HTTPRoute is accepted by Gateway gateway-system/shared (listener https)",
    )
    .await;

    apply(
        &env,
        "exposed-in",
        json!({"ingress": {"host": format!("exposed-in.{domain}"), "className": "nginx"}}),
    )
    .await;
    wait_condition(
        &env,
        "exposed-in",
        "Exposed",
        ("Unknown", "Pending"),
        SOON,
        |m| m.contains("ingress controller of class nginx"),
    )
    .await;
    env.api::<Ingress>()
        .patch_status(
            "exposed-in",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}),
            ),
        )
        .await
        .unwrap();
    wait_condition(
        &env,
        "exposed-in",
        "Exposed",
        ("True", "Admitted"),
        SOON,
        |m| m == "the Ingress is served at 203.0.113.7",
    )
    .await;

    for name in ["exposed-gw", "exposed-in"] {
        env.api::<MCPServer>()
            .delete(name, &DeleteParams::background())
            .await
            .unwrap();
    }
}
