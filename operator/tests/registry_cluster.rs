//! The registry over real HTTP, fed by a real kube-apiserver: what a registry client (VS Code,
//! an organisation policy, a subregistry syncing with `updated_since`) sees while MCPServers
//! are applied, change status, are renamed, unpublished and deleted. Every JSON answer is
//! validated against the published OpenAPI `v0.1` and `server.json` 2025-12-11.
//!
//! Run by `tests/e2e/registry.sh`, which starts the control plane and an operator replica with
//! `--registry-listen`; ignored otherwise. Needs `KUBECONFIG` (admin), `KUBE_MCP_REGISTRY_URL`,
//! `KUBE_MCP_REGISTRY_NS` (an empty namespace) and `KUBE_MCP_REGISTRY_PREFIX`.
//! I/O: API objects in that namespace, HTTP requests to the registry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "registry/schemas.rs"]
mod schemas;

use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use mcp_operator::resource::MCPServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

struct Env {
    url: String,
    namespace: String,
    prefix: String,
    http: reqwest::Client,
    api: Api<MCPServer>,
    schemas: schemas::Schemas,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is set by tests/e2e/registry.sh"))
}

impl Env {
    fn name(&self, server: &str) -> String {
        format!("{}/{}.{server}", self.prefix, self.namespace)
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.url))
            .header("Origin", "https://vscode.dev")
            .send()
            .await
            .unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        let bytes = response.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{path}: not JSON ({e})"))
        };
        (status, headers, body)
    }

    /// `GET` of a list, checked against the schemas.
    async fn list(&self, query: &str) -> Value {
        let (status, headers, body) = self
            .send(Method::GET, &format!("/v0.1/servers{query}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{query}: {body}");
        assert_eq!(headers["access-control-allow-origin"], "*");
        assert_eq!(
            self.schemas.list_problems(&body),
            Vec::<String>::new(),
            "{query}: {body:#}"
        );
        body
    }

    /// `GET` of one version, checked against the schemas when found.
    async fn version(&self, path: &str) -> (StatusCode, Value) {
        let (status, _, body) = self.send(Method::GET, path).await;
        let problems = if status == StatusCode::OK {
            self.schemas.response_problems(&body)
        } else {
            self.schemas.error_problems(&body)
        };
        assert_eq!(problems, Vec::<String>::new(), "{path}: {body:#}");
        (status, body)
    }

    async fn apply(&self, name: &str, spec: Value, labels: Value, annotations: Value) {
        let object = json!({
            "apiVersion": "kube-mcp.io/v1alpha1",
            "kind": "MCPServer",
            "metadata": {"name": name, "labels": labels, "annotations": annotations},
            "spec": spec,
        });
        self.api
            .patch(
                name,
                &PatchParams::apply("registry-e2e").force(),
                &Patch::Apply(&object),
            )
            .await
            .unwrap_or_else(|e| panic!("apply {name}: {e}"));
    }

    /// Writes the status the operator would (the replica under test does not lead).
    async fn set_status(&self, name: &str, ready: bool, url: &str) {
        let now = jiff::Timestamp::now().to_string();
        let status = if ready { "True" } else { "False" };
        let reason = if ready { "Available" } else { "RollingOut" };
        let patch = json!({"status": {
            "url": url,
            "conditions": [
                {"type": "Ready", "status": status, "reason": reason, "message": format!("{reason} (e2e)"), "lastTransitionTime": now},
                {"type": "Verified", "status": "True", "reason": "Serving", "message": "serving (e2e)", "lastTransitionTime": now},
            ],
        }});
        self.api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("status of {name}: {e}"));
    }
}

fn names(list: &Value) -> Vec<String> {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["server"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn official(response: &Value) -> &Value {
    &response["_meta"]["io.modelcontextprotocol.registry/official"]
}

fn encode(name: &str) -> String {
    name.replace('/', "%2F").replace('+', "%2B")
}

/// Retries `check` until it holds, for at most `seconds`.
async fn eventually<F, Fut>(seconds: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
#[ignore = "needs a control plane and a registry: tests/e2e/registry.sh"]
async fn registry_over_http_on_the_control_plane() {
    let namespace = var("KUBE_MCP_REGISTRY_NS");
    let env = Env {
        url: var("KUBE_MCP_REGISTRY_URL"),
        prefix: var("KUBE_MCP_REGISTRY_PREFIX"),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
        api: Api::namespaced(Client::try_default().await.unwrap(), &namespace),
        namespace,
        schemas: schemas::Schemas::load(),
    };
    let tool = json!([{"name": "greet", "title": "Greet", "annotations": {"readOnlyHint": true}, "content": [{"type": "text", "text": "hi"}]}]);
    // Seven opted in by spec, one by label, one renamed by annotation, one never listed.
    for i in 0..7 {
        let spec = json!({"description": format!("Alpha server number {i}"), "registry": {"publish": true}, "tools": tool});
        env.apply(&format!("alpha-{i}"), spec, json!({}), json!({}))
            .await;
    }
    env.apply(
        "labelled",
        json!({"tools": tool}),
        json!({"catalog.example.com/listed": "yes"}),
        json!({}),
    )
    .await;
    env.apply(
        "plus",
        json!({"version": "2.0.0+build.7", "title": "Plus", "registry": {"publish": true}, "tools": tool}),
        json!({}),
        json!({"kube-mcp.io/registry-name": "custom-name"}),
    )
    .await;
    env.apply("hidden", json!({"tools": tool}), json!({}), json!({}))
        .await;
    for i in 0..3 {
        env.set_status(
            &format!("alpha-{i}"),
            true,
            &format!("https://mcp.e2e.example.com/alpha-{i}/mcp"),
        )
        .await;
    }
    let mut expected: BTreeSet<String> = (0..7).map(|i| env.name(&format!("alpha-{i}"))).collect();
    expected.insert(env.name("labelled"));
    expected.insert(format!("{}/custom-name", env.prefix));
    eventually(30, "every published server is listed", || async {
        let list = env.list("?limit=100").await;
        names(&list).into_iter().collect::<BTreeSet<_>>() == expected
    })
    .await;

    // What VS Code does first, then the server it picked.
    let first = env.list("?limit=1").await;
    assert_eq!(first["metadata"]["count"], 1);
    assert!(first["metadata"]["nextCursor"].is_string());
    let name = names(&first)[0].clone();
    let (status, latest) = env
        .version(&format!("/v0.1/servers/{}/versions/latest", encode(&name)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(latest["server"]["name"], name.as_str());

    // Server cards are on (`--server-cards`): the AI Catalog of the servers' host lists the
    // three with a URL there, each pointing at its runtime's card; another host lists none.
    let (http, url) = (&env.http, &env.url);
    let catalog = |host: &'static str| async move {
        let response = http
            .get(format!("{url}/.well-known/ai-catalog.json"))
            .header("Host", host)
            .header("Origin", "https://vscode.dev")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        response.json::<Value>().await.unwrap()
    };
    let cards = |listed: Value| -> Vec<(String, String)> {
        listed["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                assert_eq!(e["type"], "application/mcp-server-card+json");
                (
                    e["identifier"].as_str().unwrap().to_owned(),
                    e["url"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let wanted: Vec<(String, String)> = (0..3)
        .map(|i| {
            (
                env.name(&format!("alpha-{i}")),
                format!("https://mcp.e2e.example.com/alpha-{i}/mcp/server-card"),
            )
        })
        .collect();
    // The status writes that gave them their URLs may still be on their way to the watch.
    eventually(
        30,
        "the host's ai-catalog lists its three cards",
        || async { cards(catalog("mcp.e2e.example.com").await) == wanted },
    )
    .await;
    assert_eq!(catalog("elsewhere.example.com").await["entries"], json!([]));

    // Pages of four walk every entry once, in order.
    let mut walked = Vec::new();
    let mut query = "?limit=4".to_owned();
    loop {
        let page = env.list(&query).await;
        let got = names(&page);
        assert!(got.len() <= 4);
        walked.extend(got);
        match page["metadata"]["nextCursor"].as_str() {
            Some(next) => query = format!("?limit=4&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(walked, expected.iter().cloned().collect::<Vec<_>>());

    // Search and version filters.
    assert_eq!(names(&env.list("?search=ALPHA").await).len(), 7);
    assert_eq!(
        names(&env.list("?search=custom").await),
        [format!("{}/custom-name", env.prefix)]
    );
    assert_eq!(names(&env.list("?version=latest&limit=100").await).len(), 9);
    assert_eq!(names(&env.list("?version=2.0.0%2Bbuild.7").await).len(), 1);

    // Names and versions, encoded as the API asks or not.
    let plus = format!("{}/custom-name", env.prefix);
    for path in [
        format!("/v0.1/servers/{}/versions/2.0.0%2Bbuild.7", encode(&plus)),
        format!("/v0.1/servers/{plus}/versions/latest"),
    ] {
        let (status, body) = env.version(&path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(body["server"]["version"], "2.0.0+build.7");
        assert_eq!(body["_meta"]["io.kube-mcp/server"]["name"], "plus");
    }
    let (_, _, versions) = env
        .send(
            Method::GET,
            &format!("/v0.1/servers/{}/versions", encode(&plus)),
        )
        .await;
    assert_eq!(env.schemas.list_problems(&versions), Vec::<String>::new());
    assert_eq!(names(&versions), std::slice::from_ref(&plus));
    let (status, _) = env
        .version("/v0.1/servers/io.example%2Fnobody/versions/latest")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Status follows the MCPServer's conditions.
    let alpha0 = env.name("alpha-0");
    let path0 = format!("/v0.1/servers/{}/versions/latest", encode(&alpha0));
    let (_, body) = env.version(&path0).await;
    assert_eq!(official(&body)["status"], "active");
    assert_eq!(
        body["server"]["remotes"][0]["url"],
        "https://mcp.e2e.example.com/alpha-0/mcp"
    );
    assert_eq!(
        body["server"]["remotes"][1]["url"],
        "https://mcp.e2e.example.com/alpha-0/sse"
    );
    let (_, body) = env
        .version(&format!(
            "/v0.1/servers/{}/versions/latest",
            encode(&env.name("alpha-3"))
        ))
        .await;
    assert_eq!(official(&body)["status"], "deprecated");
    env.set_status("alpha-0", false, "https://mcp.e2e.example.com/alpha-0/mcp")
        .await;
    eventually(20, "alpha-0 turns deprecated", || async {
        let (_, body) = env.version(&path0).await;
        official(&body)["status"] == "deprecated"
            && official(&body)["statusMessage"]
                .as_str()
                .is_some_and(|m| m.contains("Ready=False"))
    })
    .await;

    // CORS preflight, as a browser sends it.
    let response = env
        .http
        .request(Method::OPTIONS, format!("{}/v0.1/servers?limit=1", env.url))
        .header("Origin", "https://vscode.dev")
        .header("Access-Control-Request-Method", "GET")
        .header("Access-Control-Request-Headers", "authorization")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let headers = response.headers();
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("GET")
    );
    assert!(
        headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("Authorization")
    );

    // A deletion reaches readers of updated_since; so does an entry that stops being published.
    let since = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_secs(2))
        .unwrap();
    env.api
        .delete("alpha-6", &DeleteParams::default())
        .await
        .unwrap();
    env.apply("alpha-5", json!({"description": "Alpha server number 5", "registry": {"publish": false}, "tools": tool}), json!({}), json!({})).await;
    let (gone6, gone5) = (env.name("alpha-6"), env.name("alpha-5"));
    eventually(
        30,
        "deleted and unpublished servers show up as deleted since then",
        || async {
            let list = env.list(&format!("?updated_since={since}&limit=100")).await;
            let deleted: BTreeSet<String> = list["servers"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| official(s)["status"] == "deleted")
                .map(|s| s["server"]["name"].as_str().unwrap().to_owned())
                .collect();
            deleted == BTreeSet::from([gone5.clone(), gone6.clone()])
        },
    )
    .await;
    let since_list = env.list(&format!("?updated_since={since}&limit=100")).await;
    for entry in since_list["servers"].as_array().unwrap() {
        let updated: jiff::Timestamp = official(entry)["updatedAt"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(updated >= since, "{entry}");
    }
    let now_listed = names(&env.list("?limit=100").await);
    assert!(!now_listed.contains(&gone6) && !now_listed.contains(&gone5));
    assert!(names(&env.list("?limit=100&include_deleted=true").await).contains(&gone6));
    let gone_path = format!("/v0.1/servers/{}/versions/latest", encode(&gone6));
    assert_eq!(env.version(&gone_path).await.0, StatusCode::NOT_FOUND);
    let (status, body) = env
        .version(&format!("{gone_path}?include_deleted=true"))
        .await;
    assert_eq!(
        (status, &official(&body)["status"]),
        (StatusCode::OK, &json!("deleted"))
    );

    // Writes are not this registry's business.
    for (method, path) in [
        (Method::POST, "/v0.1/publish".to_owned()),
        (
            Method::PUT,
            format!("/v0.1/servers/{}/versions/2.0.0", encode(&plus)),
        ),
        (
            Method::DELETE,
            format!("/v0.1/servers/{}/versions/2.0.0", encode(&plus)),
        ),
    ] {
        let (status, _, body) = env.send(method, &path).await;
        assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{path}");
        assert_eq!(env.schemas.error_problems(&body), Vec::<String>::new());
    }
}
