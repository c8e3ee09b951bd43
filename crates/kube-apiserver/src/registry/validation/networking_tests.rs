//! Table tests of the networking.k8s.io validation against upstream's
//! messages.

use serde_json::{json, Value};

use super::*;

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn netpol(spec: Value) -> Vec<String> {
    messages(validate_network_policy(&json!({ "spec": spec })))
}

fn ingress(spec: Value) -> Vec<String> {
    messages(validate_ingress(&json!({ "spec": spec })))
}

#[test]
fn valid_network_policy_passes() {
    let spec = json!({
        "podSelector": {"matchLabels": {"app": "db"}},
        "ingress": [{"ports": [{"protocol": "TCP", "port": 80, "endPort": 90}, {"port": "http"}],
                     "from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
                              {"namespaceSelector": {}, "podSelector": {}}]}],
        "policyTypes": ["Ingress", "Egress"],
    });
    assert!(netpol(spec).is_empty());
}

#[test]
fn network_policy_labels_ports_and_peers() {
    let spec = json!({
        "podSelector": {"matchLabels": {"a b": "x"}},
        "ingress": [{"ports": [{"port": 70000}, {"port": "http", "endPort": 5}, {"endPort": 5},
                               {"port": 90, "endPort": 80}, {"protocol": "ICMP"}],
                     "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}],
        "egress": [{"to": [{"ipBlock": {"cidr": ""}}, {"ipBlock": {"cidr": "nope"}},
                           {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/8", "11.0.0.0/24"]}}]}],
    });
    assert_eq!(
        netpol(spec),
        [
            "spec.podSelector.matchLabels: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.ingress[0].ports[1].endPort: Invalid value: 5: may not be specified when `port` is non-numeric",
            "spec.ingress[0].ports[2].endPort: Invalid value: 5: may not be specified when `port` is not specified",
            "spec.ingress[0].ports[3].endPort: Invalid value: 80: must be greater than or equal to `port`",
            "spec.ingress[0].ports[4].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.ingress[0].from[0]: Required value: must specify a peer",
            "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
            "spec.egress[0].to[0].ipBlock.cidr: Required value",
            "spec.egress[0].to[1].ipBlock.cidr: Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            "spec.egress[0].to[2].ipBlock.except[0]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`",
            "spec.egress[0].to[2].ipBlock.except[1]: Invalid value: \"11.0.0.0/24\": must be a strict subset of `cidr`",
        ]
    );
}

#[test]
fn network_policy_types() {
    assert_eq!(
        netpol(json!({"policyTypes": ["Ingress", "Sideways"]})),
        ["spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\""]
    );
    assert_eq!(
        netpol(json!({"policyTypes": ["Ingress", "Egress", "Ingress"]})),
        ["spec.policyTypes: Invalid value: [\"Ingress\",\"Egress\",\"Ingress\"]: may not specify more than two policyTypes"]
    );
}

#[test]
fn ingress_needs_backend_or_rules() {
    assert_eq!(
        ingress(json!({})),
        ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
    );
}

#[test]
fn valid_ingress_passes() {
    let spec = json!({
        "ingressClassName": "nginx",
        "rules": [{"host": "*.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
            {"pathType": "ImplementationSpecific", "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "b"}}},
        ]}}],
        "tls": [{"hosts": ["example.com"], "secretName": "tls"}],
    });
    assert!(ingress(spec).is_empty());
}

#[test]
fn ingress_rules_paths_and_backends() {
    let spec = json!({
        "defaultBackend": {"service": {"name": "Web", "port": {}}},
        "rules": [
            {"host": "1.2.3.4", "http": {"paths": []}},
            {"host": "*.*.example.com", "http": {"paths": [
                {"path": "a", "backend": {}},
                {"path": "a//b/..", "pathType": "Exact", "backend": {}},
                {"path": "/", "pathType": "Sometimes", "backend": {"service": {"name": "web", "port": {"name": "http", "number": 80}}}},
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 70000}}, "resource": {"kind": "K", "name": "n"}}},
            ]}},
        ],
        "tls": [{"hosts": ["Bad_Host"]}],
    });
    assert_eq!(
        ingress(spec),
        [
            "spec.defaultBackend.service.name: Invalid value: \"Web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.defaultBackend: Required value: port name or number is required",
            "spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address",
            "spec.rules[0].http.paths: Required value",
            "spec.rules[1].host: Invalid value: \"*.*.example.com\": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.rules[1].http.paths[0].pathType: Required value: pathType must be specified",
            "spec.rules[1].http.paths[1].path: Invalid value: \"a//b/..\": must be an absolute path",
            "spec.rules[1].http.paths[1].path: Invalid value: \"a//b/..\": must not contain '//'",
            "spec.rules[1].http.paths[1].path: Invalid value: \"a//b/..\": cannot end with '/..'",
            "spec.rules[1].http.paths[1].backend: Invalid value: \"\": resource or service backend is required",
            "spec.rules[1].http.paths[2].pathType: Unsupported value: \"Sometimes\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"",
            "spec.rules[1].http.paths[2].backend: Invalid value: \"\": cannot set both port name & port number",
            "spec.rules[1].http.paths[3].backend: Invalid value: \"\": cannot set both resource and service backends",
            "spec.tls[0].hosts[0]: Invalid value: \"Bad_Host\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ]
    );
}

#[test]
fn ingress_class_annotation_must_match_on_create() {
    let obj = json!({
        "metadata": {"annotations": {"kubernetes.io/ingress.class": "a"}},
        "spec": {"ingressClassName": "b"},
    });
    assert_eq!(
        messages(validate_ingress_create(&obj)),
        ["annotations.kubernetes.io/ingress.class: Invalid value: \"a\": must match `ingressClassName` when both are specified"]
    );
}

#[test]
fn ingress_class_controller_and_parameters() {
    let class = |spec: Value| messages(validate_ingress_class(&json!({ "spec": spec })));
    assert!(class(json!({"controller": "example.com/ingress"})).is_empty());
    assert_eq!(class(json!({})), ["spec.controller: Required value"]);
    assert_eq!(
        class(json!({"controller": "nginx", "parameters": {"kind": "K", "name": "n", "scope": "Cluster", "namespace": "x"}})),
        [
            "spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")",
            "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'",
        ]
    );
    assert_eq!(
        class(json!({"controller": "a.io/b", "parameters": {"scope": "Namespace"}})),
        [
            "spec.parameters.kind: Required value",
            "spec.parameters.name: Required value",
            "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
        ]
    );
}

#[test]
fn service_cidr_ranges() {
    let cidr = |cidrs: Value| {
        messages(validate_service_cidr_spec(
            &json!({"spec": {"cidrs": cidrs}}),
        ))
    };
    assert!(cidr(json!(["10.0.0.0/24", "2001:db8::/64"])).is_empty());
    assert_eq!(
        cidr(json!([])),
        ["spec.cidrs: Required value: at least one CIDR required"]
    );
    assert_eq!(
        cidr(json!(["10.0.0.0/24", "10.1.0.0/24"])),
        ["spec.cidrs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
    );
    assert_eq!(
        cidr(json!(["10.0.0.0/24", "10.1.0.0/24", "10.2.0.0/24"])),
        ["spec.cidrs: Invalid value: {\"CIDRs\":[\"10.0.0.0/24\",\"10.1.0.0/24\",\"10.2.0.0/24\"]}: may only hold up to 2 values"]
    );
    assert_eq!(
        cidr(json!(["10.0.0.1/24"])),
        ["spec.cidrs[0]: Invalid value: \"10.0.0.1/24\": must not have bits set beyond the prefix length"]
    );
}

#[test]
fn service_cidr_gaining_a_second_range_is_validated() {
    let old = json!({"spec": {"cidrs": ["10.0.0.0/24"]}});
    let new = json!({"spec": {"cidrs": ["10.0.0.0/24", "10.9.0.0/24"]}});
    assert_eq!(
        messages(super::super::update_classes::validate_service_cidr_update(&new, &old)),
        ["spec.cidrs: Invalid value: [\"10.0.0.0/24\",\"10.9.0.0/24\"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
    );
}

#[test]
fn ip_address_names_and_parents() {
    assert!(ip_address_name("10.0.0.1", false).is_empty());
    assert_eq!(
        ip_address_name("2001:db8:0::1", false),
        ["must be in canonical form (\"2001:db8::1\")"]
    );
    assert_eq!(
        messages(validate_ip_address(&json!({"spec": {}}))),
        ["spec.parentRef: Required value"]
    );
    assert_eq!(
        messages(validate_ip_address(&json!({"spec": {"parentRef": {"group": "A", "name": "a/b"}}}))),
        [
            "spec.parentRef.group: Invalid value: \"A\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.parentRef.resource: Required value",
            "spec.parentRef.name: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
}
