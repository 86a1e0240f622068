//! The weight bound of `weight::weigh` against what parsing really allocates: a counting
//! allocator measures the bytes a parsed message keeps, for the densest bodies of each shape.

// Test code: a failed setup fails the test.
#![allow(clippy::unwrap_used)]

use mcp_protocol::parse_message;
use mcp_protocol::weight::weigh;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use std::alloc::System;

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn envelope(arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{arguments}}}}}"#
    )
}

#[test]
fn parsed_messages_keep_less_than_their_weight() {
    let n = 16_000; // up to 64 KiB of punctuation-dense bodies: the unwalked ones
    let keys: String = (0..n / 3).map(|i| format!(r#""{i}":0,"#)).collect();
    let bodies = [
        envelope(&format!("{{\"a\":[{}0]}}", "0,".repeat(2 * n))),
        envelope(&format!("{{\"a\":[{}[]]}}", "[],".repeat(n))),
        envelope(&format!("{{\"a\":[{}{{}}]}}", "{},".repeat(n))),
        envelope(&format!("{{\"a\":[{}\"\"]}}", "\"\",".repeat(n))),
        envelope(&format!("{{{keys}\"z\":0}}")),
        // Walked (over 64 KiB), at the density limit.
        envelope(&format!(
            "{{\"a\":[{}0]}}",
            "1234567890123456,".repeat(20_000)
        )),
    ];
    for body in &bodies {
        let weight = weigh(body.as_bytes()).unwrap().bytes;
        let region = Region::new(ALLOCATOR);
        let parsed = parse_message(body.as_bytes()).unwrap();
        let change = region.change();
        // Reallocations are counted in both (growth allocated, shrinking deallocated).
        let kept = change
            .bytes_allocated
            .saturating_sub(change.bytes_deallocated);
        assert!(
            kept <= weight,
            "a {}-byte body keeps {kept} bytes parsed, over its weight {weight}",
            body.len()
        );
        // The bound is not loose to the point of uselessness either.
        assert!(weight < 8 * kept.max(body.len()), "{weight} vs {kept}");
        eprintln!("{} bytes: keeps {kept}, weighs {weight}", body.len());
        drop(parsed);
    }
}
