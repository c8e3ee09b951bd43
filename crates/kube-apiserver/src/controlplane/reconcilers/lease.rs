//! The lease endpoint reconciler (upstream's
//! `pkg/controlplane/reconcilers/lease.go`, the default
//! `--endpoint-reconciler-type`): every API server keeps a key
//! `<prefix>/masterleases/<ip>` written with a TTL, and lists every such
//! key as the endpoints of the `kubernetes` Service, so a server that
//! stops renewing drops out when its key expires.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use storage::{Codec, Kv, RangeRequest, StorageError, TxnOp};
use tokio::sync::Mutex;

use super::endpointsadapter::EndpointsAdapter;
use super::ReconcileError;

/// The API servers' addresses in storage (upstream's `storageLeases`).
pub struct Leases {
    kv: Arc<dyn Kv>,
    codec: Arc<dyn Codec>,
    /// `<prefix>/masterleases/`.
    base_key: String,
    ttl: Duration,
}

impl Leases {
    pub fn new(kv: Arc<dyn Kv>, codec: Arc<dyn Codec>, prefix: &str, ttl: Duration) -> Self {
        Leases {
            kv,
            codec,
            base_key: format!("{}/masterleases/", prefix.trim_end_matches('/')),
            ttl,
        }
    }

    /// The addresses of every unexpired lease.
    pub async fn list(&self) -> Result<BTreeSet<String>, StorageError> {
        let read = RangeRequest {
            key: self.base_key.clone(),
            range_end: Some(storage::prefix_end(&self.base_key)),
            ..RangeRequest::default()
        };
        let mut ips = BTreeSet::new();
        for kv in self.kv.range(read).await?.kvs {
            let obj = self.codec.decode(&kv.key, &kv.value)?;
            if let Some(ip) = obj
                .pointer("/subsets/0/addresses/0/ip")
                .and_then(Value::as_str)
            {
                ips.insert(ip.to_owned());
            }
        }
        Ok(ips)
    }

    /// Writes `ip`'s lease again, for another TTL: an Endpoints object
    /// naming the address, as upstream stores it.
    pub async fn update(&self, ip: &str) -> Result<(), StorageError> {
        let lease = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {},
            "subsets": [{"addresses": [{"ip": ip}]}]});
        let value = self.codec.encode(&lease)?;
        let key = format!("{}{ip}", self.base_key);
        self.kv.put_with_ttl(&key, value, self.ttl).await.map(drop)
    }

    /// Deletes `ip`'s lease; `NotFound` when there is none.
    pub async fn remove(&self, ip: &str) -> Result<(), StorageError> {
        let key = format!("{}{ip}", self.base_key);
        let read = RangeRequest {
            key: key.clone(),
            ..RangeRequest::default()
        };
        loop {
            let Some(current) = self.kv.range(read.clone()).await?.kvs.pop() else {
                return Err(StorageError::NotFound { key });
            };
            let deleted = self
                .kv
                .txn(&key, current.mod_revision, TxnOp::Delete)
                .await?;
            if matches!(deleted, storage::TxnResponse::Succeeded { .. }) {
                return Ok(());
            }
        }
    }
}

/// Upstream's `leaseEndpointReconciler`.
pub struct LeaseEndpointReconciler {
    adapter: EndpointsAdapter,
    leases: Leases,
    stopped: AtomicBool,
    /// Keeps a reconcile and the removal of our lease apart.
    reconciling: Mutex<()>,
}

impl LeaseEndpointReconciler {
    pub fn new(adapter: EndpointsAdapter, leases: Leases) -> Self {
        LeaseEndpointReconciler {
            adapter,
            leases,
            stopped: AtomicBool::new(false),
            reconciling: Mutex::new(()),
        }
    }

    /// Renews our lease, then makes the endpoints list every leased address.
    pub async fn reconcile(
        &self,
        ip: &str,
        ports: &Value,
        reconcile_ports: bool,
    ) -> Result<(), ReconcileError> {
        if self.stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _guard = self.reconciling.lock().await;
        self.leases.update(ip).await?;
        self.do_reconcile(ports, reconcile_ports).await
    }

    async fn do_reconcile(
        &self,
        ports: &Value,
        reconcile_ports: bool,
    ) -> Result<(), ReconcileError> {
        let ips = self.leases.list().await?;
        // Our own lease was just renewed: no lease at all means storage
        // answered wrongly, unless we are stopping as the last server.
        if ips.is_empty() && !self.stopped.load(Ordering::SeqCst) {
            return Err(ReconcileError::NoLeases);
        }
        Ok(self.adapter.sync(&ips, ports, reconcile_ports).await?)
    }

    /// Deletes our lease and lists the remaining servers.
    pub async fn remove(&self, ip: &str, ports: &Value) -> Result<(), ReconcileError> {
        let _guard = self.reconciling.lock().await;
        self.leases.remove(ip).await?;
        self.do_reconcile(ports, true).await
    }

    pub fn stop_reconciling(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}
