//! mcp-operator: turns `MCPServer` resources into running, reachable mcp-runtime servers and
//! reports the truth about them in their status.
//!
//! Reconcile is a pipeline (`reconcile`): validate and build are pure, apply and status talk to
//! the API server. `run` is the process: the CRD step (`crd_upgrade`), admin endpoints, leader
//! election, the controller.

pub mod admin;
pub mod api_metrics;
pub mod controller;
pub mod crd_upgrade;
pub mod leader;
pub mod metrics;
pub mod reconcile;
pub mod registry;
pub mod resource;
pub mod run;
pub mod suspend;
pub mod verifier;
