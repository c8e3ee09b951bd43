//! `componentstatuses` (deprecated, still served): `kubectl get cs` probes
//! the scheduler and controller manager on their local ports and, on etcd,
//! the storage; deprecated resources answer with upstream's warning.

use crate::harness::{Backend, TestServer};

const CS_WARNING: &str = "Warning: v1 ComponentStatus is deprecated in v1.19+";

/// No scheduler or controller manager runs beside the test servers: both
/// are reported Unhealthy with the dial error, as upstream reports them.
fn local_components_unhealthy(s: &TestServer) {
    let out = s.kubectl(&["get", "componentstatuses"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(CS_WARNING), "{stderr}");
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    for (name, port) in [("controller-manager", 10257), ("scheduler", 10259)] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in {stdout}"));
        let refused = format!(
            "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        );
        // Something may listen on the port on a developer's machine.
        if !line.contains(" Healthy ") {
            assert!(
                line.contains("Unhealthy") && line.contains(&refused),
                "{line}"
            );
        }
    }
}

fn get_by_name_and_errors(s: &TestServer) {
    let json = s.ok(&["get", "cs", "scheduler", "-o", "json"]);
    let obj: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(obj["kind"], "ComponentStatus");
    assert_eq!(obj["apiVersion"], "v1");
    assert_eq!(obj["metadata"]["name"], "scheduler");
    assert_eq!(obj["conditions"][0]["type"], "Healthy");
    let err = s.fails(&["get", "cs", "nope"]);
    assert!(
        err.contains(
            "Error from server (InternalError): Internal error occurred: Component not found: nope"
        ),
        "{err}"
    );
    // Read-only: anything but get and list is refused.
    let err = s.fails(&["delete", "cs", "scheduler"]);
    assert!(err.contains("MethodNotAllowed"), "{err}");
    let names = s.ok(&[
        "get",
        "cs",
        "--field-selector",
        "metadata.name=scheduler",
        "-o",
        "name",
    ]);
    assert_eq!(names.trim(), "componentstatus/scheduler");
    let none = s.kubectl(&["get", "cs", "-l", "app=x", "-o", "name"]);
    assert!(none.status.success() && none.stdout.is_empty(), "{none:?}");
}

fn endpoints_are_deprecated(s: &TestServer) {
    let out = s.kubectl(&["get", "endpoints", "-n", "default", "kubernetes"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
        ),
        "{stderr}"
    );
    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    let series = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_requested_deprecated_apis{")
                && l.contains("resource=\"endpoints\"")
        })
        .unwrap_or_else(|| panic!("no deprecated-API series for endpoints"));
    assert!(
        series.contains("version=\"v1\"") && series.ends_with(" 1"),
        "{series}"
    );
    // EndpointSlices are not deprecated.
    let out = s.kubectl(&["get", "endpointslices", "-A"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
}

/// The storage is reported only when it is etcd, as `etcd-0`.
fn storage_component(backend: Backend) {
    let s = backend.start();
    let names = s.ok(&["get", "cs", "-o", "name"]);
    let etcd = names.lines().any(|l| l == "componentstatus/etcd-0");
    assert_eq!(etcd, backend == Backend::Etcd, "{names}");
    if etcd {
        let row = s.ok(&["get", "cs", "etcd-0", "--no-headers"]);
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells, ["etcd-0", "Healthy", "ok"]);
    }
}

crate::harness::on_both_backends!(
    local_components_unhealthy,
    get_by_name_and_errors,
    endpoints_are_deprecated;
    backend: storage_component
);
