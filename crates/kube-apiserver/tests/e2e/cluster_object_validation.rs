//! Create validation of the networking, discovery, policy, scheduling,
//! coordination and node kinds through kubectl and a raw request: the bad
//! objects users write are refused with upstream's 422 messages, and
//! realistic ones are accepted.

use serde_json::json;

use crate::harness::TestServer;
use crate::pod_spec_validation::{assert_has, refused};
use crate::support::http::request;

const BAD: &[(&str, &[&str])] = &[
    (
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: np}\nspec:\n  podSelector: {matchLabels: {\"a b\": x}}\n  ingress: [{ports: [{port: 70000}]}]\n",
        &[
            "The NetworkPolicy \"np\" is invalid:",
            "spec.podSelector.matchLabels: Invalid value: \"a b\": name part must consist of alphanumeric characters",
            "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ],
    ),
    (
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: ing}\nspec: {}\n",
        &["The Ingress \"ing\" is invalid: spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"],
    ),
    (
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: two-v4}\nspec: {cidrs: [10.96.0.0/24, 10.97.0.0/24]}\n",
        &["The ServiceCIDR \"two-v4\" is invalid: spec.cidrs: Invalid value: [\"10.96.0.0/24\",\"10.97.0.0/24\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"],
    ),
    (
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: es}\naddressType: IPv4\nendpoints: [{addresses: [not-an-ip]}]\n",
        &["The EndpointSlice \"es\" is invalid: endpoints[0].addresses[0]: Invalid value: \"not-an-ip\": must be a valid IPv4 address"],
    ),
    (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: too-high}\nvalue: 2000000001\n",
        &["The PriorityClass \"too-high\" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
    ),
    (
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l}\nspec: {leaseDurationSeconds: -1}\n",
        &["The Lease \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0"],
    ),
    (
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: rc}\nhandler: Run_C\n",
        &["The RuntimeClass \"rc\" is invalid: handler: Invalid value: \"Run_C\": a lowercase RFC 1123 label"],
    ),
];

const GOOD: &str = r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}], ports: [{port: 5432, endPort: 5440}]}]
  policyTypes: [Ingress]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules:
  - host: "*.example.com"
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 50%, selector: {matchLabels: {app: web}}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1}
addressType: IPv4
endpoints: [{addresses: [10.1.2.3]}]
ports: [{name: http, port: 80}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000000
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock}
spec: {holderIdentity: me, leaseDurationSeconds: 15}
"#;

#[test]
fn bad_cluster_objects_are_refused_and_good_ones_created() {
    let s = TestServer::start();
    for (yaml, lines) in BAD {
        assert_has(&refused(&s, yaml), lines);
    }
    let out = s.kubectl_stdin(&["create", "-f", "-"], GOOD);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let pdb = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "both"},
        "spec": {"minAvailable": 1, "maxUnavailable": "120%"},
    });
    let path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let body = pdb.to_string();
    let answer = request(
        &s,
        "POST",
        path,
        &["Content-Type: application/json"],
        Some(&body),
    );
    let both = "Invalid value: {\"MinAvailable\":1,\"Selector\":null,\"MaxUnavailable\":\"120%\",\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set";
    let percent = "Invalid value: \"120%\": must not be greater than 100%";
    assert_eq!(answer.code, 422, "{}", answer.body);
    assert_eq!(
        answer.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("PodDisruptionBudget.policy \"both\" is invalid: [spec: {both}, spec.maxUnavailable: {percent}]"),
            "reason": "Invalid",
            "details": {
                "name": "both", "group": "policy", "kind": "PodDisruptionBudget",
                "causes": [
                    {"reason": "FieldValueInvalid", "message": both, "field": "spec"},
                    {"reason": "FieldValueInvalid", "message": percent, "field": "spec.maxUnavailable"},
                ],
            },
            "code": 422,
        })
    );
}
