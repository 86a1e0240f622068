//! HTTP behaviour of the runtime over real sockets: edge limits and refusals, legacy sessions
//! (limits, expiry, pings, replicas), HTTP+SSE, reload and shutdown. Each test starts the runtime
//! in-process on 127.0.0.1 port 0.

// Test helpers outside `#[test]` functions may panic on setup failures: that fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod bodies;
mod budgets;
mod card;
mod clients;
mod forwarding;
mod jq;
// The token issuer of the auth tests, for the forwarding tests' authenticated replicas.
#[allow(dead_code)]
#[path = "../auth/issuer.rs"]
mod issuer;
mod limits;
mod param_headers;
mod rate_limits;
mod reload;
mod rounds;
mod sessions;
mod sse;
mod support;
mod tasks;
mod toolsets;
mod transports;
mod views;
