//! Service address allocation as upstream's MultiCIDRServiceAllocator: the
//! default ServiceCIDR, an IPAddress object for every ClusterIP (released
//! with its Service), upstream's error for an address in use, ranges of
//! other ServiceCIDRs, and allocations that survive a restart.

use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Backend, TestServer};
use crate::support::wait::eventually;

/// How long the server's background work may take here.
const WAIT: Duration = Duration::from_secs(10);

const SERVICES: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: nodes}
spec:
  type: NodePort
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: fixed}
spec:
  clusterIP: 10.0.0.200
  ports: [{port: 80}]
"#;

fn json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&s.ok(&all)).unwrap_or_default()
}

fn cluster_ip(s: &TestServer, name: &str) -> String {
    s.ok(&["get", "service", name, "-o", "jsonpath={.spec.clusterIP}"])
}

/// The IPAddress object for `ip`, if there is one.
fn ip_address(s: &TestServer, ip: &str) -> Option<Value> {
    let out = s.kubectl(&["get", "ipaddress", ip, "-o", "json"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).unwrap_or_default())
}

fn in_default_range(ip: &str) -> bool {
    ip.parse::<Ipv4Addr>()
        .is_ok_and(|ip| ip.octets()[..3] == [10, 0, 0] && !matches!(ip.octets()[3], 0 | 255))
}

fn default_service_cidr_is_ready(s: &TestServer) {
    eventually("the default ServiceCIDR", WAIT, || {
        s.kubectl(&["get", "servicecidr", "kubernetes"])
            .status
            .success()
    });
    let out = s.ok(&["get", "servicecidrs"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("CIDRS"),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("kubernetes") && l.contains("10.0.0.0/24")),
        "{out}"
    );
    let cidr = json(s, &["get", "servicecidr", "kubernetes"]);
    assert_eq!(cidr["spec"]["cidrs"], serde_json::json!(["10.0.0.0/24"]));
    let ready = &cidr["status"]["conditions"][0];
    assert_eq!(
        (ready["type"].as_str(), ready["status"].as_str()),
        (Some("Ready"), Some("True"))
    );
    assert_eq!(ready["message"], "Kubernetes default Service CIDR is ready");
    // The `kubernetes` Service's address is recorded too.
    eventually("the kubernetes Service's IPAddress", WAIT, || {
        ip_address(s, "10.0.0.1").is_some()
    });
}

fn ip_addresses_follow_services(s: &TestServer) {
    s.apply_yaml(SERVICES);
    let web = cluster_ip(s, "web");
    let nodes = cluster_ip(s, "nodes");
    assert!(
        in_default_range(&web) && in_default_range(&nodes),
        "{web} {nodes}"
    );
    assert_eq!(cluster_ip(s, "fixed"), "10.0.0.200");
    let port = s.ok(&[
        "get",
        "service",
        "nodes",
        "-o",
        "jsonpath={.spec.ports[0].nodePort}",
    ]);
    assert!(
        port.parse::<u16>()
            .is_ok_and(|p| (30000..=32767).contains(&p)),
        "{port}"
    );
    for (ip, name) in [
        (&web, "web"),
        (&nodes, "nodes"),
        (&"10.0.0.200".to_owned(), "fixed"),
    ] {
        eventually("the IPAddress", WAIT, || ip_address(s, ip).is_some());
        let obj = ip_address(s, ip).unwrap_or_default();
        assert_eq!(
            obj["spec"]["parentRef"],
            serde_json::json!({"resource": "services", "namespace": "default", "name": name}),
            "{obj}"
        );
        let labels = &obj["metadata"]["labels"];
        assert_eq!(labels["ipaddress.kubernetes.io/ip-family"], "IPv4");
        assert_eq!(
            labels["ipaddress.kubernetes.io/managed-by"],
            "ipallocator.k8s.io"
        );
    }
    let table = s.ok(&["get", "ipaddresses"]);
    assert!(table.contains("services/default/web"), "{table}");
    // An address in use answers upstream's error and takes nothing.
    let taken = r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clash"},
        "spec": {"clusterIP": "10.0.0.200", "ports": [{"port": 80}]}}"#;
    let out = s.kubectl_stdin(&["create", "-f", "-"], taken);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"The Service "clash" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.200"]: failed to allocate IP 10.0.0.200: provided IP is already allocated"#),
        "{err}"
    );
    let outside = taken.replace("10.0.0.200", "10.9.0.1");
    let out = s.kubectl_stdin(&["create", "-f", "-"], &outside);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "failed to allocate IP 10.9.0.1: the provided network does not match the current range"
        ),
        "{err}"
    );
    // Deleting a Service releases its address.
    s.ok(&["delete", "service", "web"]);
    eventually("the released IPAddress", WAIT, || {
        ip_address(s, &web).is_none()
    });
    let again = taken.replace("10.0.0.200", &web);
    let out = s.kubectl_stdin(&["create", "-f", "-"], &again);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A deleted IPAddress of a live Service is put back.
    s.ok(&["delete", "ipaddress", "10.0.0.200"]);
    eventually("the repaired IPAddress", WAIT, || {
        ip_address(s, "10.0.0.200").is_some()
    });
}

fn other_service_cidrs_extend_the_ranges(s: &TestServer) {
    s.apply_yaml(
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec:\n  cidrs: [10.1.0.0/28]\n",
    );
    let svc = r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "extra"},
        "spec": {"clusterIP": "10.1.0.5", "ports": [{"port": 80}]}}"#;
    eventually("a ClusterIP from the new range", WAIT, || {
        s.kubectl_stdin(&["create", "-f", "-"], svc)
            .status
            .success()
    });
    eventually("its IPAddress", WAIT, || {
        ip_address(s, "10.1.0.5").is_some()
    });
}

fn restart_keeps_allocations(backend: Backend) {
    let mut served = backend.start();
    served.apply_yaml(SERVICES);
    let web = cluster_ip(&served, "web");
    let port = served.ok(&[
        "get",
        "service",
        "nodes",
        "-o",
        "jsonpath={.spec.ports[0].nodePort}",
    ]);
    eventually("the IPAddress", WAIT, || {
        ip_address(&served, &web).is_some()
    });
    served.server.restart();
    let s = &served.server;
    for ip in [web.as_str(), "10.0.0.200", "10.0.0.1"] {
        assert!(ip_address(s, ip).is_some(), "{ip} lost its IPAddress");
    }
    let clash = format!(
        r#"{{"apiVersion": "v1", "kind": "Service", "metadata": {{"name": "clash"}},
        "spec": {{"clusterIP": "{web}", "type": "NodePort", "ports": [{{"port": 80}}]}}}}"#
    );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &clash);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("provided IP is already allocated"), "{err}");
    let clash = clash
        .replace(&format!("\"clusterIP\": \"{web}\", "), "")
        .replace(
            "{\"port\": 80}",
            &format!("{{\"port\": 80, \"nodePort\": {port}}}"),
        );
    let out = s.kubectl_stdin(&["create", "-f", "-"], &clash);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("provided port is already allocated"), "{err}");
}

crate::harness::on_both_backends!(
    default_service_cidr_is_ready,
    ip_addresses_follow_services,
    other_service_cidrs_extend_the_ranges;
    backend: restart_keeps_allocations
);
