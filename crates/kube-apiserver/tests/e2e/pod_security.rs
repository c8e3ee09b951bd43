//! The PodSecurity admission plugin through kubectl: namespace labels
//! select enforce (refusal with upstream's message), warn (kubectl prints
//! the warnings) and audit (audit event annotations); workloads are only
//! warned about; stricter enforce labels warn about existing pods; the
//! plugin's configuration file sets defaults and exemptions.

use std::path::Path;

use serde_json::Value;

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::warnings_of;

const BASELINE_PRIVILEGED: &str = "violates PodSecurity \"baseline:latest\": privileged";

/// The restricted violations of a pod with one plain container `c`.
fn restricted_detail(c: &str) -> String {
    format!(
        "allowPrivilegeEscalation != false (container \"{c}\" must set securityContext.allowPrivilegeEscalation=false), \
unrestricted capabilities (container \"{c}\" must set securityContext.capabilities.drop=[\"ALL\"]), \
runAsNonRoot != true (pod or container \"{c}\" must set securityContext.runAsNonRoot=true), \
seccompProfile (pod or container \"{c}\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    )
}

fn label(s: &TestServer, ns: &str, label: &str) -> String {
    warnings_of(s, &["label", "ns", ns, label, "--overwrite"])
}

/// Privileged pods need `--allow-privileged` to reach admission.
const ALLOW_PRIVILEGED: &str = "--allow-privileged=true";

fn enforce_refuses_violating_pods_and_invalid_labels(backend: Backend) {
    let s = &backend.start_with(&[ALLOW_PRIVILEGED]);
    s.ok(&["create", "namespace", "psa-b"]);
    label(s, "psa-b", "pod-security.kubernetes.io/enforce=baseline");
    let err = s.fails(&[
        "run",
        "priv",
        "-n",
        "psa-b",
        "--image=nginx",
        "--privileged",
    ]);
    assert!(
        err.contains(&format!(
            "Error from server (Forbidden): pods \"priv\" is forbidden: {BASELINE_PRIVILEGED} (container \"priv\" must not set securityContext.privileged=true)"
        )),
        "{err}"
    );
    s.fails(&["get", "pod", "priv", "-n", "psa-b"]);
    // A pod within the level is created, without warnings.
    let warnings = warnings_of(s, &["run", "plain", "-n", "psa-b", "--image=nginx"]);
    assert!(!warnings.contains("Warning"), "{warnings}");
    // Labels with unknown levels or versions are refused.
    let err = s.fails(&[
        "label",
        "ns",
        "psa-b",
        "pod-security.kubernetes.io/enforce=strict",
        "pod-security.kubernetes.io/warn-version=v2.0",
        "--overwrite",
    ]);
    // kubectl lists the causes of the 422 one per line.
    assert!(
        err.contains(
            "The Namespace \"psa-b\" is invalid: \n\
* metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted\n\
* metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"v2.0\": must be \"latest\" or \"v1.x\""
        ),
        "{err}"
    );
    let yaml = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: psa-bad\n  labels:\n    pod-security.kubernetes.io/audit: loud\n";
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: \"loud\""),
        "{err}"
    );
}

fn warn_prints_upstreams_warnings_and_ignores_insignificant_updates(s: &TestServer) {
    s.ok(&["create", "namespace", "psa-w"]);
    label(s, "psa-w", "pod-security.kubernetes.io/warn=restricted");
    let warnings = warnings_of(s, &["run", "web", "-n", "psa-w", "--image=nginx"]);
    assert!(
        warnings.contains(&format!(
            "Warning: would violate PodSecurity \"restricted:latest\": {}",
            restricted_detail("web")
        )),
        "{warnings}"
    );
    s.ok(&["get", "pod", "web", "-n", "psa-w"]);
    // Updates that do not change images are not evaluated again.
    let warnings = warnings_of(s, &["label", "pod", "web", "-n", "psa-w", "tier=front"]);
    assert!(!warnings.contains("PodSecurity"), "{warnings}");
    // A pinned older version evaluates that version's checks.
    label(s, "psa-w", "pod-security.kubernetes.io/warn-version=v1.21");
    let warnings = warnings_of(s, &["run", "old", "-n", "psa-w", "--image=nginx"]);
    assert!(
        warnings.contains(
            "would violate PodSecurity \"restricted:v1.21\": allowPrivilegeEscalation != false"
        ),
        "{warnings}"
    );
    assert!(
        !warnings.contains("unrestricted capabilities"),
        "{warnings}"
    );
}

fn workloads_in_an_enforcing_namespace_are_created_with_warnings(s: &TestServer) {
    s.ok(&["create", "namespace", "psa-r"]);
    label(s, "psa-r", "pod-security.kubernetes.io/enforce=restricted");
    let warnings = warnings_of(
        s,
        &[
            "create",
            "deployment",
            "web",
            "-n",
            "psa-r",
            "--image=nginx",
        ],
    );
    assert!(
        warnings.contains(&format!(
            "Warning: would violate PodSecurity \"restricted:latest\": {}",
            restricted_detail("nginx")
        )),
        "{warnings}"
    );
    s.ok(&["get", "deployment", "web", "-n", "psa-r"]);
    let warnings = warnings_of(
        s,
        &[
            "create",
            "cronjob",
            "tick",
            "-n",
            "psa-r",
            "--image=busybox",
            "--schedule=* * * * *",
        ],
    );
    assert!(
        warnings.contains("would violate PodSecurity \"restricted:latest\""),
        "{warnings}"
    );
    // The pods themselves are refused.
    let err = s.fails(&["run", "web", "-n", "psa-r", "--image=nginx"]);
    assert!(
        err.contains(&format!(
            "pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": {}",
            restricted_detail("web")
        )),
        "{err}"
    );
}

fn a_stricter_enforce_label_warns_about_existing_pods(backend: Backend) {
    let s = &backend.start_with(&[ALLOW_PRIVILEGED]);
    s.ok(&["create", "namespace", "psa-l"]);
    for name in ["a", "b"] {
        s.ok(&["run", name, "-n", "psa-l", "--image=nginx"]);
    }
    s.ok(&["run", "p", "-n", "psa-l", "--image=nginx", "--privileged"]);
    let warnings = label(s, "psa-l", "pod-security.kubernetes.io/enforce=baseline");
    assert!(
        warnings.contains(
            "Warning: existing pods in namespace \"psa-l\" violate the new PodSecurity enforce level \"baseline:latest\"\nWarning: p: privileged\n"
        ),
        "{warnings}"
    );
    let warnings = label(s, "psa-l", "pod-security.kubernetes.io/enforce=restricted");
    let plain = "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile";
    assert!(
        warnings.contains(&format!(
            "Warning: existing pods in namespace \"psa-l\" violate the new PodSecurity enforce level \"restricted:latest\"\n\
Warning: a (and 1 other pod): {plain}\nWarning: p: privileged, {plain}\n"
        )),
        "{warnings}"
    );
    // Relaxing the level checks nothing.
    let warnings = label(s, "psa-l", "pod-security.kubernetes.io/enforce=baseline");
    assert!(!warnings.contains("Warning"), "{warnings}");
}

const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [\"pods\"]\n";

const ADMISSION_CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      audit: restricted
    exemptions:
      namespaces: [exempt-ns]
      usernames: [trusted-user]
";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path.display().to_string()
}

fn configured_defaults_exemptions_and_audit_annotations(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let config = write(files.path(), "admission.yaml", ADMISSION_CONFIG);
    let policy = write(files.path(), "audit.yaml", AUDIT_POLICY);
    let log = files.path().join("audit.log");
    let s = backend.start_with(&[
        ALLOW_PRIVILEGED,
        &format!("--admission-control-config-file={config}"),
        &format!("--audit-policy-file={policy}"),
        &format!("--audit-log-path={}", log.display()),
    ]);
    // Unlabelled namespaces get the configured defaults.
    let err = s.fails(&["run", "p", "--image=nginx", "--privileged"]);
    assert!(err.contains(BASELINE_PRIVILEGED), "{err}");
    // Exempt users and namespaces are not evaluated (the user may create
    // pods in the namespace, as RBAC by default requires).
    s.ok(&[
        "create",
        "rolebinding",
        "trusted-user-edit",
        "--clusterrole=edit",
        "--user=trusted-user",
    ]);
    s.ok(&[
        "run",
        "p",
        "--image=nginx",
        "--privileged",
        "--as=trusted-user",
    ]);
    s.ok(&["create", "namespace", "exempt-ns"]);
    s.ok(&[
        "run",
        "p",
        "-n",
        "exempt-ns",
        "--image=nginx",
        "--privileged",
    ]);
    let warnings = label(
        &s,
        "exempt-ns",
        "pod-security.kubernetes.io/enforce=restricted",
    );
    assert!(
        warnings.contains(
            "Warning: namespace \"exempt-ns\" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored"
        ),
        "{warnings}"
    );
    // Audit annotations record the enforced policy and audit violations.
    s.ok(&["run", "plain", "--image=nginx"]);
    // Events are written once the response is complete: wait for them.
    let create = |name: &str, ns: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let found = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|e| {
                    e["stage"] == "ResponseComplete"
                        && e["verb"] == "create"
                        && e["objectRef"]["name"] == name
                        && e["objectRef"]["namespace"] == ns
                        && e["responseStatus"]["code"] == 201
                });
            if found.is_some() || std::time::Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let plain = create("plain", "default").expect("audit event of the create");
    let annotations = &plain["annotations"];
    assert_eq!(
        annotations["pod-security.kubernetes.io/enforce-policy"],
        "baseline:latest"
    );
    assert_eq!(
        annotations["pod-security.kubernetes.io/audit-violations"],
        Value::from(format!(
            "would violate PodSecurity \"restricted:latest\": {}",
            restricted_detail("plain")
        ))
    );
    let exempt = create("p", "exempt-ns").expect("audit event of the exempt create");
    assert_eq!(
        exempt["annotations"]["pod-security.kubernetes.io/exempt"],
        "namespace"
    );
}

#[test]
fn an_invalid_configuration_stops_startup() {
    let files = tempfile::tempdir().expect("temp dir");
    let config = write(
        files.path(),
        "admission.yaml",
        &ADMISSION_CONFIG.replace("enforce: baseline", "enforce: strict"),
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port");
    let mut child = std::process::Command::new(crate::harness::binary())
        .arg(format!("--data-dir={}", files.path().display()))
        .arg(format!("--secure-port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--admission-control-config-file={config}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("server starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert!(status.is_some_and(|s| !s.success()), "server kept running");
    assert!(
        stderr.contains("couldn't init admission plugin \"PodSecurity\"")
            && stderr.contains(
                "defaults.enforce: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
            ),
        "{stderr}"
    );
}

crate::harness::on_both_backends!(
    warn_prints_upstreams_warnings_and_ignores_insignificant_updates,
    workloads_in_an_enforcing_namespace_are_created_with_warnings;
    backend: configured_defaults_exemptions_and_audit_annotations,
    enforce_refuses_violating_pods_and_invalid_labels,
    a_stricter_enforce_label_warns_about_existing_pods
);
