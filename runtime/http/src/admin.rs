//! The admin port: health, readiness and Prometheus metrics, for the cluster (not for clients).

pub mod routes;
