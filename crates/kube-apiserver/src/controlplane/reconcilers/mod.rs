//! How the `default/kubernetes` Endpoints and EndpointSlice list the API
//! servers (upstream's `pkg/controlplane/reconcilers`), chosen by
//! `--endpoint-reconciler-type`: `lease` (the default: every live server,
//! by leases in storage), `master-count` (deprecated upstream: a fixed
//! `--apiserver-count`) or `none`.

pub mod endpointsadapter;
pub mod instancecount;
pub mod lease;

use std::time::Duration;

use apimachinery::status::ApiError;
use serde_json::Value;
use storage::StorageError;

use instancecount::MasterCountEndpointReconciler;
use lease::LeaseEndpointReconciler;

/// How often each server reconciles the endpoints (upstream's
/// `DefaultEndpointReconcilerInterval`).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// The TTL of a server's lease (upstream's `DefaultEndpointReconcilerTTL`).
pub const DEFAULT_TTL: Duration = Duration::from_secs(15);

/// The values `--endpoint-reconciler-type` accepts, as upstream lists them.
pub const TYPES: [&str; 3] = ["master-count", "lease", "none"];

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{0}")]
    Storage(#[from] StorageError),
    #[error("{}", .0.message)]
    Api(#[from] ApiError),
    #[error("no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service")]
    NoLeases,
}

impl ReconcileError {
    /// A removal that found no lease of ours: nothing was left behind.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Storage(StorageError::NotFound { .. }))
    }
}

/// Upstream's `EndpointReconciler` implementations.
pub enum EndpointReconciler {
    Lease(LeaseEndpointReconciler),
    MasterCount(MasterCountEndpointReconciler),
    None,
}

impl EndpointReconciler {
    /// Adds `ip` to the endpoints (renewing its lease) and drops stale ones.
    pub async fn reconcile(
        &self,
        ip: &str,
        ports: &Value,
        reconcile_ports: bool,
    ) -> Result<(), ReconcileError> {
        match self {
            Self::Lease(r) => r.reconcile(ip, ports, reconcile_ports).await,
            Self::MasterCount(r) => r.reconcile(ip, ports, reconcile_ports).await,
            Self::None => Ok(()),
        }
    }

    /// Removes `ip` (its lease) from the endpoints.
    pub async fn remove(&self, ip: &str, ports: &Value) -> Result<(), ReconcileError> {
        match self {
            Self::Lease(r) => r.remove(ip, ports).await,
            Self::MasterCount(r) => r.remove(ip, ports).await,
            Self::None => Ok(()),
        }
    }

    /// Turns later reconciles into no-ops (the server is stopping).
    pub async fn stop_reconciling(&self) {
        match self {
            Self::Lease(r) => r.stop_reconciling(),
            Self::MasterCount(r) => r.stop_reconciling().await,
            Self::None => {}
        }
    }
}
