//! The aggregator in front of an extension API server: a second instance
//! of this binary, trusting the first one's generated front-proxy CA
//! (`--requestheader-client-ca-file`, `front-proxy-client`), serves a CRD
//! group the first one does not have, reached through an `ExternalName`
//! Service on loopback. Requests answer 503 until the APIService is
//! available; then kubectl lists, creates and watches the remote kind
//! through the aggregator, discovery lists it, and the backend sees the
//! proxied user (its own 403 names that user).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::harness::{Backend, TestServer};
use crate::support::crds::crd;
use crate::support::http::admin_curl;

pub(crate) fn eventually(what: &str, check: impl FnMut() -> bool) {
    eventually_within(Duration::from_secs(30), what, check);
}

pub(crate) fn eventually_within(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `v1.example.com` APIService's Available condition.
fn available(s: &TestServer) -> (String, String, String) {
    available_of(s, "v1.example.com")
}

/// The APIService `name`'s Available condition: status, reason, message.
pub(crate) fn available_of(s: &TestServer, name: &str) -> (String, String, String) {
    let path = r#"jsonpath={range .status.conditions[?(@.type=="Available")]}{.status}|{.reason}|{.message}{end}"#;
    let out = s.ok(&["get", "apiservice", name, "-o", path]);
    let mut parts = out.splitn(3, '|').map(str::to_owned);
    let mut next = || parts.next().unwrap_or_default();
    (next(), next(), next())
}

/// Code and body of an admin GET through `s`.
pub(crate) fn get(s: &TestServer, path: &str) -> (u16, String) {
    let out = admin_curl(s)
        .args(["--max-time", "10", "-w", "\n%{http_code}"])
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// The `example.com/v1` entry of the aggregator's aggregated discovery.
fn aggregated_entry(s: &TestServer) -> Option<serde_json::Value> {
    let accept = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let out = admin_curl(s)
        .args(["--max-time", "10", "-H", accept])
        .arg(format!("https://127.0.0.1:{}/apis", s.port))
        .output()
        .ok()?;
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let group = list["items"]
        .as_array()?
        .iter()
        .find(|g| g["metadata"]["name"] == "example.com")?;
    let versions = group["versions"].as_array()?;
    versions.iter().find(|v| v["version"] == "v1").cloned()
}

/// Whether the aggregator's `/metrics` has `line`.
fn has_metric(s: &TestServer, line: &str) -> bool {
    get(s, "/metrics").1.lines().any(|l| l == line)
}

pub(crate) fn unused_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("address").port()
}

/// The `ext` Service (`localhost`) and the `v1.example.com` APIService
/// on `port`.
pub(crate) fn registration(port: u16) -> String {
    registration_of("example.com", "ext", port)
}

/// An `ExternalName` Service `service` (`localhost`) and the APIService
/// of `group`/v1 it serves on `port` (not verified: the backends' serving
/// certificates are their own).
pub(crate) fn registration_of(group: &str, service: &str, port: u16) -> String {
    format!(
        "apiVersion: v1
kind: Service
metadata: {{name: {service}, namespace: default}}
spec: {{type: ExternalName, externalName: localhost}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: v1.{group}}}
spec:
  group: {group}
  version: v1
  service: {{namespace: default, name: {service}, port: {port}}}
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
"
    )
}

/// Starts the extension API server trusting `front`'s front proxy.
fn extension_server(front: &TestServer) -> TestServer {
    extension_server_with(front, &[])
}

/// Like [`extension_server`], with more flags.
pub(crate) fn extension_server_with(front: &TestServer, extra: &[&str]) -> TestServer {
    let ca = front.dir.path().join("pki/front-proxy-ca.crt");
    let ca = format!("--requestheader-client-ca-file={}", ca.display());
    let mut args = vec![
        ca.as_str(),
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    ];
    args.extend_from_slice(extra);
    let backend = TestServer::start_with(&args);
    backend.apply_yaml(&crd(
        "widgets",
        "Widget",
        "Namespaced",
        " {type: object, x-kubernetes-preserve-unknown-fields: true}",
    ));
    eventually("the backend serves widgets", || {
        backend.kubectl(&["get", "widgets"]).status.success()
    });
    backend
}

fn a_remote_api_service_is_proxied_once_available(backend_kind: Backend) {
    let front = backend_kind.start();
    front.apply_yaml(&registration(unused_port()));
    eventually("the APIService fails its discovery check", || {
        let (status, reason, _) = available(&front);
        status == "False" && reason == "FailedDiscoveryCheck"
    });
    let (_, _, message) = available(&front);
    assert!(
        message.starts_with("failing or missing response from https://localhost:"),
        "{message}"
    );
    assert_eq!(
        get(&front, "/apis/example.com/v1/widgets"),
        (503, "service unavailable\n".to_owned())
    );

    let backend = extension_server(&front);
    let patch = format!(r#"{{"spec":{{"service":{{"port":{}}}}}}}"#, backend.port);
    front.ok(&[
        "patch",
        "apiservice",
        "v1.example.com",
        "--type=merge",
        "-p",
        &patch,
    ]);
    eventually("the APIService becomes available", || {
        available(&front) == ("True".into(), "Passed".into(), "all checks passed".into())
    });
    for name in ["v1.example.com", "v1.", "v1.apps"] {
        let line = format!(r#"aggregator_unavailable_apiservice{{name="{name}"}} 0"#);
        eventually(&line, || has_metric(&front, &line));
    }

    front.apply_yaml("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nsize: 3\n");
    assert_eq!(
        backend.ok(&["get", "widget", "w1", "-o", "jsonpath={.size}"]),
        "3"
    );
    eventually("discovery lists the remote kind", || {
        front
            .ok(&["api-resources", "--api-group=example.com"])
            .contains("Widget")
    });
    // The backend's OpenAPI joins the aggregator's: v3 for kubectl explain,
    // v2 for older clients.
    eventually("kubectl explain reads the remote kind", || {
        let out = front.kubectl(&["explain", "widgets"]);
        let text = String::from_utf8_lossy(&out.stdout);
        out.status.success() && text.contains("Widget") && text.contains("example.com")
    });
    let (_, v2) = get(&front, "/openapi/v2");
    assert!(
        v2.contains(r#""/apis/example.com/v1/namespaces/{namespace}/widgets""#)
            && v2.contains(r#""com.example.v1.Widget""#),
        "/openapi/v2 lacks the remote kind"
    );
    eventually("aggregated discovery has the backend's widgets", || {
        aggregated_entry(&front).is_some_and(|v| {
            v["freshness"] == "Current" && v["resources"][0]["resource"] == "widgets"
        })
    });
    let listed = front.ok(&["get", "widgets", "-o", "name"]);
    assert_eq!(listed.trim(), "widget.example.com/w1");
    let (code, events) = get(
        &front,
        "/apis/example.com/v1/namespaces/default/widgets?watch=1&timeoutSeconds=1",
    );
    assert_eq!(code, 200, "{events}");
    assert!(
        events.contains(r#""type":"ADDED""#) && events.contains(r#""name":"w1""#),
        "{events}"
    );

    // The backend authorizes the proxied user, not the aggregator.
    front.apply_yaml(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-widgets}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
",
    );
    let alice = front.client_cert("alice", "developers");
    let out = front.kubectl_as_cert(
        &alice,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"User \"alice\" cannot list resource \"widgets\" in API group \"example.com\""#
        ) || stderr
            .contains(r#"User "alice" cannot list resource "widgets" in API group "example.com""#),
        "{stderr}"
    );

    // Without its backend the group answers 503 again, and the next check
    // (here on a change of the Service) marks the APIService unavailable.
    drop(backend);
    assert_eq!(get(&front, "/apis/example.com/v1/widgets").0, 503);
    front.ok(&["annotate", "service", "ext", "checked=again"]);
    eventually("the APIService becomes unavailable", || {
        available(&front).1 == "FailedDiscoveryCheck"
    });
    // Discovery keeps the group version, stale and without resources.
    eventually("aggregated discovery marks it stale", || {
        aggregated_entry(&front)
            .is_some_and(|v| v["freshness"] == "Stale" && v.get("resources").is_none())
    });
    // Turning unavailable after being available is counted, by reason.
    eventually("the metrics count it unavailable", || {
        has_metric(
            &front,
            r#"aggregator_unavailable_apiservice_total{name="v1.example.com",reason="FailedDiscoveryCheck"} 1"#,
        ) && has_metric(
            &front,
            r#"aggregator_unavailable_apiservice{name="v1.example.com"} 1"#,
        )
    });
}

crate::harness::on_both_backends!(backend: a_remote_api_service_is_proxied_once_available);
