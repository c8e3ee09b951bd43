//! Reads and writes the `default/kubernetes` Endpoints and EndpointSlice
//! together (upstream's `pkg/controlplane/reconcilers/endpointsadapter.go`):
//! the one place the endpoint reconcilers touch those objects.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Store, Target, WriteOptions};
use serde_json::{json, Value};

/// The namespace and name of the API servers' Service and its endpoints.
pub const NAMESPACE: &str = "default";
pub const NAME: &str = "kubernetes";

/// Writes lost to a concurrent writer (another API server) are retried
/// this many times, as upstream's `retry.DefaultBackoff` steps.
const ATTEMPTS: usize = 5;

/// The endpoints' port list, as upstream's `createEndpointPortSpec`.
pub fn endpoint_ports(port: i64) -> Value {
    json!([{"name": "https", "port": port, "protocol": "TCP"}])
}

/// Both objects of the `kubernetes` Service's endpoints.
pub struct EndpointsAdapter {
    endpoints: Arc<Store>,
    slices: Arc<Store>,
    /// The address family of the Service's primary cluster IP.
    ipv4: bool,
}

impl EndpointsAdapter {
    pub fn new(endpoints: Arc<Store>, slices: Arc<Store>, service_ip: IpAddr) -> Self {
        EndpointsAdapter {
            endpoints,
            slices,
            ipv4: service_ip.is_ipv4(),
        }
    }

    /// The addresses the EndpointSlice lists now (none when it is absent).
    pub async fn get(&self) -> Result<BTreeSet<String>, ApiError> {
        let slice = match self
            .slices
            .get(Some(NAMESPACE), NAME, Default::default())
            .await
        {
            Ok(slice) => slice,
            Err(e) if e.code == 404 => return Ok(BTreeSet::new()),
            Err(e) => return Err(e),
        };
        let endpoints = slice.get("endpoints").and_then(Value::as_array);
        let addresses = endpoints
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("addresses"));
        Ok(addresses
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect())
    }

    /// Makes both objects list `ips` of the primary family (sorted), with
    /// `ports` when they have none or `reconcile_ports` is set.
    pub async fn sync(
        &self,
        ips: &BTreeSet<String>,
        ports: &Value,
        reconcile_ports: bool,
    ) -> Result<(), ApiError> {
        let ips: Vec<String> = ips
            .iter()
            .filter(|ip| ip.parse::<IpAddr>().is_ok_and(|a| a.is_ipv4() == self.ipv4))
            .cloned()
            .collect();
        let target = Arc::new(Desired {
            ips,
            ports: ports.clone(),
            reconcile_ports,
            address_type: if self.ipv4 { "IPv4" } else { "IPv6" },
        });
        let desired = target.clone();
        sync_object(
            &self.endpoints,
            move |c| desired.endpoints(c),
            ENDPOINTS_FIELDS,
        )
        .await?;
        sync_object(&self.slices, move |c| target.slice(c), SLICE_FIELDS).await
    }
}

/// The fields upstream compares before writing each object.
const ENDPOINTS_FIELDS: &[&str] = &["subsets", "labels"];
const SLICE_FIELDS: &[&str] = &["endpoints", "ports", "labels", "addressType"];

struct Desired {
    ips: Vec<String>,
    ports: Value,
    reconcile_ports: bool,
    address_type: &'static str,
}

impl Desired {
    fn ports_from(&self, current: Option<&Value>) -> Value {
        match current {
            Some(ports)
                if !self.reconcile_ports && ports.as_array().is_some_and(|p| !p.is_empty()) =>
            {
                ports.clone()
            }
            _ => self.ports.clone(),
        }
    }

    fn endpoints(&self, current: Option<&Value>) -> Value {
        let mut obj = current.cloned().unwrap_or_else(|| {
            json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": NAME, "namespace": NAMESPACE}})
        });
        let ports = self.ports_from(obj.pointer("/subsets/0/ports"));
        let addresses: Vec<Value> = self.ips.iter().map(|ip| json!({"ip": ip})).collect();
        obj["metadata"]["labels"] = json!({"endpointslice.kubernetes.io/skip-mirror": "true"});
        // Upstream repacks the subsets (`RepackSubsets`): with no address
        // (the last server removing itself) none is left.
        match obj.as_object_mut() {
            Some(map) if addresses.is_empty() => {
                map.remove("subsets");
            }
            _ => obj["subsets"] = json!([{"addresses": addresses, "ports": ports}]),
        }
        obj
    }

    fn slice(&self, current: Option<&Value>) -> Value {
        let mut obj = current.cloned().unwrap_or_else(|| {
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": NAME, "namespace": NAMESPACE}})
        });
        let ports = self.ports_from(obj.get("ports"));
        obj["metadata"]["labels"] = json!({"kubernetes.io/service-name": NAME});
        obj["addressType"] = json!(self.address_type);
        obj["endpoints"] = self
            .ips
            .iter()
            .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
            .collect();
        obj["ports"] = ports;
        obj
    }
}

/// The value of `field` (labels from metadata) as compared before writing.
fn field<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    match field {
        "labels" => obj.pointer("/metadata/labels"),
        other => obj.get(other).filter(|v| !v.is_null()),
    }
}

/// Creates the object or updates it when one of `fields` differs from
/// what `desired` makes of it, retrying when another writer got there
/// first.
async fn sync_object(
    store: &Store,
    desired: impl Fn(Option<&Value>) -> Value + Send + Sync + 'static,
    fields: &[&str],
) -> Result<(), ApiError> {
    let desired = Arc::new(desired);
    let opts = WriteOptions::default();
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let written = match store.get(Some(NAMESPACE), NAME, Default::default()).await {
            Err(e) if e.code == 404 => store.create(desired(None), &opts).await.map(drop),
            Err(e) => return Err(e),
            Ok(current) => {
                let want = desired(Some(&current));
                if fields.iter().all(|f| field(&current, f) == field(&want, f)) {
                    return Ok(());
                }
                let desired = desired.clone();
                let mutate = Arc::new(move |c: Option<&Value>| Ok(desired(c)));
                let updated = store.update(Some(NAMESPACE), NAME, Target::Main, mutate, &opts);
                updated.await.map(drop)
            }
        };
        match written {
            Err(e) if e.code == 409 => last = Some(e),
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| ApiError::internal_error("endpoints sync gave up")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(ips: &[&str], reconcile_ports: bool) -> Desired {
        Desired {
            ips: ips.iter().map(|s| s.to_string()).collect(),
            ports: endpoint_ports(6443),
            reconcile_ports,
            address_type: "IPv4",
        }
    }

    #[test]
    fn endpoints_list_every_ip_in_one_subset_and_keep_their_ports() {
        let current = json!({"metadata": {"name": "kubernetes", "labels": {"x": "y"}},
            "subsets": [{"addresses": [{"ip": "10.0.0.9"}], "ports": [{"name": "https", "port": 1, "protocol": "TCP"}]},
                        {"addresses": [{"ip": "10.0.0.8"}]}]});
        let obj = desired(&["10.0.0.1", "10.0.0.2"], false).endpoints(Some(&current));
        assert_eq!(
            obj["subsets"],
            json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                "ports": [{"name": "https", "port": 1, "protocol": "TCP"}]}])
        );
        assert_eq!(
            obj["metadata"]["labels"],
            json!({"endpointslice.kubernetes.io/skip-mirror": "true"})
        );
        let reconciled = desired(&["10.0.0.1"], true).endpoints(Some(&current));
        assert_eq!(reconciled["subsets"][0]["ports"][0]["port"], 6443);
    }

    #[test]
    fn slice_has_one_ready_endpoint_per_ip() {
        let obj = desired(&["10.0.0.1", "10.0.0.2"], false).slice(None);
        assert_eq!(obj["addressType"], "IPv4");
        assert_eq!(
            obj["endpoints"],
            json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
                   {"addresses": ["10.0.0.2"], "conditions": {"ready": true}}])
        );
        assert_eq!(
            obj["metadata"]["labels"]["kubernetes.io/service-name"],
            "kubernetes"
        );
        assert_eq!(obj["ports"], endpoint_ports(6443));
    }

    #[test]
    fn no_ips_leave_no_subset() {
        let obj = desired(&[], false).endpoints(None);
        assert_eq!(obj.get("subsets"), None);
        let current = desired(&["10.0.0.1"], false).endpoints(None);
        let obj = desired(&[], false).endpoints(Some(&current));
        assert_eq!(obj.get("subsets"), None);
    }
}
