//! The admin port: health, readiness, Prometheus metrics and the served declaration, for the
//! cluster (not for clients).

pub mod declaration;
pub mod routes;
