//! The proxy subresources (upstream's pod, node and service `ProxyREST`
//! with each resource's `ResourceLocation`): `pods/<name>[:port]/proxy`
//! reaches the pod's IP, `nodes/<name>[:port]/proxy` the node's kubelet
//! (or another port of the node), and `services/<name>[:port]/proxy` one
//! of the service's endpoints. A name may carry a scheme and a port,
//! `https:web:8443`. Any method is forwarded, upgrades included.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::endpoints::connect::ConnectRequest;
use apiserver::endpoints::proxy::{self, Location, Transport};
use apiserver::registry::store::Store;
use axum::body::Body;
use http::Response;
use serde_json::Value;

use super::{text, Context};

/// `[scheme:]name[:port]` (upstream's `SplitSchemeNamePort`).
#[derive(Debug, PartialEq, Eq)]
struct SchemeNamePort<'a> {
    scheme: &'a str,
    name: &'a str,
    port: &'a str,
}

fn split_scheme_name_port(id: &str) -> Option<SchemeNamePort<'_>> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    let valid = !name.is_empty() && matches!(scheme, "" | "http" | "https");
    valid.then_some(SchemeNamePort { scheme, name, port })
}

/// Go's `IP.IsGlobalUnicast`: what a proxy may reach.
fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_global_unicast(IpAddr::V4(v4)),
            None => {
                let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
                !(v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() || link_local)
            }
        },
    }
}

/// `path.Join` of a subpath, with upstream's trailing slash kept.
fn clean_path(subpath: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in subpath.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut path = format!("/{}", parts.join("/"));
    if subpath.ends_with('/') && !path.ends_with('/') {
        path.push('/');
    }
    path
}

fn parse_port(port: &str) -> Result<u16, ApiError> {
    port.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid port {port:?}")))
}

/// The location of the request below the subresource, on `host`.
fn location(req: &ConnectRequest, https: bool, host: String, port: u16) -> Location {
    Location {
        https,
        host,
        port,
        path: clean_path(&req.subpath().unwrap_or_default()),
        query: req.parts.uri.query().map(str::to_owned),
    }
}

/// Admits the CONNECT with its proxy options (`{"path": …}`). The
/// future holds what it needs of the request, not the request (whose body
/// is not `Sync`).
fn admit<'a>(
    store: &'a Store,
    req: &ConnectRequest,
    kind: &'a str,
) -> impl Future<Output = Result<(), ApiError>> + Send + 'a {
    let (info, user) = (req.info.clone(), req.user.clone());
    let options = serde_json::json!({"path": req.subpath().unwrap_or_default()});
    async move { super::admit_connect(store, &info, user, kind, options).await }
}

async fn forward(
    transport: &Transport,
    location: Location,
    req: ConnectRequest,
) -> Result<Response<Body>, ApiError> {
    proxy::forward(transport, &location, req.parts, req.body, false).await
}

/// `pods/<name>/proxy`: the pod's first IP, on the given port or the
/// first port a container declares.
pub(super) async fn pod(
    ctx: Arc<Context>,
    req: ConnectRequest,
) -> Result<Response<Body>, ApiError> {
    let info = req.info.clone();
    admit(&ctx.pods, &req, "PodProxyOptions").await?;
    let target = split_scheme_name_port(&info.name)
        .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {:?}", info.name)))?;
    let namespace = Some(info.namespace.as_str()).filter(|ns| !ns.is_empty());
    let pod = ctx
        .pods
        .get(namespace, target.name, Default::default())
        .await?;
    let declared = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|c| c.pointer("/ports/0/containerPort").and_then(Value::as_u64));
    let ip = text(&pod, "/status/podIPs/0/ip");
    let allowed = ip.parse().is_ok_and(is_global_unicast);
    if !allowed {
        return Err(ApiError::bad_request("address not allowed"));
    }
    let https = target.scheme == "https";
    let port = match (target.port, declared) {
        ("", Some(port)) => u16::try_from(port).unwrap_or(0),
        ("", None) if https => 443,
        ("", None) => 80,
        (port, _) => parse_port(port)?,
    };
    let location = location(&req, https, ip.to_owned(), port);
    forward(&ctx.client.proxy, location, req).await
}

/// Whether every address a host name resolves to may be proxied to
/// (upstream's `isProxyableHostname`).
async fn ensure_proxyable(host: &str) -> Result<(), ApiError> {
    let addresses: Vec<IpAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| ApiError::bad_request(e.to_string()))?
        .map(|a| a.ip())
        .collect();
    if addresses.is_empty() {
        return Err(ApiError::bad_request("no addresses for hostname"));
    }
    if !addresses.into_iter().all(is_global_unicast) {
        return Err(ApiError::bad_request("address not allowed"));
    }
    Ok(())
}

/// `nodes/<name>/proxy`: the kubelet (with its client certificate), or
/// another port of the node through the plain proxy transport.
pub(super) async fn node(
    ctx: Arc<Context>,
    req: ConnectRequest,
) -> Result<Response<Body>, ApiError> {
    let info = req.info.clone();
    admit(&ctx.nodes, &req, "NodeProxyOptions").await?;
    let target = split_scheme_name_port(&info.name)
        .ok_or_else(|| ApiError::bad_request(format!("invalid node request {:?}", info.name)))?;
    let kubelet = ctx.client.node_connection(&ctx.nodes, target.name).await?;
    ensure_proxyable(&kubelet.host).await?;
    if target.port.is_empty() || target.port == kubelet.port.to_string() {
        let location = location(&req, true, kubelet.host, kubelet.port);
        return forward(&ctx.client.kubelet, location, req).await;
    }
    let port = parse_port(target.port)?;
    let location = location(&req, target.scheme == "https", kubelet.host, port);
    forward(&ctx.client.proxy, location, req).await
}

/// Whether an endpoint address is the IP of the pod it names (upstream's
/// `isValidAddress`).
async fn is_valid_address(ctx: &Context, namespace: &str, address: &Value) -> bool {
    let (ip, kind) = (text(address, "/ip"), text(address, "/targetRef/kind"));
    let pod_name = text(address, "/targetRef/name");
    let same_namespace = text(address, "/targetRef/namespace") == namespace;
    if ip.parse::<IpAddr>().is_err() || kind != "Pod" || pod_name.is_empty() || !same_namespace {
        return false;
    }
    let Ok(pod) = ctx
        .pods
        .get(Some(namespace), pod_name, Default::default())
        .await
    else {
        return false;
    };
    pod.pointer("/status/podIPs")
        .and_then(Value::as_array)
        .is_some_and(|ips| ips.iter().any(|p| text(p, "/ip") == ip))
}

/// The endpoint (IP, port) serving the service port named `port_name`.
async fn pick_endpoint(
    ctx: &Context,
    namespace: &str,
    endpoints: &Value,
    port_name: &str,
) -> Option<(String, u16)> {
    let subsets = endpoints.get("subsets").and_then(Value::as_array)?;
    for subset in subsets {
        let port = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| text(p, "/name") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else { continue };
        let addresses = subset.get("addresses").and_then(Value::as_array);
        for address in addresses.into_iter().flatten() {
            if is_valid_address(ctx, namespace, address).await {
                return Some((text(address, "/ip").to_owned(), port));
            }
        }
    }
    None
}

/// `services/<name>/proxy`: one ready endpoint of the service port.
pub(super) async fn service(
    ctx: Arc<Context>,
    req: ConnectRequest,
) -> Result<Response<Body>, ApiError> {
    let (Some(services), Some(endpoints)) = (&ctx.services, &ctx.endpoints) else {
        return Err(ApiError::service_unavailable("services are not served"));
    };
    let info = req.info.clone();
    admit(services, &req, "ServiceProxyOptions").await?;
    let (id, namespace) = (info.name.as_str(), info.namespace.as_str());
    let target = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid service request {id:?}")))?;
    let ns = Some(namespace).filter(|ns| !ns.is_empty());
    let mut port_name = target.port.to_owned();
    if let Ok(number) = target.port.parse::<i64>() {
        let svc = services.get(ns, target.name, Default::default()).await?;
        let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
        let declared = ports
            .into_iter()
            .flatten()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(number));
        let Some(declared) = declared else {
            return Err(ApiError::service_unavailable(format!(
                "no service port {number} found for service {:?}",
                target.name
            )));
        };
        port_name = text(declared, "/name").to_owned();
    }
    let eps = endpoints.get(ns, target.name, Default::default()).await?;
    let has_subsets = eps
        .get("subsets")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    if !has_subsets {
        return Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {:?}",
            target.name
        )));
    }
    let Some((ip, port)) = pick_endpoint(&ctx, namespace, &eps, &port_name).await else {
        return Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {id:?}"
        )));
    };
    let location = location(&req, target.scheme == "https", ip, port);
    forward(&ctx.client.proxy, location, req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_as_upstream() {
        let split = split_scheme_name_port;
        assert_eq!(
            split("web"),
            Some(SchemeNamePort {
                scheme: "",
                name: "web",
                port: ""
            })
        );
        assert_eq!(split("web:8080").map(|s| s.port), Some("8080"));
        assert_eq!(split("https:web:443").map(|s| s.scheme), Some("https"));
        assert_eq!(split("ftp:web:21"), None);
        assert_eq!(split(":80"), None);
        assert_eq!(split("a:b:c:d"), None);
    }

    #[test]
    fn only_global_unicast_addresses_are_proxied() {
        for ok in ["10.0.0.1", "192.0.2.2", "2001:db8::1", "fd00::2"] {
            assert!(is_global_unicast(ok.parse().unwrap()), "{ok}");
        }
        let refused = [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.169.254",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ];
        for bad in refused {
            assert!(!is_global_unicast(bad.parse().unwrap()), "{bad}");
        }
    }

    #[test]
    fn subpaths_are_cleaned_keeping_a_trailing_slash() {
        assert_eq!(clean_path(""), "/");
        assert_eq!(clean_path("healthz"), "/healthz");
        assert_eq!(clean_path("/a/./b/../c/"), "/a/c/");
        assert_eq!(clean_path("../../etc/passwd"), "/etc/passwd");
    }

    #[tokio::test]
    async fn loopback_hosts_are_not_proxyable() {
        let err = ensure_proxyable("127.0.0.1").await.unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "address not allowed")
        );
        assert!(ensure_proxyable("192.0.2.2").await.is_ok());
    }
}
