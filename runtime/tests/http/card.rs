//! The server card (`--server-card`) over a real socket: its media type, `ETag` (the served
//! declaration's hash, changing on reload), 304 on `If-None-Match`, CORS for any origin while
//! the MCP routes keep their Origin check, and the Host check.

use crate::support::{MANIFEST, body_json, start};
use reqwest::header;
use std::time::Duration;

#[tokio::test]
async fn the_card_is_cacheable_public_and_follows_reloads() {
    let runtime = start(MANIFEST, |config| {
        config.http.server_card = true;
        config.http.path_prefix = "/harness".into();
        config.auth.public_url = Some("https://mcp.example.com/harness".into());
    })
    .await;
    let client = reqwest::Client::new();
    let card_url = format!("{}/harness/mcp/server-card", runtime.url);
    let first_hash = served_hash(&runtime.admin).await;

    // A page of another site may read it.
    let response = get_with(&card_url, header::ORIGIN, "https://elsewhere.example").await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/mcp-server-card+json"
    );
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    assert_eq!(headers[header::ETAG], format!("\"{first_hash}\"").as_str());
    assert!(
        headers[header::CACHE_CONTROL]
            .to_str()
            .unwrap()
            .contains("max-age=")
    );
    let card = body_json(response).await;
    assert_eq!(card["name"], "com.example.mcp/harness");
    assert_eq!(card["version"], "1.0.0");
    assert_eq!(
        card["remotes"][0]["url"],
        "https://mcp.example.com/harness/mcp"
    );
    assert_eq!(
        card["_meta"]["io.kube-mcp/declaration"]["hash"],
        first_hash.as_str()
    );
    // The same card at the root (in-cluster clients through the Service).
    let root = client
        .get(format!("{}/mcp/server-card", runtime.url))
        .send()
        .await
        .unwrap();
    assert_eq!(root.status(), 200);

    // Revalidation: unchanged, 304 without a body.
    let etag = headers[header::ETAG].to_str().unwrap().to_owned();
    let response = get_with(&card_url, header::IF_NONE_MATCH, &etag).await;
    assert_eq!(response.status(), 304);
    assert_eq!(response.headers()[header::ETAG], etag.as_str());
    assert_eq!(response.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    assert!(response.bytes().await.unwrap().is_empty());

    // A preflight of a browser that revalidates.
    let response = client
        .request(reqwest::Method::OPTIONS, &card_url)
        .header(header::ORIGIN, "https://elsewhere.example")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "GET")
        .header(header::ACCESS_CONTROL_REQUEST_HEADERS, "if-none-match")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    let allowed = response.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(allowed.contains("if-none-match"), "{allowed}");
    assert!(
        response.headers()[header::ACCESS_CONTROL_ALLOW_METHODS]
            .to_str()
            .unwrap()
            .contains("GET")
    );

    // The MCP routes still refuse that origin, and the card refuses a foreign Host.
    let refused = runtime
        .post(
            &crate::support::initialize_body(),
            &[("origin", "https://elsewhere.example")],
        )
        .await;
    assert_eq!(refused.status(), 403);
    let refused = get_with(&card_url, header::HOST, "evil.example").await;
    assert_eq!(refused.status(), 403);

    // A reload changes the declaration, hence the tag: the old one no longer matches.
    runtime.replace_manifest(MANIFEST.replace("1.0.0", "1.1.0"));
    let mut changed = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let response = get_with(&card_url, header::IF_NONE_MATCH, &etag).await;
        if response.status() == 200 {
            changed = Some(response);
            break;
        }
        assert_eq!(response.status(), 304);
    }
    let response = changed.expect("the card did not change within 5 s of a reload");
    assert_ne!(response.headers()[header::ETAG], etag.as_str());
    assert_eq!(
        response.headers()[header::ETAG],
        format!("\"{}\"", served_hash(&runtime.admin).await).as_str()
    );
    assert_eq!(body_json(response).await["version"], "1.1.0");
    runtime.shutdown.cancel();
}

#[tokio::test]
async fn without_the_flag_there_is_no_card() {
    let runtime = start(MANIFEST, |_| {}).await;
    let response = reqwest::Client::new()
        .get(format!("{}/mcp/server-card", runtime.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    runtime.shutdown.cancel();
}

/// The hash of what the runtime serves, from its admin port.
async fn served_hash(admin: &str) -> String {
    let report = body_json(reqwest::get(format!("{admin}/declaration")).await.unwrap()).await;
    report["hash"].as_str().unwrap().to_owned()
}

/// `GET url` with one extra header.
async fn get_with(url: &str, name: header::HeaderName, value: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(url)
        .header(name, value)
        .send()
        .await
        .unwrap()
}
