//! The `kubernetes` Service and its endpoints (upstream's
//! `pkg/controlplane/controller/kubernetesservice`): the Service is created
//! once; the endpoint reconciler runs every interval from every server and,
//! when the server stops, removes its address (a pre-shutdown hook).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Store, WriteOptions};
use serde_json::{json, Value};
use storage::Kv;

use crate::controlplane::reconcilers::endpointsadapter::{endpoint_ports, NAME, NAMESPACE};
use crate::controlplane::reconcilers::EndpointReconciler;

/// What the controller keeps (upstream's `kubernetesservice.Config`).
pub struct Controller {
    /// `--advertise-address`, the address this server adds.
    pub public_ip: String,
    pub reconciler: EndpointReconciler,
    pub interval: Duration,
    /// The Service's cluster IP (the first of `--service-cluster-ip-range`).
    pub service_ip: String,
    /// The secure port: the Service's target port and the endpoints' port.
    pub public_port: i64,
    /// `--kubernetes-service-node-port`; 0 for a ClusterIP Service.
    pub node_port: i64,
    pub services: Arc<Store>,
    /// Probed before the first reconcile, standing in for upstream's wait
    /// for `/readyz`.
    pub kv: Arc<dyn Kv>,
}

impl Controller {
    fn ports(&self) -> Value {
        endpoint_ports(self.public_port)
    }

    /// Removes the address a previous run of this server left (it did not
    /// stop cleanly), then reconciles every interval.
    pub async fn start(self: Arc<Self>) {
        match self.reconciler.remove(&self.public_ip, &self.ports()).await {
            Ok(()) => tracing::error!("Found stale data, removed previous endpoints on kubernetes service, apiserver didn't exit successfully previously"),
            Err(e) if e.is_not_found() => {}
            Err(e) => tracing::error!(error = %e, "Error removing old endpoints from kubernetes service"),
        }
        tokio::spawn(async move {
            while self.kv.health().await.is_err() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let mut ticks = tokio::time::interval(self.interval);
            loop {
                ticks.tick().await;
                if let Err(e) = self.update_kubernetes_service().await {
                    tracing::error!(error = %e, "unable to sync kubernetes service");
                }
            }
        });
    }

    async fn update_kubernetes_service(&self) -> Result<(), String> {
        self.create_service_if_needed()
            .await
            .map_err(|e| e.message)?;
        let ports = self.ports();
        let reconciled = self.reconciler.reconcile(&self.public_ip, &ports, false);
        reconciled.await.map_err(|e| e.to_string())
    }

    async fn create_service_if_needed(&self) -> Result<(), ApiError> {
        if self
            .services
            .get(Some(NAMESPACE), NAME, Default::default())
            .await
            .is_ok()
        {
            return Ok(());
        }
        match self
            .services
            .create(self.service(), &WriteOptions::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(ApiError { code: 409, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn service(&self) -> Value {
        let mut port = json!({"name": "https", "port": 443, "protocol": "TCP",
            "targetPort": self.public_port});
        let mut kind = "ClusterIP";
        if self.node_port > 0 {
            port["nodePort"] = json!(self.node_port);
            kind = "NodePort";
        }
        let ip = &self.service_ip;
        let family = if ip.contains(':') { "IPv6" } else { "IPv4" };
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": kind, "clusterIP": ip, "clusterIPs": [ip],
                "ipFamilies": [family], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster", "ports": [port]},
        })
    }

    /// Stops reconciling and removes this server's address, waiting at most
    /// two intervals (a server that cannot reach storage still stops).
    pub async fn stop(&self) {
        tracing::info!("Shutting down kubernetes service endpoint reconciler");
        self.reconciler.stop_reconciling().await;
        let ports = self.ports();
        let removed = self.reconciler.remove(&self.public_ip, &ports);
        match tokio::time::timeout(2 * self.interval, removed).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "Unable to remove endpoints from kubernetes service")
            }
            Err(_) => tracing::warn!("RemoveEndpoints() timed out"),
        }
    }
}
