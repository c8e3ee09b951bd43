//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/networking` (EndpointSlice, IngressClass, Ingress,
//! IPAddress, NetworkPolicy, ServiceCIDR, PodDisruptionBudget) and of
//! Services: what real kubectl prints, plus the raw Table's column
//! definitions.

use crate::harness::TestServer;
use crate::support::tables::{assert_row_then_age, raw_table, table};

const OBJECTS: &str = r#"
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc}
addressType: IPv4
ports:
- {name: http, port: 80, protocol: TCP}
- {name: metrics, protocol: TCP}
endpoints:
- addresses: [10.0.0.1]
- addresses: [10.0.0.2]
- addresses: [10.0.0.3]
- addresses: [10.0.0.4]
- addresses: [10.0.0.5]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx
  tls:
  - {hosts: [a.example.com], secretName: web-tls}
  rules:
  - host: a.example.com
  - host: b.example.com
  - host: c.example.com
  - host: d.example.com
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: plain}
spec:
  defaultBackend:
    service: {name: web, port: {number: 80}}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 192.0.2.77}
spec:
  parentRef: {group: "", resource: services, namespace: default, name: web}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: shop}
spec:
  podSelector:
    matchLabels: {tier: web, app: shop}
    matchExpressions:
    - {key: env, operator: In, values: [prod, dev]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: all}
spec:
  podSelector: {}
---
apiVersion: networking.k8s.io/v1
kind: ServiceCIDR
metadata: {name: extra}
spec:
  cidrs: [10.200.0.0/16, "fd00:200::/108"]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pct}
spec:
  maxUnavailable: 25%
  selector: {matchLabels: {app: pct}}
"#;

const SERVICES: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {tier: web, app: shop}
  ports:
  - {name: http, port: 80}
  - {name: dns, port: 53, protocol: UDP}
---
apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  externalIPs: [192.0.2.5, 192.0.2.6]
  ports:
  - {port: 80, nodePort: 30080}
---
apiVersion: v1
kind: Service
metadata: {name: lb}
spec:
  type: LoadBalancer
  ports:
  - {port: 443, nodePort: 30443}
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: db.example.com
---
apiVersion: v1
kind: Service
metadata: {name: headless}
spec:
  clusterIP: None
  ports:
  - {port: 9000}
"#;

fn patch_status(s: &TestServer, kind: &str, name: &str, status: &str) {
    s.ok(&[
        "patch",
        kind,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ]);
}

#[test]
fn networking_and_policy_kinds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(OBJECTS);
    patch_status(
        &s,
        "ingress",
        "web",
        r#"{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.10"},{"hostname":"lb.example.com"},{"ip":"192.0.2.10"}]}}}"#,
    );

    let (header, row) = table(&s, &["endpointslices", "web-abc"]);
    assert_eq!(header, ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]);
    assert_row_then_age(
        &row,
        &[
            "web-abc",
            "IPv4",
            "80,metrics",
            "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...",
        ],
    );

    let (header, row) = table(&s, &["ingressclasses", "nginx"]);
    assert_eq!(header, ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]);
    assert_row_then_age(
        &row,
        &[
            "nginx",
            "k8s.io/ingress-nginx",
            "IngressParameters.k8s.example.com/external-lb",
        ],
    );

    let (header, row) = table(&s, &["ingresses", "web", "-o", "wide"]);
    assert_eq!(
        header,
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    );
    assert_row_then_age(
        &row,
        &[
            "web",
            "nginx",
            "a.example.com,b.example.com,c.example.com + 1 more...",
            "192.0.2.10,lb.example.com",
            "80, 443",
        ],
    );
    // No address yet: kubectl leaves the cell blank.
    let (_, row) = table(&s, &["ingresses", "plain"]);
    assert_row_then_age(&row, &["plain", "<none>", "*", "80"]);

    // Upstream declares no Age column for IPAddresses.
    let (header, row) = table(&s, &["ipaddresses", "192.0.2.77"]);
    assert_eq!(header, ["NAME", "PARENTREF"]);
    assert_eq!(row, ["192.0.2.77", "services/default/web"]);

    let (header, row) = table(&s, &["networkpolicies", "shop"]);
    assert_eq!(header, ["NAME", "POD-SELECTOR", "AGE"]);
    assert_row_then_age(&row, &["shop", "app=shop,env in (dev,prod),tier=web"]);
    let (_, row) = table(&s, &["netpol", "all"]);
    assert_row_then_age(&row, &["all", "<none>"]);

    let (header, row) = table(&s, &["servicecidrs", "extra"]);
    assert_eq!(header, ["NAME", "CIDRS", "AGE"]);
    assert_row_then_age(&row, &["extra", "10.200.0.0/16,fd00:200::/108"]);

    let (header, row) = table(&s, &["pdb", "web", "-o", "wide"]);
    assert_eq!(
        header,
        [
            "NAME",
            "MIN AVAILABLE",
            "MAX UNAVAILABLE",
            "ALLOWED DISRUPTIONS",
            "AGE"
        ]
    );
    assert_row_then_age(&row, &["web", "2", "N/A", "0"]);
    let (_, row) = table(&s, &["pdb", "pct"]);
    assert_row_then_age(&row, &["pct", "N/A", "25%", "0"]);

    // The raw Table: definitions as upstream's, and IPAddress rows with the
    // undeclared age cell.
    let pdbs = raw_table(
        &s,
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    );
    let defs = &pdbs["columnDefinitions"];
    assert_eq!(defs[0]["format"], "name", "{pdbs}");
    assert_eq!(defs[3]["name"], "Allowed Disruptions");
    assert_eq!(defs[3]["type"], "integer");
    assert_eq!(defs[3]["priority"], 0);
    assert_eq!(
        defs[3]["description"],
        "Calculated number of pods that may be disrupted at this time."
    );
    let ips = raw_table(&s, "/apis/networking.k8s.io/v1/ipaddresses/192.0.2.77");
    assert_eq!(ips["columnDefinitions"].as_array().map(Vec::len), Some(2));
    assert_eq!(ips["rows"][0]["cells"].as_array().map(Vec::len), Some(3));
}

#[test]
fn services_print_type_ips_ports_and_selector() {
    let s = TestServer::start();
    s.apply_yaml(SERVICES);

    let (header, row) = table(&s, &["services", "web", "-o", "wide"]);
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    let cluster_ip: std::net::IpAddr = row[2].parse().expect("an allocated cluster IP");
    assert!(!cluster_ip.is_unspecified());
    assert_eq!(row[..2], ["web", "ClusterIP"]);
    assert_eq!(row[3..5], ["<none>", "80/TCP,53/UDP"]);
    assert_eq!(row[6], "app=shop,tier=web");

    let (_, row) = table(&s, &["services", "np"]);
    assert_eq!(row[..2], ["np", "NodePort"]);
    assert_eq!(row[3..5], ["192.0.2.5,192.0.2.6", "80:30080/TCP"]);

    let (_, row) = table(&s, &["services", "lb"]);
    assert_eq!(row[3..5], ["<pending>", "443:30443/TCP"]);
    patch_status(
        &s,
        "service",
        "lb",
        r#"{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.9"},{"hostname":"a-very-long-load-balancer.example.com"}]}}}"#,
    );
    // The server sends the wide (untruncated) addresses to every client.
    let (_, row) = table(&s, &["services", "lb"]);
    assert_eq!(row[3], "192.0.2.9,a-very-long-load-balancer.example.com");

    let (_, row) = table(&s, &["services", "ext", "-o", "wide"]);
    assert_row_then_age(
        &row[..row.len() - 1],
        &["ext", "ExternalName", "<none>", "db.example.com", "<none>"],
    );
    assert_eq!(row.last().map(String::as_str), Some("<none>"));

    let (_, row) = table(&s, &["services", "headless"]);
    assert_eq!(row[1..5], ["ClusterIP", "None", "<none>", "9000/TCP"]);

    let svcs = raw_table(&s, "/api/v1/namespaces/default/services/web");
    let defs = svcs["columnDefinitions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let selector = defs.last().cloned().unwrap_or_default();
    assert_eq!(selector["name"], "Selector", "{svcs}");
    assert_eq!(selector["priority"], 1);
    assert!(selector["description"]
        .as_str()
        .is_some_and(|d| d.starts_with("Route service traffic to pods")));
    assert_eq!(svcs["rows"][0]["cells"][6], "app=shop,tier=web");
}
