//! The Available condition of APIServices backed by a Service (upstream's
//! `pkg/controllers/status/remote`, the
//! `apiservice-status-remote-available-controller`): the Service must
//! exist, a ClusterIP Service must listen on the APIService's port and
//! have ready endpoints for it, and the server behind it must answer
//! `/apis/<group>/<version>` within upstream's timeouts. Rechecked on
//! every change of the APIService, its Service or its EndpointSlices, every
//! 30 seconds, and after a failure with a backoff of 5 ms doubling to 30 s.

use std::sync::Arc;
use std::time::Duration;

use apiserver::endpoints::proxy::{self, Location, Transport};
use apiserver::registry::store::Store;
use axum::body::Body;
use base64::Engine;
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::transport::{tls_config, ClientAuth};
use client_go::util::workqueue::{
    run_workers, ItemExponentialFailureRateLimiter, RateLimitingQueue,
};
use client_go::CancellationToken;
use serde_json::Value;

use super::metrics::Metrics;
use super::{has, set_available, Available};
use crate::resolvers::{is_ready, ServiceResolver, BY_SERVICE};

/// How long dialing an aggregated API server may take (client-go's dialer).
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Upstream's discovery check: five attempts at once, one success is enough.
const ATTEMPTS: usize = 5;
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(6);
/// The APIServices' resync period.
pub const RESYNC: Duration = Duration::from_secs(30);

/// upstream's `BuildTransportConfig`: TLS to `<service>.<namespace>.svc`
/// checked against `spec.caBundle` unless `spec.insecureSkipTLSVerify`,
/// presenting the proxy client certificate.
pub fn transport_for(
    api_service: &Value,
    client: Option<&ClientAuth>,
) -> Result<Transport, String> {
    let spec = &api_service["spec"];
    let roots = if spec["insecureSkipTLSVerify"].as_bool() == Some(true) {
        None
    } else {
        let encoded = spec["caBundle"].as_str().unwrap_or_default();
        let invalid = |e: &dyn std::fmt::Display| format!("invalid caBundle: {e}");
        let pem = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| invalid(&e))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
            roots
                .add(cert.map_err(|e| invalid(&e))?)
                .map_err(|e| invalid(&e))?;
        }
        Some(roots)
    };
    let auth = client.map(|(certs, key)| (certs.clone(), key.clone_key()));
    let tls = tls_config(roots, auth).map_err(|e| e.to_string())?;
    let service = &spec["service"];
    let server_name = format!(
        "{}.{}.svc",
        service["name"].as_str().unwrap_or_default(),
        service["namespace"].as_str().unwrap_or_default()
    );
    Ok(Transport::new(tls, DIAL_TIMEOUT).with_server_name(server_name))
}

/// What the controller reads and writes.
#[derive(Clone)]
pub struct Controller {
    pub api_services: Arc<Store>,
    pub resolver: ServiceResolver,
    pub client: Option<Arc<ClientAuth>>,
    pub metrics: Metrics,
}

/// The Service an APIService names: namespace, name, port.
fn service_ref(api_service: &Value) -> Option<(String, String, i64)> {
    let svc = api_service["spec"]["service"].as_object()?;
    let text = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    Some((text("namespace"), text("name"), port))
}

fn condition(status: &'static str, reason: &str, message: String) -> Available {
    Available {
        status,
        reason: reason.to_owned(),
        message,
    }
}

impl Controller {
    /// Follows APIServices (with `informer`), Services and EndpointSlices
    /// until `stop`.
    pub async fn run(
        self,
        informer: Arc<SharedInformer>,
        services: Arc<SharedInformer>,
        slices: Arc<SharedInformer>,
        stop: CancellationToken,
    ) {
        let limiter = ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(30),
        );
        let queue = RateLimitingQueue::new(limiter);
        let enqueue = queue.clone();
        informer.add_event_handler(ResourceEventHandlerFuncs::on_any(move |s| {
            if service_ref(s).is_some() {
                enqueue.add(
                    s["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
        }));
        let api_services = informer.lister();
        for followed in [services, slices] {
            let (queue, api_services) = (queue.clone(), api_services.clone());
            followed.add_event_handler(ResourceEventHandlerFuncs::on_any(move |obj| {
                enqueue_referring(&queue, &api_services, obj);
            }));
        }
        informer.wait_for_sync().await;
        run_workers(queue, 2, stop, move |name: String| {
            let (this, lister) = (self.clone(), api_services.clone());
            async move { this.sync(&lister, &name).await }
        })
        .await;
    }

    /// Checks one APIService and records the outcome; a failed discovery
    /// check is an error, so it is retried with backoff.
    async fn sync(&self, lister: &Lister, name: &str) -> Result<(), String> {
        let Some(api_service) = lister.get(None, name) else {
            self.metrics.forget(name);
            return Ok(());
        };
        if service_ref(&api_service).is_none() {
            return Ok(());
        }
        let (want, failure) = match self.check(&api_service).await {
            Ok(want) => (want, None),
            Err(message) => {
                let want = condition("False", "FailedDiscoveryCheck", message.clone());
                (want, Some(message))
            }
        };
        let written = !has(&api_service, &want)
            && set_available(&self.api_services, name, want.clone()).await;
        self.metrics.observe(name, &api_service, &want, written);
        failure.map_or(Ok(()), Err)
    }

    /// The condition the Service and endpoints give, or the discovery
    /// check's error.
    async fn check(&self, api_service: &Value) -> Result<Available, String> {
        let Some((ns, name, port)) = service_ref(api_service) else {
            return Ok(condition("True", "Local", String::new()));
        };
        let Some(svc) = self.resolver.services.get(Some(&ns), &name) else {
            let message = format!("service/{name} in {ns:?} is not present");
            return Ok(condition("False", "ServiceNotFound", message));
        };
        if svc["spec"]["type"].as_str().unwrap_or("ClusterIP") == "ClusterIP" {
            if let Some(problem) = self.endpoint_problem(&svc, &ns, &name, port) {
                return Ok(problem);
            }
        }
        self.discovery_check(api_service, &ns, &name, port).await?;
        Ok(condition("True", "Passed", "all checks passed".to_owned()))
    }

    /// Why a ClusterIP Service cannot carry the APIService's traffic.
    fn endpoint_problem(&self, svc: &Value, ns: &str, name: &str, port: i64) -> Option<Available> {
        let ports = svc["spec"]["ports"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let Some(svc_port) = ports.iter().find(|p| p["port"].as_i64() == Some(port)) else {
            let message = format!("service/{name} in {ns:?} is not listening on port {port}");
            return Some(condition("False", "ServicePortError", message));
        };
        let port_name = svc_port["name"].as_str().unwrap_or_default();
        let slices = self
            .resolver
            .endpoint_slices
            .by_index(BY_SERVICE, &format!("{ns}/{name}"));
        if slices.is_empty() {
            let message = format!("cannot find endpointslices for service/{name} in {ns:?}");
            return Some(condition("False", "EndpointsNotFound", message));
        }
        if !slices.iter().any(|s| has_available_endpoint(s, port_name)) {
            let message = format!(
                "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
            );
            return Some(condition("False", "MissingEndpoints", message));
        }
        None
    }

    /// GETs the group version's discovery document as
    /// `system:kube-aggregator` in `system:masters`; passes when one of the
    /// attempts succeeds, else the last error.
    async fn discovery_check(
        &self,
        api_service: &Value,
        ns: &str,
        name: &str,
        port: i64,
    ) -> Result<(), String> {
        let transport = transport_for(api_service, self.client.as_deref())?;
        let spec = &api_service["spec"];
        let path = match api_service["metadata"]["name"].as_str() {
            Some("v1.") => format!("/api/{}", spec["version"].as_str().unwrap_or("v1")),
            _ => format!(
                "/apis/{}/{}",
                spec["group"].as_str().unwrap_or_default(),
                spec["version"].as_str().unwrap_or_default()
            ),
        };
        let attempts = (0..ATTEMPTS).map(|_| {
            let (transport, path) = (transport.clone(), path.clone());
            async move {
                let endpoint = self.resolver.resolve(ns, name, port)?;
                let location = Location {
                    https: true,
                    host: endpoint.host,
                    port: endpoint.port,
                    path,
                    query: None,
                };
                let url = location.url();
                match tokio::time::timeout(ATTEMPT_TIMEOUT, get(&transport, &location)).await {
                    Ok(Ok(body)) => Ok(body),
                    Ok(Err(e)) => Err(format!("failing or missing response from {url}: {e}")),
                    Err(_) => Err(format!("timed out waiting for {url}")),
                }
            }
        });
        let mut last = Err("no attempt made".to_owned());
        for result in futures::future::join_all(attempts).await {
            if result.is_ok() {
                return result;
            }
            last = result;
        }
        last
    }
}

/// One GET with the aggregator's identity headers, within the client's
/// timeout; only 2xx answers pass.
async fn get(transport: &Transport, location: &Location) -> Result<(), String> {
    let url = location.url();
    let request = http::Request::get(location.path_and_query())
        .header("x-remote-user", "system:kube-aggregator")
        .header("x-remote-group", "system:masters")
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    let (parts, body) = request.into_parts();
    let exchange = async {
        let resp = proxy::forward(transport, location, parts, body, false)
            .await
            .map_err(|e| format!("Get {url:?}: {}", e.message))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("bad status from {url}: {}", status.as_u16()));
        }
        Ok(())
    };
    match tokio::time::timeout(CLIENT_TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

/// upstream's `hasAvailableEndpoint`: a ready endpoint and a port of the
/// Service port's name.
fn has_available_endpoint(slice: &Value, port_name: &str) -> bool {
    let endpoints = slice["endpoints"].as_array().map_or(&[][..], Vec::as_slice);
    let ports = slice["ports"].as_array().map_or(&[][..], Vec::as_slice);
    endpoints.iter().any(is_ready)
        && ports
            .iter()
            .any(|p| p["name"].as_str() == Some(port_name) && p["port"].is_i64())
}

/// Queues the APIServices served by the Service `obj` is (or belongs to).
fn enqueue_referring(queue: &RateLimitingQueue<String>, api_services: &Lister, obj: &Value) {
    let meta = &obj["metadata"];
    let ns = meta["namespace"].as_str().unwrap_or_default();
    let service = meta["labels"]["kubernetes.io/service-name"]
        .as_str()
        .or(meta["name"].as_str())
        .unwrap_or_default();
    for api_service in api_services.list() {
        if let Some((n, s, _)) = service_ref(&api_service) {
            if n == ns && s == service {
                queue.add(
                    api_service["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn endpoints_count_when_ready_with_the_port_name() {
        let slice = json!({"endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": 6443}]});
        assert!(has_available_endpoint(&slice, "https"));
        assert!(!has_available_endpoint(&slice, ""));
        let unready = json!({"endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": false}}],
            "ports": [{"name": "https", "port": 6443}]});
        assert!(!has_available_endpoint(&unready, "https"));
    }

    #[test]
    fn transports_check_the_service_name_unless_told_not_to() {
        let api = |extra: Value| {
            let mut spec = json!({"service": {"namespace": "ns", "name": "api"}});
            spec.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"spec": spec})
        };
        assert!(transport_for(&api(json!({"insecureSkipTLSVerify": true})), None).is_ok());
        assert!(transport_for(&api(json!({})), None).is_ok());
        let err = transport_for(&api(json!({"caBundle": "***"})), None).err();
        assert!(err.is_some_and(|e| e.starts_with("invalid caBundle")));
    }
}
