//! Pieces every Kubernetes component shares (upstream's
//! `k8s.io/component-base`): its logging, [`logs`], and its OpenTelemetry
//! tracing, [`tracing`].

pub mod logs;
pub mod tracing;
