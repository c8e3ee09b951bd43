//! Where an APIService's Service is reached (upstream's
//! `pkg/apiserver/resolvers.go` over `k8s.io/apiserver/pkg/util/proxy`'s
//! `ResolveCluster` and `ResolveEndpoint`): the Service's ClusterIP and
//! port by default, an `ExternalName` Service's name and the APIService's
//! port, or with `--enable-aggregator-routing` a ready endpoint of the
//! Service's EndpointSlices.

use std::sync::Arc;

use client_go::tools::cache::{IndexFunc, Lister};
use serde_json::Value;
use storage::StoredObject;

/// The index of EndpointSlices by `<namespace>/<service name>`.
pub const BY_SERVICE: &str = "service";

/// Files EndpointSlices under their Service (the
/// `kubernetes.io/service-name` label).
pub fn by_service() -> IndexFunc {
    Arc::new(|slice: &StoredObject| {
        let mut read = slice.metadata_values(&["namespace", "labels"]).into_iter();
        let (ns, labels) = (read.next().flatten(), read.next().flatten());
        let ns = ns.as_ref().and_then(Value::as_str).unwrap_or_default();
        let label = &labels.unwrap_or_default()["kubernetes.io/service-name"];
        label
            .as_str()
            .map(|service| vec![format!("{ns}/{service}")])
            .unwrap_or_default()
    })
}

/// A resolved `https` host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// Resolves Services from the informers' caches.
#[derive(Clone)]
pub struct ServiceResolver {
    pub services: Lister,
    /// EndpointSlices indexed [`BY_SERVICE`].
    pub endpoint_slices: Lister,
    /// `--enable-aggregator-routing`.
    pub endpoint_routing: bool,
}

fn service_type(svc: &Value) -> &str {
    svc["spec"]["type"].as_str().unwrap_or("ClusterIP")
}

/// The Service port numbered `port` (upstream's `findServicePort`).
fn find_service_port<'a>(svc: &'a Value, name: &str, port: i64) -> Result<&'a Value, String> {
    svc["spec"]["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["port"].as_i64() == Some(port)))
        .ok_or_else(|| format!("no service port {port} found for service {name:?}"))
}

fn to_port(port: i64) -> Result<u16, String> {
    u16::try_from(port).map_err(|_| format!("invalid port {port}"))
}

impl ServiceResolver {
    pub fn resolve(&self, namespace: &str, name: &str, port: i64) -> Result<Endpoint, String> {
        let svc = self
            .services
            .get(Some(namespace), name)
            .ok_or_else(|| format!("service {name:?} not found"))?;
        if self.endpoint_routing {
            self.resolve_endpoint(&svc, namespace, name, port)
        } else {
            resolve_cluster(&svc, name, port)
        }
    }

    /// A ready endpoint of the Service's port, at random.
    fn resolve_endpoint(
        &self,
        svc: &Value,
        namespace: &str,
        name: &str,
        port: i64,
    ) -> Result<Endpoint, String> {
        let svc_port = find_service_port(svc, name, port)?;
        match service_type(svc) {
            "ClusterIP" | "LoadBalancer" | "NodePort" => {}
            other => return Err(format!("unsupported service type {other:?}")),
        }
        let port_name = svc_port["name"].as_str().unwrap_or_default();
        let slices = self
            .endpoint_slices
            .by_index(BY_SERVICE, &format!("{namespace}/{name}"));
        let mut found = Vec::new();
        for slice in &slices {
            let ports = slice["ports"].as_array().map_or(&[][..], Vec::as_slice);
            let Some(target) = ports
                .iter()
                .find(|p| p["name"].as_str().unwrap_or_default() == port_name)
                .and_then(|p| p["port"].as_i64())
            else {
                continue;
            };
            let endpoints = slice["endpoints"].as_array().map_or(&[][..], Vec::as_slice);
            for endpoint in endpoints.iter().filter(|e| is_ready(e)) {
                if let Some(ip) = endpoint["addresses"][0].as_str() {
                    found.push(Endpoint {
                        host: ip.to_owned(),
                        port: to_port(target)?,
                    });
                }
            }
        }
        if found.is_empty() {
            return Err(format!("no endpoints available for service {name:?}"));
        }
        let pick = rand::random_range(0..found.len());
        Ok(found.swap_remove(pick))
    }
}

/// An endpoint whose `ready` condition is unset or true.
pub fn is_ready(endpoint: &Value) -> bool {
    endpoint["conditions"]["ready"].as_bool() != Some(false)
}

/// The Service's cluster IP, or an ExternalName Service's name.
fn resolve_cluster(svc: &Value, name: &str, port: i64) -> Result<Endpoint, String> {
    let cluster_ip = svc["spec"]["clusterIP"].as_str().unwrap_or_default();
    match service_type(svc) {
        "ClusterIP" if cluster_ip == "None" => {
            Err(r#"cannot route to service with ClusterIP "None""#.to_owned())
        }
        "ClusterIP" | "LoadBalancer" | "NodePort" => {
            let svc_port = find_service_port(svc, name, port)?;
            Ok(Endpoint {
                host: cluster_ip.to_owned(),
                port: to_port(svc_port["port"].as_i64().unwrap_or(port))?,
            })
        }
        "ExternalName" => Ok(Endpoint {
            host: svc["spec"]["externalName"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            port: to_port(port)?,
        }),
        other => Err(format!("unsupported service type {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cluster_routing_uses_the_cluster_ip_or_the_external_name() {
        let svc = json!({"spec": {"clusterIP": "10.0.0.9",
            "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}});
        let ep = resolve_cluster(&svc, "api", 443).unwrap();
        assert_eq!((ep.host.as_str(), ep.port), ("10.0.0.9", 443));
        assert_eq!(
            resolve_cluster(&svc, "api", 8443).unwrap_err(),
            r#"no service port 8443 found for service "api""#
        );
        let headless = json!({"spec": {"clusterIP": "None", "ports": []}});
        assert_eq!(
            resolve_cluster(&headless, "api", 443).unwrap_err(),
            r#"cannot route to service with ClusterIP "None""#
        );
        let external = json!({"spec": {"type": "ExternalName", "externalName": "localhost"}});
        let ep = resolve_cluster(&external, "api", 7443).unwrap();
        assert_eq!((ep.host.as_str(), ep.port), ("localhost", 7443));
    }

    #[test]
    fn slices_are_filed_under_their_service() {
        let slice = json!({"metadata": {"namespace": "ns",
            "labels": {"kubernetes.io/service-name": "api"}}});
        assert_eq!(by_service()(&slice.into()), ["ns/api"]);
        assert!(by_service()(&json!({"metadata": {}}).into()).is_empty());
        assert!(is_ready(&json!({"conditions": {}})));
        assert!(!is_ready(&json!({"conditions": {"ready": false}})));
    }
}
