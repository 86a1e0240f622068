//! `Verified` end to end: a server with `spec.auth` and a NetworkPolicy, two replicas played by
//! real runtimes; the operator asks each Ready pod's admin port which declaration it serves.
//! Covers `True/Serving` naming both replicas, a change passing through `Unknown/Propagating`
//! with no Warning, `False/StaleDeclaration` past the grace period, `False/ReloadRefused` with the
//! runtime's error, `False/Unreachable`, and `Unknown/NotReady`.

use crate::support::{
    Env, PodProcess, condition, eventually, loopback_prefix, operator_metrics, set_pod,
    wait_condition,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use mcp_operator::resource::MCPServer;
use serde_json::json;
use std::time::{Duration, Instant};

const SERVER: &str = "verified";
/// Long enough for the operator to notice, ask and write (the verifier asks within seconds).
const SOON: Duration = Duration::from_secs(60);

/// Applies the test's MCPServer with tool text `text` (a template over `args.name`).
async fn apply(env: &Env, text: &str) {
    let server = json!({
        "apiVersion": "kube-mcp.io/v1alpha1",
        "kind": "MCPServer",
        "metadata": {"name": SERVER},
        "spec": {
            "replicas": 2,
            "auth": {"issuer": "https://idp.example.com/realms/acme", "requiredScopes": ["mcp"]},
            "networkPolicy": {"enabled": true},
            "tools": [{
                "name": "greet",
                "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                "content": [{"type": "text", "text": text}],
            }],
        },
    });
    env.api::<MCPServer>()
        .patch(
            SERVER,
            &PatchParams::apply("e2e-cluster-tests").force(),
            &Patch::Apply(&server),
        )
        .await
        .unwrap();
}

/// The ConfigMap's manifest and hash once its hash differs from `previous`.
async fn manifest_after(env: &Env, previous: Option<&str>) -> (String, String) {
    eventually("the ConfigMap follows the spec", SOON, || async {
        let map = env
            .api::<ConfigMap>()
            .get(&format!("{SERVER}-manifest"))
            .await
            .map_err(|e| e.to_string())?;
        let hash = map
            .annotations()
            .get("kube-mcp.io/declaration-hash")
            .cloned()
            .ok_or("no hash annotation")?;
        if Some(hash.as_str()) == previous {
            return Err(format!("still {hash}"));
        }
        let text = map
            .data
            .and_then(|d| d.get("manifest.yaml").cloned())
            .ok_or("no manifest")?;
        Ok((text, hash))
    })
    .await
}

/// The runtime flags the operator gave the pods that matter outside a pod: who may call, the
/// path prefix, and the public URL `spec.auth` needs.
async fn pod_flags(env: &Env) -> Vec<String> {
    let deployment = env.api::<Deployment>().get(SERVER).await.unwrap();
    let args = deployment
        .spec
        .template
        .spec
        .and_then(|s| s.containers.into_iter().next())
        .and_then(|c| c.args)
        .unwrap_or_default();
    let mut flags = Vec::new();
    for pair in args.windows(2) {
        if [
            "--allowed-host",
            "--allowed-origin",
            "--path-prefix",
            "--public-url",
        ]
        .contains(&pair[0].as_str())
        {
            flags.extend(pair.iter().cloned());
        }
    }
    flags
}

/// Names of the server's two pods, and the admin port their container declares.
async fn pods(env: &Env) -> (Vec<String>, u16) {
    let listed = eventually("the Deployment controller makes 2 pods", SOON, || async {
        let pods = env
            .api::<Pod>()
            .list(&ListParams::default().labels(&format!("kube-mcp.io/server={SERVER}")))
            .await
            .map_err(|e| e.to_string())?;
        let live: Vec<Pod> = pods
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        if live.len() == 2 {
            Ok(live)
        } else {
            Err(format!("{} pods", live.len()))
        }
    })
    .await;
    let port = listed[0]
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| p.name.as_deref() == Some("admin"))
        .map(|p| u16::try_from(p.container_port).unwrap())
        .expect("the runtime container names its admin port");
    let mut names: Vec<String> = listed.iter().map(ResourceExt::name_any).collect();
    names.sort();
    (names, port)
}

/// Warning and Normal events about the server since `since`, as `(type, reason)`.
async fn events_since(env: &Env, since: jiff::Timestamp) -> Vec<(String, String)> {
    let events = env
        .api::<Event>()
        .list(&ListParams::default().fields(&format!(
            "involvedObject.kind=MCPServer,involvedObject.name={SERVER}"
        )))
        .await
        .unwrap();
    events
        .items
        .into_iter()
        .filter(|e| {
            let at = e
                .event_time
                .as_ref()
                .map(|t| t.0)
                .or(e.last_timestamp.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0));
            at.is_some_and(|at| at >= since)
        })
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default()))
        .collect()
}

#[tokio::test]
#[ignore = "needs a control plane and a running operator: tests/e2e/run.sh runs it"]
async fn verified_follows_what_every_ready_replica_serves() {
    let env = Env::get().await;
    apply(&env, "v1, {{ args.name }}").await;
    let (manifest1, hash1) = manifest_after(&env, None).await;

    // The NetworkPolicy admits the operator's pods (as the chart labels them) on the admin port,
    // and no longer on the MCP port.
    let chart = Api::<Deployment>::namespaced(env.client.clone(), &env.operator_namespace)
        .get("kube-mcp")
        .await
        .unwrap();
    let operator_labels = chart
        .spec
        .template
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    let policy = eventually("the NetworkPolicy exists", SOON, || async {
        env.api::<NetworkPolicy>()
            .get(SERVER)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let rules = policy.spec.unwrap().ingress.unwrap_or_default();
    let admits_operator = |port: &str| {
        rules.iter().any(|rule| {
            let on_port = rule.ports.iter().flatten().any(|p| {
                p.port
                    == Some(
                        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(
                            port.into(),
                        ),
                    )
            });
            on_port
                && rule.from.iter().flatten().any(|peer| {
                    let namespace = peer
                        .namespace_selector
                        .as_ref()
                        .and_then(|s| s.match_labels.as_ref())
                        .and_then(|l| l.get("kubernetes.io/metadata.name"));
                    let pods = peer
                        .pod_selector
                        .as_ref()
                        .and_then(|s| s.match_labels.as_ref());
                    namespace == Some(&env.operator_namespace)
                        && pods.is_some_and(|want| {
                            want.iter().all(|(k, v)| operator_labels.get(k) == Some(v))
                        })
                })
        })
    };
    assert!(admits_operator("admin"), "{rules:?}");
    assert!(!admits_operator("http"), "{rules:?}");

    // Two replicas, played by two runtimes on loopback addresses, Ready.
    let (names, admin_port) = pods(&env).await;
    let flags = pod_flags(&env).await;
    assert!(flags.contains(&"--public-url".to_owned()), "{flags:?}");
    let prefix = loopback_prefix();
    let ips: Vec<String> = (0..2).map(|i| format!("{prefix}{}", 10 + i)).collect();
    let mut runtimes: Vec<PodProcess> = names
        .iter()
        .zip(&ips)
        .map(|(name, ip)| PodProcess::start(&env, name, ip, admin_port, &flags, &manifest1))
        .collect();
    for (name, ip) in names.iter().zip(&ips) {
        set_pod(&env, name, ip, true).await;
    }
    let serving = wait_condition(&env, SERVER, "Verified", ("True", "Serving"), SOON, |m| {
        m.contains(&hash1) && names.iter().all(|n| m.contains(n.as_str()))
    })
    .await;
    assert!(
        serving
            .message
            .starts_with("2 of 2 replicas serve declaration"),
        "{}",
        serving.message
    );
    let metrics = operator_metrics(&env).await;
    let series = format!(
        "mcp_operator_server_condition{{namespace=\"{}\",name=\"{SERVER}\",type=\"Verified\",status=\"True\",reason=\"Serving\"}} 1",
        env.namespace
    );
    assert!(metrics.contains(&series), "{series} not in /metrics");

    // A change reaches one replica, then the other: Propagating (a Normal event), then Serving.
    let rollout = jiff::Timestamp::now();
    apply(&env, "v2, {{ args.name }}").await;
    let (manifest2, hash2) = manifest_after(&env, Some(&hash1)).await;
    runtimes[0].deliver(&manifest2);
    let started = Instant::now();
    wait_condition(
        &env,
        SERVER,
        "Verified",
        ("Unknown", "Propagating"),
        SOON,
        |m| {
            m.starts_with(&format!("1 of 2 replicas serve declaration {hash2}"))
                && m.contains(&format!("pod {} serves {hash1}", names[1]))
        },
    )
    .await;
    assert!(
        started.elapsed() < env.grace,
        "Propagating came after the grace period; make --verify-grace longer"
    );
    runtimes[1].deliver(&manifest2);
    wait_condition(&env, SERVER, "Verified", ("True", "Serving"), SOON, |m| {
        m.contains(&hash2)
    })
    .await;
    let events = events_since(&env, rollout).await;
    assert!(
        events
            .iter()
            .any(|(t, r)| t == "Normal" && r == "Propagating"),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|(t, _)| t == "Warning"),
        "a rollout is not a warning: {events:?}"
    );

    // One replica left behind past the grace period: StaleDeclaration, naming it.
    apply(&env, "v3, {{ args.name }}").await;
    let (manifest3, hash3) = manifest_after(&env, Some(&hash2)).await;
    runtimes[0].deliver(&manifest3);
    wait_condition(
        &env,
        SERVER,
        "Verified",
        ("False", "StaleDeclaration"),
        env.grace + SOON,
        |m| m.contains(&format!("pod {} serves {hash2}", names[1])) && m.contains(&hash3),
    )
    .await;
    runtimes[1].deliver(&manifest3);
    wait_condition(&env, SERVER, "Verified", ("True", "Serving"), SOON, |m| {
        m.contains(&hash3)
    })
    .await;

    // A replica whose runtime refuses the new version (as an older runtime might): the
    // condition quotes the runtime's own error, without waiting for the grace period.
    apply(&env, "v4, {{ args.name }}").await;
    let (manifest4, hash4) = manifest_after(&env, Some(&hash3)).await;
    runtimes[0].deliver(&manifest4);
    runtimes[1].deliver(&manifest4.replace("v4, {{ args.name }}", "v4, {{ args.name "));
    let refused = wait_condition(
        &env,
        SERVER,
        "Verified",
        ("False", "ReloadRefused"),
        SOON,
        |m| {
            m.starts_with(&format!(
                "pod {} refused to load declaration {hash4}: ",
                names[1]
            ))
        },
    )
    .await;
    assert!(
        refused.message.contains("spec.tools[0].content[0].text"),
        "the runtime's error names the field: {}",
        refused.message
    );
    assert!(
        refused
            .message
            .ends_with(&format!("it still serves {hash3}")),
        "{}",
        refused.message
    );
    runtimes[1].deliver(&manifest4);
    wait_condition(&env, SERVER, "Verified", ("True", "Serving"), SOON, |m| {
        m.contains(&hash4)
    })
    .await;

    // A Ready replica that does not answer (here: it moved to an address nothing listens on,
    // which the operator asks at once; a dropped connection looks the same to it).
    runtimes[1].stop();
    let moved = format!("{prefix}20");
    set_pod(&env, &names[1], &moved, true).await;
    wait_condition(
        &env,
        SERVER,
        "Verified",
        ("False", "Unreachable"),
        SOON,
        |m| m.contains(&format!("pod {} ({moved})", names[1])) && m.contains("refused"),
    )
    .await;

    // No Ready replica: nothing to ask.
    for name in &names {
        set_pod(&env, name, &moved, false).await;
    }
    wait_condition(
        &env,
        SERVER,
        "Verified",
        ("Unknown", "NotReady"),
        SOON,
        |_| true,
    )
    .await;
    drop(runtimes);
    assert!(condition(&env, SERVER, "Accepted").await.is_some());
    env.api::<MCPServer>()
        .delete(SERVER, &Default::default())
        .await
        .unwrap();
}
