//! The operator end to end against a real control plane, in Rust with `kube::Api`: the
//! assertions `tests/e2e/run.sh` used to make with kubectl and jq. That script starts the
//! control plane and the operator (as the chart's ServiceAccount) and runs these tests with
//! `--ignored`; plain `cargo test` lists them as ignored.
//!
//! The control plane has no kubelet and no network plugin: the tests write pod status (phase,
//! Ready, IP) themselves, and run real mcp-runtime processes as the pods, each on its own
//! loopback address (127.x.y.z, a pod IP the operator dials like any other). What this cannot
//! show: a NetworkPolicy being enforced (no plugin enforces it here; the tests check the policy
//! the operator writes admits its pods on the admin port), and a kubelet's delay in updating
//! a ConfigMap volume (the tests copy the file when they choose).

// Test helpers outside `#[test]` functions may panic on setup failures: that fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod crd_revision;
mod exposed;
mod fleet;
mod pods;
mod service_account_tokens;
mod session_keys;
mod support;
mod toolsets;
mod unreadable;
mod verified;
mod versions;
