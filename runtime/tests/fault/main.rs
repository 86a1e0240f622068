//! Fault tests against the real binary: hostile clients (stalled HTTP+SSE readers, many dense
//! bodies at once) must not grow the server's resident memory past a stated bound. Each test
//! starts `mcp-runtime serve` on 127.0.0.1 (ports picked by the OS, read from its log), samples
//! its RSS from /proc while attacking it, and stops it by its PID. Loopback only; every attack
//! and wait is bounded in time.

// Test helpers outside `#[test]` functions may panic on setup failures: that fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod churn;
mod harness;
mod small_bodies;
mod stalled_reader;
