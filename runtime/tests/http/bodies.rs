//! Large bodies share one budget: while it is taken, another large body waits and then gets
//! 503, small bodies pass, and a sender too slow to finish its body gets 408 and frees it.

use super::support::{MANIFEST, initialize_body, start};
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn large_bodies_wait_for_a_shared_budget() {
    let rt = start(MANIFEST, |c| {
        c.http.max_body_bytes = 1 << 20;
        c.http.large_body_budget = 1 << 20;
        c.http.large_body_wait = Duration::from_millis(500);
        c.http.body_timeout = Duration::from_secs(3);
    })
    .await;
    // Declares the largest body and sends one byte of it: its share is the whole budget.
    let address = rt.url.trim_start_matches("http://");
    let mut holder = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{{",
        1 << 20
    );
    holder.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut large = initialize_body();
    large["params"]["pad"] = json!("x".repeat(200 * 1024));
    let refused = rt.post(&large, &[]).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    // Small bodies take no share.
    assert_eq!(rt.post(&initialize_body(), &[]).await.status(), 200);

    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), holder.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(rt.post(&large, &[]).await.status(), 200);
}

#[tokio::test]
async fn bodies_declaring_too_much_are_refused_before_reading() {
    let rt = start(MANIFEST, |c| c.http.max_body_bytes = 1024).await;
    let address = rt.url.trim_start_matches("http://");
    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json\r\nContent-Length: 4096\r\nConnection: close\r\n\r\n"
    );
    client.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 413"));
}
