//! What the cluster tests share: the environment `tests/e2e/run.sh` passes, bounded waits on
//! API objects, minimal MCPServers applied server-side, the pods' status as a kubelet would
//! write it, and mcp-runtime processes playing the pods (each stopped by its PID when dropped).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, Client};
use mcp_operator::resource::{Condition, MCPServer};
use serde_json::{Value, json};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What `tests/e2e/run.sh` passes in.
#[derive(Clone)]
pub struct Env {
    /// The API client (an admin kubeconfig, `KUBECONFIG`).
    pub client: Client,
    /// Namespace the tests create their servers in.
    pub namespace: String,
    /// Namespace the chart installed the operator in.
    pub operator_namespace: String,
    /// The operator's admin address (`host:port`), for `/metrics`.
    pub operator_admin: String,
    /// The mcp-runtime binary.
    pub runtime_bin: PathBuf,
    /// A directory for manifests and logs.
    pub dir: PathBuf,
    /// The operator's `--verify-grace`.
    pub grace: Duration,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run tests/e2e/run.sh"))
}

impl Env {
    /// Reads the environment.
    pub async fn get() -> Self {
        let dir = PathBuf::from(var("KUBE_MCP_E2E_DIR"));
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            client: Client::try_default().await.unwrap(),
            namespace: var("KUBE_MCP_E2E_NAMESPACE"),
            operator_namespace: var("KUBE_MCP_E2E_OPERATOR_NAMESPACE"),
            operator_admin: var("KUBE_MCP_E2E_OPERATOR_ADMIN"),
            runtime_bin: PathBuf::from(var("MCP_RUNTIME_BIN")),
            dir,
            grace: Duration::from_secs(var("KUBE_MCP_E2E_VERIFY_GRACE_S").parse().unwrap()),
        }
    }

    /// The same environment, in another namespace.
    pub fn in_namespace(&self, namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            ..self.clone()
        }
    }

    /// A namespaced API of kind `K` in the test namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

/// Polls `check` every half second until it gives `Ok`, for at most `limit`; panics with its
/// last complaint and `what` otherwise.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(complaint) if started.elapsed() >= limit => {
                panic!("{what}: not within {limit:?}: {complaint}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// A condition of an MCPServer, as the API server has it now.
pub async fn condition(env: &Env, server: &str, type_: &str) -> Option<Condition> {
    let server = env.api::<MCPServer>().get(server).await.ok()?;
    server
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
}

/// Waits until condition `type_` of `server` has `status` and `reason` and its message passes
/// `message`; returns the condition.
pub async fn wait_condition(
    env: &Env,
    server: &str,
    type_: &str,
    (status, reason): (&str, &str),
    limit: Duration,
    message: impl Fn(&str) -> bool,
) -> Condition {
    eventually(
        &format!("{server}: {type_}={status}/{reason}"),
        limit,
        || async {
            let found = condition(env, server, type_).await;
            match &found {
                Some(c) if c.status == status && c.reason == reason && message(&c.message) => {
                    Ok(c.clone())
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await
}

/// Writes what a kubelet would of a pod: Running, its IP, and whether it is Ready.
pub async fn set_pod(env: &Env, pod: &str, ip: &str, ready: bool) {
    let flag = if ready { "True" } else { "False" };
    let status = json!({"status": {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "conditions": [
            {"type": "Ready", "status": flag},
            {"type": "ContainersReady", "status": flag},
        ],
        "containerStatuses": [{
            "name": "mcp-runtime", "image": "ghcr.io/kube-mcp/kube-mcp:e2e", "imageID": "",
            "ready": ready, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": jiff::Timestamp::now().to_string()}},
        }],
    }});
    env.api::<Pod>()
        .patch_status(pod, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

/// A loopback /24 for this run's pods (random, so that parallel runs on one machine do not
/// collide): `127.A.B.`.
pub fn loopback_prefix() -> String {
    let a: u8 = rand::random_range(16..=250);
    let b: u8 = rand::random_range(1..=250);
    format!("127.{a}.{b}.")
}

/// An mcp-runtime process playing a pod: it serves `manifest` on `ip` (MCP port 8080, admin
/// port `admin_port`), and is killed by its PID when dropped.
pub struct PodProcess {
    child: Child,
    /// The manifest file it reloads (written as a kubelet updates a ConfigMap volume).
    pub manifest: PathBuf,
}

impl PodProcess {
    /// Starts the runtime with the pod's flags `flags` and the manifest text `manifest`.
    pub fn start(
        env: &Env,
        name: &str,
        ip: &str,
        admin_port: u16,
        flags: &[String],
        manifest: &str,
    ) -> Self {
        let dir = env.dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("manifest.yaml");
        write_atomically(&path, manifest);
        let log = std::fs::File::create(dir.join("runtime.log")).unwrap();
        let child = Command::new(&env.runtime_bin)
            .arg("serve")
            .arg("--manifest")
            .arg(&path)
            .args(["--listen", &format!("{ip}:8080")])
            .args(["--admin-listen", &format!("{ip}:{admin_port}")])
            .args(["--reload-interval", "300ms"])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Self {
            child,
            manifest: path,
        }
    }

    /// Delivers a new manifest, as a kubelet swaps a ConfigMap volume's file.
    pub fn deliver(&self, manifest: &str) {
        write_atomically(&self.manifest, manifest);
    }

    /// Stops the process (SIGKILL) and waits for it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PodProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The operator's `/metrics` text.
pub async fn operator_metrics(env: &Env) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(&env.operator_admin)
        .await
        .unwrap();
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        env.operator_admin
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// An MCPServer named `name` with one tool, the fields of `extra` added to its spec.
pub fn server(name: &str, extra: Value) -> Value {
    let mut spec = json!({"tools": [{"name": "hi", "content": [{"type": "text", "text": "hi"}]}]});
    for (key, value) in extra.as_object().expect("extra is an object") {
        spec[key] = value.clone();
    }
    json!({"apiVersion": "kube-mcp.io/v1alpha1", "kind": "MCPServer",
           "metadata": {"name": name}, "spec": spec})
}

/// Server-side applies the MCPServer `object` in the test namespace, as the tests' field
/// manager; returns what the API server stored, fields the operator does not know included.
pub async fn apply_server(env: &Env, object: &Value) -> Result<DynamicObject, String> {
    let name = object["metadata"]["name"]
        .as_str()
        .expect("the object has a name");
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

/// The properties of `spec` in a CRD's schema.
pub fn spec_properties(
    crd: &mut CustomResourceDefinition,
) -> &mut std::collections::BTreeMap<String, JSONSchemaProps> {
    crd.spec.versions[0]
        .schema
        .as_mut()
        .and_then(|s| s.open_api_v3_schema.as_mut())
        .and_then(|s| s.properties.as_mut())
        .and_then(|p| p.get_mut("spec"))
        .and_then(|s| s.properties.as_mut())
        .expect("the CRD has spec properties")
}
