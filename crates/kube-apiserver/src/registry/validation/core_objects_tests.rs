use serde_json::json;

use super::*;

/// Each error as upstream's `field.Error.Error()` prints it.
fn msgs(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter()
        .map(|e| format!("{}: {}", e.field, e.body()))
        .collect()
}

const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

#[test]
fn config_map_keys_duplicates_and_size() {
    assert!(
        validate_config_map(&json!({"data": {"a.b": "x"}, "binaryData": {"c": "eA=="}})).is_empty()
    );
    let bad = json!({"data": {"a b": "x", "k": "y"}, "binaryData": {"k": "eA=="}});
    assert_eq!(
        msgs(validate_config_map(&bad)),
        [
            format!("data[a b]: Invalid value: \"a b\": {KEY_MSG}"),
            "data[k]: Invalid value: \"k\": duplicate of key present in binaryData".to_owned(),
        ]
    );
    let big = json!({"data": {"a": "x".repeat(MAX_SECRET_SIZE), "b": "y"}});
    assert_eq!(
        msgs(validate_config_map(&big)),
        [": Too long: may not be more than 1048576 bytes"]
    );
}

#[test]
fn secret_keys_size_and_types() {
    let bad = json!({"type": "Opaque", "data": {"a b": "eA=="}});
    assert_eq!(
        msgs(validate_secret(&bad)),
        [format!("data[a b]: Invalid value: \"a b\": {KEY_MSG}")]
    );
    let cases = [
        (
            json!({"type": "kubernetes.io/service-account-token"}),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
        ),
        (
            json!({"type": "kubernetes.io/dockerconfigjson", "data": {}}),
            vec!["data[.dockerconfigjson]: Required value"],
        ),
        (
            // "bm90IGpzb24=" is `not json`.
            json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": "bm90IGpzb24="}}),
            vec!["data[.dockercfg]: Invalid value: \"<secret contents redacted>\": invalid character 'o' in literal null (expecting 'u')"],
        ),
        (
            json!({"type": "kubernetes.io/basic-auth", "data": {}}),
            vec!["data[username]: Required value", "data[password]: Required value"],
        ),
        (
            json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
            vec!["data[ssh-privatekey]: Required value"],
        ),
        (
            json!({"type": "kubernetes.io/tls", "data": {"tls.key": ""}}),
            vec!["data[tls.crt]: Required value"],
        ),
    ];
    for (secret, want) in cases {
        assert_eq!(msgs(validate_secret(&secret)), want, "{secret}");
    }
    let ok = json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}});
    assert!(validate_secret(&ok).is_empty());
    let docker = json!({"type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}});
    assert!(validate_secret(&docker).is_empty());
}

#[test]
fn docker_config_errors_read_as_go_json_errors() {
    let check = |raw: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
        docker_config_json(&Path::new("d"), &json!(encoded)).map(|e| e.detail)
    };
    assert_eq!(check("").as_deref(), Some("unexpected end of JSON input"));
    assert_eq!(
        check("{\"a\":"),
        Some("unexpected end of JSON input".to_owned())
    );
    assert_eq!(
        check("[1]").as_deref(),
        Some("json: cannot unmarshal array into Go value of type map[string]interface {}")
    );
    assert_eq!(
        check("x").as_deref(),
        Some("invalid character 'x' looking for beginning of value")
    );
    assert_eq!(check("null"), None);
}

#[test]
fn endpoints_addresses_ports_and_protocols() {
    let eps = json!({"subsets": [
        {"addresses": [{"ip": "nope"}], "ports": [{"port": 70000, "protocol": "TCP"}]},
        {"ports": [{"name": "a", "port": 80, "protocol": "ICMP"}, {"port": 81, "protocol": "TCP"}]},
        {"notReadyAddresses": [{"ip": "169.254.0.1", "hostname": "Bad_Host"}]},
    ]});
    assert_eq!(
        msgs(validate_endpoints(&eps)),
        [
            "subsets[0].addresses[0].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "subsets[0].addresses[0].ip: Invalid value: \"nope\": must be a valid IP address",
            "subsets[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
            "subsets[1].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "subsets[1].ports[1].name: Required value",
            "subsets[2].notReadyAddresses[0].hostname: Invalid value: \"Bad_Host\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "subsets[2].notReadyAddresses[0].ip: Invalid value: \"169.254.0.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ]
    );
    let ok = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "n1"}],
        "ports": [{"port": 80, "protocol": "TCP", "appProtocol": "http"}]}]});
    assert!(validate_endpoints(&ok).is_empty());
}

#[test]
fn special_ips_are_refused() {
    let p = Path::new("ip");
    let detail = |ip: &str| {
        non_special_ip(&p, ip)
            .into_iter()
            .map(|e| e.detail)
            .collect::<Vec<_>>()
    };
    assert_eq!(detail("0.0.0.0"), ["may not be unspecified (0.0.0.0)"]);
    assert_eq!(detail("::"), ["may not be unspecified (::)"]);
    assert_eq!(
        detail("169.254.1.1"),
        ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    );
    assert_eq!(
        detail("fe80::1"),
        ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    );
    assert_eq!(
        detail("224.0.0.5"),
        ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
    );
    assert_eq!(
        detail("::ffff:127.0.0.1"),
        ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]
    );
    assert!(detail("10.1.2.3").is_empty());
}

#[test]
fn namespace_finalizers() {
    let ns = json!({"spec": {"finalizers": ["kubernetes", "example.com/f", "custom", "a b/c"]}});
    let got = msgs(validate_namespace(&ns));
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[0],
        "spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
    );
    assert!(got[1].starts_with(
        "spec.finalizers: Invalid value: \"a b/c\": prefix part a lowercase RFC 1123 subdomain"
    ));
}

#[test]
fn legacy_events_match_their_namespace() {
    let event = |ns: &str, involved: &str| json!({"metadata": {"namespace": ns}, "involvedObject": {"namespace": involved}});
    assert!(validate_event(&event("default", "")).is_empty());
    assert!(validate_event(&event("team", "team")).is_empty());
    assert_eq!(
        msgs(validate_event(&event("team", "other"))),
        ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
    );
    assert_eq!(
        msgs(validate_event(&event("team", ""))),
        ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
    );
}

#[test]
fn new_events_need_their_reporter() {
    let mut event = json!({"metadata": {"namespace": "default"}, "involvedObject": {},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "bad controller!",
        "message": "m".repeat(1025)});
    assert_eq!(
        msgs(validate_event(&event)),
        [
            "reportingController: Invalid value: \"bad controller!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "reportingInstance: Required value",
            "action: Required value",
            "reason: Required value",
            "message: Invalid value: \"\": can have at most 1024 characters",
        ]
    );
    event["metadata"]["namespace"] = json!("team");
    let got = msgs(validate_event(&event));
    assert_eq!(
        got[0],
        "involvedObject.namespace: Invalid value: \"\": does not match event.namespace"
    );
}

#[test]
fn events_v1_creates_are_strict() {
    let event = json!({"metadata": {"namespace": "default"}, "regarding": {},
        "type": "Odd", "series": {"count": 1}, "deprecatedCount": 3,
        "deprecatedSource": {"component": "x"}});
    assert_eq!(
        msgs(validate_event_v1_create(&event)),
        [
            "series.count: Invalid value: \"\": should be at least 2",
            "series.lastObservedTime: Required value",
            "eventTime: Required value",
            "type: Invalid value: \"\": has invalid value: Odd",
            "count: Invalid value: \"\": needs to be unset",
            "source: Invalid value: \"\": needs to be unset",
        ]
    );
    let ok = json!({"metadata": {"namespace": "default"}, "regarding": {},
        "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal",
        "reportingController": "c", "reportingInstance": "i", "action": "a", "reason": "r"});
    assert!(validate_event_v1(&ok).is_empty());
    assert!(validate_event_v1_create(&ok).is_empty());
}
