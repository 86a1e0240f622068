//! `spec.include` against the real API server: the operator selects `MCPToolSet`s by labels,
//! prefixes and excludes their items, refuses two items of one name naming both sources, refuses
//! another namespace's sets until that namespace grants them, and re-renders the pods' manifest
//! without a set when the set is deleted (the pods reload it like any manifest change).

use crate::support::{Env, apply_server, eventually, server, wait_condition};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use mcp_operator::resource::{Condition, MCPServer, MCPToolSet, MCPToolSetGrant};
use serde_json::{Value, json};
use std::time::Duration;

const SOON: Duration = Duration::from_secs(60);

/// A tool that answers `text`.
fn tool(name: &str) -> Value {
    json!({"name": name, "content": [{"type": "text", "text": name}]})
}

/// Server-side applies an `MCPToolSet` named `name` in `namespace` with `labels` and `tools`.
async fn apply_set(env: &Env, namespace: &str, name: &str, labels: Value, tools: &[&str]) {
    let object = json!({"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPToolSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {"tools": tools.iter().map(|t| tool(t)).collect::<Vec<_>>()}});
    Api::<MCPToolSet>::namespaced(env.client.clone(), namespace)
        .patch(
            name,
            &PatchParams::apply("e2e-cluster-tests").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap();
}

async fn delete_set(env: &Env, namespace: &str, name: &str) {
    Api::<MCPToolSet>::namespaced(env.client.clone(), namespace)
        .delete(name, &DeleteParams::background())
        .await
        .unwrap();
}

/// The manifest the operator rendered for `server`'s pods (small here: never compressed).
async fn rendered(env: &Env, server: &str) -> Result<String, String> {
    let map = env
        .api::<ConfigMap>()
        .get(&format!("{server}-manifest"))
        .await
        .map_err(|e| e.to_string())?;
    map.data
        .and_then(|d| d.get("manifest.yaml").cloned())
        .ok_or_else(|| "no manifest.yaml".to_owned())
}

/// Waits until `server`'s `Accepted` condition has `(status, reason)`; returns it.
async fn accepted(env: &Env, server: &str, expected: (&str, &str)) -> Condition {
    wait_condition(env, server, "Accepted", expected, SOON, |_| true).await
}

/// Waits until the manifest rendered for `server` passes `holds`.
async fn wait_rendered(env: &Env, server: &str, what: &str, holds: impl Fn(&str) -> bool) {
    eventually(what, SOON, || async {
        let manifest = rendered(env, server).await?;
        if holds(&manifest) {
            Ok(())
        } else {
            Err(manifest)
        }
    })
    .await;
}

/// Waits until `server`'s status names exactly the sets `expected` (`namespace`, `name`) as
/// served: the operator writes status after the manifest, so it may lag the ConfigMap.
async fn wait_served_sets(env: &Env, server: &str, expected: &[(&str, &str)]) {
    eventually("status.toolSets", SOON, || async {
        let status = env
            .api::<MCPServer>()
            .get(server)
            .await
            .map_err(|e| e.to_string())?
            .status;
        let served: Vec<(String, String)> = status
            .map(|s| s.tool_sets)
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.namespace, s.name))
            .collect();
        let wanted: Vec<(String, String)> = expected
            .iter()
            .map(|(ns, name)| ((*ns).to_owned(), (*name).to_owned()))
            .collect();
        if served == wanted {
            Ok(())
        } else {
            Err(format!("{served:?}"))
        }
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a control plane and the operator: tests/e2e/run.sh runs it"]
async fn sets_are_selected_prefixed_and_refused_on_conflict() {
    let env = Env::get().await;
    let ns = env.namespace.clone();
    let k8s = json!({"api": "ts-k8s"});
    apply_set(
        &env,
        &ns,
        "ts-nodes",
        k8s.clone(),
        &["get_node", "delete_node"],
    )
    .await;
    apply_set(&env, &ns, "ts-pods", k8s.clone(), &["get_pod"]).await;
    let include = json!({"include": [{"selector": {"matchLabels": {"api": "ts-k8s"}},
                                      "prefix": "k8s_", "exclude": ["delete_*"]}]});
    apply_server(&env, &server("ts-selected", include))
        .await
        .unwrap();

    // Selection, prefix and exclusion reach the pods' manifest; the status names the sets.
    accepted(&env, "ts-selected", ("True", "Compiled")).await;
    let has = |manifest: &str, name: &str| manifest.contains(&format!("name: {name}\n"));
    wait_rendered(
        &env,
        "ts-selected",
        "the rendered manifest holds the sets' tools",
        |m| {
            has(m, "hi")
                && has(m, "k8s_get_node")
                && has(m, "k8s_get_pod")
                && !m.contains("delete_node")
        },
    )
    .await;
    wait_served_sets(&env, "ts-selected", &[(&ns, "ts-nodes"), (&ns, "ts-pods")]).await;

    // A third set with a tool of the same name is refused, naming both sources; the pods keep
    // what they serve.
    apply_set(&env, &ns, "ts-pods-again", k8s.clone(), &["get_pod"]).await;
    let refused = accepted(&env, "ts-selected", ("False", "ToolSetConflict")).await;
    for source in [
        format!("MCPToolSet {ns}/ts-pods "),
        format!("MCPToolSet {ns}/ts-pods-again"),
    ] {
        assert!(refused.message.contains(&source), "{}", refused.message);
    }
    assert!(
        rendered(&env, "ts-selected")
            .await
            .unwrap()
            .contains("k8s_get_pod")
    );
    delete_set(&env, &ns, "ts-pods-again").await;
    accepted(&env, "ts-selected", ("True", "Compiled")).await;

    // Deleting a set re-renders the manifest without its tools.
    delete_set(&env, &ns, "ts-nodes").await;
    wait_rendered(
        &env,
        "ts-selected",
        "the manifest drops the deleted set",
        |m| m.contains("k8s_get_pod") && !m.contains("k8s_get_node"),
    )
    .await;
    wait_served_sets(&env, "ts-selected", &[(&ns, "ts-pods")]).await;

    // Naming a set that does not exist is refused as such.
    apply_server(
        &env,
        &server("ts-missing", json!({"include": [{"name": "ts-nowhere"}]})),
    )
    .await
    .unwrap();
    let missing = accepted(&env, "ts-missing", ("False", "ToolSetNotFound")).await;
    assert!(
        missing.message.contains("ts-nowhere"),
        "{}",
        missing.message
    );

    for name in ["ts-selected", "ts-missing"] {
        env.api::<MCPServer>()
            .delete(name, &DeleteParams::background())
            .await
            .unwrap();
    }
    delete_set(&env, &ns, "ts-pods").await;
}

#[tokio::test]
#[ignore = "needs a control plane and the operator: tests/e2e/run.sh runs it"]
async fn another_namespaces_sets_need_its_grant() {
    let env = Env::get().await;
    let library = format!("{}-library", env.namespace);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": library}})).unwrap(),
        )
        .await
        .unwrap();
    apply_set(&env, &library, "billing", json!({}), &["invoice"]).await;
    let include = json!({"include": [{"name": "billing", "namespace": library}]});
    apply_server(&env, &server("ts-granted", include))
        .await
        .unwrap();

    let refused = accepted(&env, "ts-granted", ("False", "ToolSetNotGranted")).await;
    assert!(
        refused.message.contains(&format!("{library}/billing")),
        "{}",
        refused.message
    );

    // A grant to another namespace does not count; one to the server's namespace does.
    let grants = Api::<MCPToolSetGrant>::namespaced(env.client.clone(), &library);
    let grant = |to_namespace: &str| {
        json!({"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPToolSetGrant",
               "metadata": {"name": "servers"},
               "spec": {"from": [{"namespace": to_namespace}], "to": [{"name": "billing"}]}})
    };
    let params = PatchParams::apply("e2e-cluster-tests").force();
    grants
        .patch("servers", &params, &Patch::Apply(&grant("elsewhere")))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    accepted(&env, "ts-granted", ("False", "ToolSetNotGranted")).await;
    grants
        .patch("servers", &params, &Patch::Apply(&grant(&env.namespace)))
        .await
        .unwrap();
    accepted(&env, "ts-granted", ("True", "Compiled")).await;
    wait_rendered(
        &env,
        "ts-granted",
        "the granted set's tool is rendered",
        |m| m.contains("name: invoice\n"),
    )
    .await;

    // Withdrawing the grant withdraws the set.
    grants
        .delete("servers", &DeleteParams::background())
        .await
        .unwrap();
    accepted(&env, "ts-granted", ("False", "ToolSetNotGranted")).await;

    env.api::<MCPServer>()
        .delete("ts-granted", &DeleteParams::background())
        .await
        .unwrap();
    namespaces
        .delete(&library, &DeleteParams::background())
        .await
        .unwrap();
}
