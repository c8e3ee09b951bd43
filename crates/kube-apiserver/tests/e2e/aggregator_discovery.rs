//! Discovery ordered by the APIServices' priorities, as upstream's
//! aggregator orders it: `/apis` by `groupPriorityMinimum` then APIService
//! name, aggregated discovery by each group's highest
//! `groupPriorityMinimum` then group name, `apiregistration.k8s.io` first;
//! versions by `versionPriority`, then GA before beta. Remote APIServices
//! (their Service reaches nothing, so they are listed without resources)
//! take their places among the built-in groups, whose priorities are
//! upstream's fixed table; a changed priority moves its group; and every
//! rebuilt aggregated document counts in
//! `aggregator_discovery_aggregation_count_total`.

use serde_json::Value;

use crate::aggregator::{eventually, get, unused_port};
use crate::harness::TestServer;
use crate::support::http::admin_curl;

/// An APIService of `version.group` behind the Service `ext`.
fn api_service(group: &str, version: &str, min: i64, priority: i64, port: u16) -> String {
    format!(
        "apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {version}.{group}}}
spec:
  group: {group}
  version: {version}
  service: {{namespace: default, name: ext, port: {port}}}
  groupPriorityMinimum: {min}
  versionPriority: {priority}
  insecureSkipTLSVerify: true
"
    )
}

/// `/apis` as an APIGroupList: group names and their versions in order.
fn legacy_groups(s: &TestServer) -> Vec<(String, Vec<String>)> {
    let (code, body) = get(s, "/apis");
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).expect("an APIGroupList");
    let groups = list["groups"].as_array().cloned().unwrap_or_default();
    groups
        .iter()
        .map(|g| {
            let versions = g["versions"].as_array().cloned().unwrap_or_default();
            let versions: Vec<String> = versions
                .iter()
                .filter_map(|v| v["version"].as_str().map(str::to_owned))
                .collect();
            let preferred = g["preferredVersion"]["version"].as_str();
            assert_eq!(versions.first().map(String::as_str), preferred, "{g}");
            let name = g["name"].as_str().unwrap_or_default().to_owned();
            (name, versions)
        })
        .collect()
}

/// `/apis` as aggregated discovery: group names and their versions.
fn aggregated_groups(s: &TestServer) -> Vec<(String, Vec<String>)> {
    let accept = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let out = admin_curl(s)
        .args(["--max-time", "10", "-H", accept])
        .arg(format!("https://127.0.0.1:{}/apis", s.port))
        .output()
        .expect("curl runs");
    let list: Value = serde_json::from_slice(&out.stdout).expect("an APIGroupDiscoveryList");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|g| {
            let versions = g["versions"].as_array().cloned().unwrap_or_default();
            let versions = versions.iter().filter_map(|v| v["version"].as_str());
            let name = g["metadata"]["name"].as_str().unwrap_or_default();
            (name.to_owned(), versions.map(str::to_owned).collect())
        })
        .collect()
}

fn names(groups: &[(String, Vec<String>)]) -> Vec<&str> {
    groups.iter().map(|(g, _)| g.as_str()).collect()
}

/// `aggregator_discovery_aggregation_count_total`.
fn aggregations(s: &TestServer) -> u64 {
    let (_, text) = get(s, "/metrics");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("aggregator_discovery_aggregation_count_total "));
    line.and_then(|n| n.trim().parse().ok())
        .expect("the aggregation counter is exported")
}

/// The built-in groups in upstream's order (its priority table; at equal
/// priority by APIService name: `v1.admissionregistration.k8s.io` before
/// `v1.apiextensions.k8s.io`, `v1.discovery.k8s.io` before
/// `v1.resource.k8s.io`).
const BUILT_IN: [&str; 19] = [
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io",
];

fn discovery_follows_api_service_priorities(s: &TestServer) {
    let port = unused_port();
    s.apply_yaml(
        "apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: default}\nspec: {type: ExternalName, externalName: localhost}\n",
    );
    for (group, version, min, priority) in [
        ("high.example.com", "v1", 17900, 15),
        ("low.example.com", "v1", 100, 15),
        ("multi.example.com", "v1", 1000, 5),
        ("multi.example.com", "v2beta1", 1000, 20),
        ("multi.example.com", "v1alpha1", 1000, 20),
    ] {
        s.apply_yaml(&api_service(group, version, min, priority, port));
    }
    let mut expected = vec!["apiregistration.k8s.io", "high.example.com"];
    expected.extend(BUILT_IN);
    expected.extend(["multi.example.com", "low.example.com"]);
    let mut seen = (Vec::new(), Vec::new());
    let listed = || (legacy_groups(s), aggregated_groups(s));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        seen = listed();
        if names(&seen.0) == expected && names(&seen.1) == expected {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(names(&seen.0), expected, "/apis");
    assert_eq!(names(&seen.1), expected, "aggregated discovery");
    // Versions: priority 20 before 5; at equal priority beta before alpha.
    let multi = ["v2beta1", "v1alpha1", "v1"].map(str::to_owned).to_vec();
    for groups in [legacy_groups(s), aggregated_groups(s)] {
        let of = |name: &str| groups.iter().find(|(g, _)| g == name).map(|g| g.1.clone());
        assert_eq!(of("multi.example.com"), Some(multi.clone()));
        assert_eq!(
            of("autoscaling"),
            Some(vec!["v2".to_owned(), "v1".to_owned()])
        );
    }
    let (_, group) = get(s, "/apis/multi.example.com");
    let group: Value = serde_json::from_str(&group).expect("an APIGroup");
    assert_eq!(group["preferredVersion"]["version"], "v2beta1");

    // A raised priority moves the group, and the rebuilt aggregated
    // document is counted.
    let before = aggregations(s);
    s.ok(&[
        "patch",
        "apiservice",
        "v1.low.example.com",
        "--type=merge",
        "-p",
        r#"{"spec":{"groupPriorityMinimum":20000}}"#,
    ]);
    eventually("the raised group moves up", || {
        let expected = [
            "apiregistration.k8s.io",
            "low.example.com",
            "high.example.com",
        ];
        names(&legacy_groups(s))[..3] == expected && names(&aggregated_groups(s))[..3] == expected
    });
    assert!(aggregations(s) > before);
    // Served from the cache while nothing changes.
    let cached = aggregations(s);
    aggregated_groups(s);
    aggregated_groups(s);
    assert_eq!(aggregations(s), cached);
}

crate::harness::on_both_backends!(discovery_follows_api_service_priorities);
