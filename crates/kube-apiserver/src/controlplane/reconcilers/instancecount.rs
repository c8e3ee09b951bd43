//! The master-count endpoint reconciler (upstream's
//! `pkg/controlplane/reconcilers/instancecount.go`,
//! `--endpoint-reconciler-type=master-count`): every server adds its own
//! address and, when there are more than `--apiserver-count`, drops the
//! ones after its own in sorted order, so the list settles when all
//! servers agree on the count.

use std::collections::BTreeSet;

use serde_json::Value;
use tokio::sync::Mutex;

use super::endpointsadapter::EndpointsAdapter;
use super::ReconcileError;

pub struct MasterCountEndpointReconciler {
    count: usize,
    adapter: EndpointsAdapter,
    /// Set once stopping: later reconciles do nothing.
    stopped: Mutex<bool>,
}

impl MasterCountEndpointReconciler {
    pub fn new(count: usize, adapter: EndpointsAdapter) -> Self {
        MasterCountEndpointReconciler {
            count,
            adapter,
            stopped: Mutex::new(false),
        }
    }

    pub async fn reconcile(
        &self,
        ip: &str,
        ports: &Value,
        reconcile_ports: bool,
    ) -> Result<(), ReconcileError> {
        let stopped = self.stopped.lock().await;
        if *stopped {
            return Ok(());
        }
        let mut ips = self.adapter.get().await?;
        ips.insert(ip.to_owned());
        trim_after(&mut ips, ip, self.count);
        Ok(self.adapter.sync(&ips, ports, reconcile_ports).await?)
    }

    pub async fn remove(&self, ip: &str, ports: &Value) -> Result<(), ReconcileError> {
        let _stopped = self.stopped.lock().await;
        let mut ips = self.adapter.get().await?;
        if !ips.remove(ip) {
            return Ok(());
        }
        Ok(self.adapter.sync(&ips, ports, false).await?)
    }

    pub async fn stop_reconciling(&self) {
        *self.stopped.lock().await = true;
    }
}

/// Removes the addresses following `own` (wrapping around) until at most
/// `count` remain.
fn trim_after(ips: &mut BTreeSet<String>, own: &str, count: usize) {
    let sorted: Vec<String> = ips.iter().cloned().collect();
    let Some(at) = sorted.iter().position(|ip| ip == own) else {
        return;
    };
    let mut next = at;
    while ips.len() > count.max(1) {
        next = (next + 1) % sorted.len();
        ips.remove(&sorted[next]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ips: &[&str]) -> BTreeSet<String> {
        ips.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_addresses_after_our_own_go_first() {
        let mut ips = set(&["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]);
        trim_after(&mut ips, "10.0.0.3", 2);
        assert_eq!(ips, set(&["10.0.0.2", "10.0.0.3"]));
        let mut ips = set(&["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
        trim_after(&mut ips, "10.0.0.1", 3);
        assert_eq!(ips, set(&["10.0.0.1", "10.0.0.2", "10.0.0.3"]));
    }
}
