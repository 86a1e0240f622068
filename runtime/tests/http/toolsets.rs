//! A server with the `MCPToolSet`s it includes, served from several manifest paths (a file and a
//! directory of sets, a gzipped one among them): the sets' tools are served as the server's own,
//! and a set file added to or removed from the directory is picked up by the next reload.

use super::support::start;
use serde_json::{Value, json};
use std::io::Write as _;
use std::time::Duration;

const SERVER: &str = r#"
apiVersion: kube-mcp.io/v1alpha1
kind: MCPServer
metadata: {name: inventory}
spec:
  include: [{selector: {matchLabels: {api: inventory}}, prefix: inv_}]
  tools:
    - {name: whoami, content: [{type: text, text: inventory}]}
"#;

/// An `MCPToolSet` labelled `api: inventory` with one tool, `tool`.
fn set(name: &str, tool: &str) -> String {
    format!(
        "apiVersion: kube-mcp.io/v1alpha1\nkind: MCPToolSet\n\
         metadata: {{name: {name}, labels: {{api: inventory}}}}\n\
         spec: {{tools: [{{name: {tool}, content: [{{type: text, text: {tool}}}]}}]}}\n"
    )
}

fn names(tools: &Value) -> Vec<&str> {
    tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn sets_from_a_directory_are_served_and_follow_its_files() {
    let sets = tempfile::tempdir().unwrap();
    std::fs::write(sets.path().join("hosts.yaml"), set("hosts", "get_host")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(set("racks", "list_racks").as_bytes()).unwrap();
    std::fs::write(sets.path().join("racks.yaml.gz"), gz.finish().unwrap()).unwrap();
    let dir = sets.path().to_owned();
    let rt = start(SERVER, |config| config.manifests.push(dir)).await;
    let session = rt.initialize().await;
    let (_, tools) = rt.call(&session, 1, "tools/list", json!({})).await;
    assert_eq!(names(&tools), ["whoami", "inv_get_host", "inv_list_racks"]);
    let (_, called) = rt
        .call(&session, 2, "tools/call", json!({"name": "inv_list_racks"}))
        .await;
    assert_eq!(called["result"]["content"][0]["text"], "list_racks");

    let mut stream = rt.open_stream(&session).await;
    std::fs::remove_file(sets.path().join("hosts.yaml")).unwrap();
    assert!(
        stream
            .until(Duration::from_secs(3), |t| t
                .contains("notifications/tools/list_changed"))
            .await,
        "{}",
        stream.text
    );
    let (_, tools) = rt.call(&session, 3, "tools/list", json!({})).await;
    assert_eq!(names(&tools), ["whoami", "inv_list_racks"]);

    // A new set with a tool of a name already served is refused naming both; the old keeps serving.
    std::fs::write(sets.path().join("more.yaml"), set("more", "list_racks")).unwrap();
    assert!(
        rt.metric_shows("mcp_reloads_total{outcome=\"error\"} 1")
            .await
    );
    let (_, tools) = rt.call(&session, 4, "tools/list", json!({})).await;
    assert_eq!(names(&tools), ["whoami", "inv_list_racks"]);
}
