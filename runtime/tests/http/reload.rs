//! Live reload: a valid edit is served and announced; an invalid one keeps the old declaration.

use super::support::{MANIFEST, start};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn edits_are_served_and_announced_and_bad_edits_are_refused() {
    let rt = start(MANIFEST, |_| {}).await;
    let session = rt.initialize().await;
    let mut stream = rt.open_stream(&session).await;
    let (_, subscribed) = rt
        .call(
            &session,
            1,
            "resources/subscribe",
            json!({"uri": "docs://readme"}),
        )
        .await;
    assert_eq!(subscribed["result"], json!({}));

    std::fs::write(
        &rt.manifest,
        MANIFEST
            .replace("name: greet", "name: welcome")
            .replace("text: \"first\"", "text: \"second\""),
    )
    .unwrap();
    assert!(
        stream
            .until(Duration::from_secs(3), |t| t
                .contains("notifications/tools/list_changed"))
            .await,
        "{}",
        stream.text
    );
    assert!(
        stream
            .until(Duration::from_secs(3), |t| t
                .contains("notifications/resources/updated"))
            .await,
        "{}",
        stream.text
    );
    let (_, tools) = rt.call(&session, 2, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "welcome");

    std::fs::write(
        &rt.manifest,
        MANIFEST.replace("{{ args.name }}", "{{ args.name "),
    )
    .unwrap();
    assert!(
        rt.metric_shows("mcp_reloads_total{outcome=\"error\"} 1")
            .await
    );
    let (_, tools) = rt.call(&session, 3, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "welcome");
}
