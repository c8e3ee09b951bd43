//! Admission plugins end to end: DefaultIngressClass, PodTopologyLabels
//! and CertificateApproval (on by default; `kubectl certificate approve`
//! needs `approve` on the signer), AlwaysPullImages, DenyServiceExternalIPs
//! and EventRateLimit (with its configuration file) when enabled, and
//! NodeRestriction refusing a kubelet's client certificate (CN
//! `system:node:n1`, O `system:nodes`, signed by the server's CA) writes to
//! another node or to its reserved labels.

use std::process::Output;

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::stderr;

fn forbidden(out: &Output, message: &str) {
    assert!(!out.status.success(), "kubectl succeeded");
    assert!(
        stderr(out).contains(&format!("Error from server (Forbidden): {message}")),
        "{}",
        stderr(out)
    );
}

fn the_default_ingress_class_is_set_on_ingresses_that_name_none(server: &TestServer) {
    server.apply_yaml(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: main\n  \
         annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}\n\
         spec: {controller: example.com/ingress}\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: other}\n\
         spec: {controller: example.com/ingress}\n",
    );
    server.apply_yaml(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: default}\n\
         spec:\n  defaultBackend: {service: {name: web, port: {number: 80}}}\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: named, namespace: default}\n\
         spec:\n  ingressClassName: other\n  defaultBackend: {service: {name: web, port: {number: 80}}}\n",
    );
    let class = |name: &str| {
        server.ok(&[
            "get",
            "ingress",
            name,
            "-o",
            "jsonpath={.spec.ingressClassName}",
        ])
    };
    assert_eq!(class("web"), "main");
    assert_eq!(class("named"), "other");
}

fn enabled_plugins_pull_images_always_and_deny_external_ips(backend: Backend) {
    let server =
        backend.start_with(&["--enable-admission-plugins=AlwaysPullImages,DenyServiceExternalIPs"]);
    server.apply_yaml(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\n\
         spec:\n  containers: [{name: c, image: nginx, imagePullPolicy: IfNotPresent}]\n  \
         initContainers: [{name: i, image: busybox, imagePullPolicy: Never}]\n",
    );
    let policies = server.ok(&[
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.initContainers[*].imagePullPolicy} {.spec.containers[*].imagePullPolicy}",
    ]);
    assert_eq!(policies, "Always Always");
    let out = server.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: default}\n\
         spec:\n  ports: [{port: 80}]\n  externalIPs: [203.0.113.7]\n",
    );
    forbidden(
        &out,
        "error when creating \"STDIN\": services \"ext\" is forbidden: Use of external IPs is denied by admission control",
    );
}

fn node_restriction_keeps_a_kubelet_to_its_own_node_and_labels(backend: Backend) {
    let server = backend.start_with(&[
        "--authorization-mode=RBAC",
        "--enable-admission-plugins=NodeRestriction",
    ]);
    // The Node authorizer is not in play: the nodes group may do anything,
    // so every refusal below is the admission plugin's.
    server.apply_yaml(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n\
         apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
         metadata: {name: nodes-everything}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n\
         subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: \"system:nodes\"}]\n",
    );
    let kubelet = server.client_cert("system:node:n1", "system:nodes");
    forbidden(
        &server.kubectl_as_cert(&kubelet, &["label", "node", "n2", "a=b"]),
        "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\"",
    );
    forbidden(
        &server.kubectl_as_cert(&kubelet,
            &["label", "node", "n1", "node-restriction.kubernetes.io/pool=gpu"],
        ),
        "nodes \"n1\" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool",
    );
    let own = server.kubectl_as_cert(&kubelet, &["label", "node", "n1", "example.com/rack=r1"]);
    assert!(own.status.success(), "{}", stderr(&own));
    // Tokens only for the service accounts of pods bound to the node.
    while !server
        .kubectl(&["get", "serviceaccount", "default"])
        .status
        .success()
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for (pod, node) in [("on-n1", "n1"), ("on-n2", "n2")] {
        server.apply_yaml(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {pod}}}\n\
             spec: {{nodeName: {node}, containers: [{{name: c, image: nginx}}]}}\n"
        ));
    }
    let token_for = |pod: &str| {
        let uid = server.ok(&["get", "pod", pod, "-o", "jsonpath={.metadata.uid}"]);
        let args = [
            "create",
            "token",
            "default",
            "--bound-object-kind=Pod",
            &format!("--bound-object-name={pod}"),
            &format!("--bound-object-uid={uid}"),
        ]
        .map(str::to_owned);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        server.kubectl_as_cert(&kubelet, &args)
    };
    let own_pod = token_for("on-n1");
    assert!(own_pod.status.success(), "{}", stderr(&own_pod));
    let refused = |out: Output, why: &str| {
        assert!(!out.status.success(), "kubectl succeeded");
        let expected = format!("serviceaccounts \"default\" is forbidden: {why}");
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    };
    refused(
        token_for("on-n2"),
        "node requested token bound to a pod scheduled on a different node",
    );
    refused(
        server.kubectl_as_cert(&kubelet, &["create", "token", "default"]),
        "node requested token not bound to a pod",
    );
    // The administrator is not restricted.
    server.ok(&[
        "label",
        "node",
        "n2",
        "node-restriction.kubernetes.io/pool=gpu",
    ]);
}

/// A user with a bearer token from `--token-auth-file`.
fn as_token(server: &TestServer, token: &str, args: &[&str]) -> Output {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let flags = [
        "--kubeconfig=/dev/null".to_owned(),
        format!("--server=https://127.0.0.1:{}", server.port),
        format!("--certificate-authority={}", ca.display()),
        format!("--token={token}"),
    ];
    let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
    all.extend_from_slice(args);
    server.kubectl(&all)
}

fn csr_request() -> String {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    let pem = params
        .serialize_request(&key)
        .and_then(|csr| csr.pem())
        .expect("csr");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn approving_a_csr_needs_approve_on_its_signer(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let tokens = files.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token-0123456789,alice,1001\n").expect("token file");
    let flag = format!("--token-auth-file={}", tokens.display());
    let server = backend.start_with(&["--authorization-mode=RBAC", &flag]);
    // Alice may write approvals, but not approve for the signer.
    server.apply_yaml(&format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n\
         metadata: {{name: req}}\n\
         spec:\n  signerName: example.com/signer\n  usages: [client auth]\n  request: {}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: csr-approver}}\n\
         rules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests, certificatesigningrequests/approval]\n  \
         verbs: [get, list, update, patch]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: csr-approver}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-approver}}\n\
         subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}]\n",
        csr_request()
    ));
    let refused = as_token(
        &server,
        "alice-token-0123456789",
        &["certificate", "approve", "req"],
    );
    forbidden(
        &refused,
        "certificatesigningrequests.certificates.k8s.io \"req\" is forbidden: user not permitted to approve requests with signerName \"example.com/signer\"",
    );
    server.ok(&["certificate", "approve", "req"]);
    let conditions = server.ok(&[
        "get",
        "csr",
        "req",
        "-o",
        "jsonpath={.status.conditions[*].type}={.status.conditions[*].status}",
    ]);
    assert_eq!(conditions, "Approved=True");
    // The approval is stamped as upstream stamps conditions.
    let times = server.ok(&[
        "get",
        "csr",
        "req",
        "-o",
        "jsonpath={.status.conditions[0].lastUpdateTime} {.status.conditions[0].lastTransitionTime}",
    ]);
    let (updated, transition) = times.split_once(' ').unwrap_or_default();
    assert!(updated.ends_with('Z') && updated == transition, "{times}");
}

fn pods_created_on_a_node_carry_its_topology_labels(server: &TestServer) {
    server.apply_yaml(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  \
         labels: {topology.k8s.io/zone: z1, topology.k8s.io/region: r1, other: x}\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, labels: {app: web}}\n\
         spec:\n  nodeName: n1\n  containers: [{name: c, image: nginx}]\n",
    );
    let labels = server.ok(&["get", "pod", "web", "-o", "jsonpath={.metadata.labels}"]);
    let labels: serde_json::Value = serde_json::from_str(&labels).expect("labels");
    assert_eq!(
        labels,
        serde_json::json!({"app": "web", "topology.k8s.io/zone": "z1", "topology.k8s.io/region": "r1"})
    );
}

fn event_rate_limit_refuses_events_beyond_the_burst(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let limits = files.path().join("limits.yaml");
    let admission = files.path().join("admission.yaml");
    std::fs::write(
        &limits,
        "apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\n\
         limits:\n- {type: Namespace, qps: 1, burst: 2}\n",
    )
    .expect("limits");
    std::fs::write(
        &admission,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n\
         plugins:\n- {name: EventRateLimit, path: limits.yaml}\n",
    )
    .expect("admission config");
    let config = format!("--admission-control-config-file={}", admission.display());
    let server = backend.start_with(&["--enable-admission-plugins=EventRateLimit", &config]);
    // Eight events in one kubectl run come faster than one token a second
    // refills the two of the burst, so some are refused.
    let events: String = (1..=8)
        .map(|i| {
            format!(
                "---\napiVersion: v1\nkind: Event\nmetadata: {{name: e{i}, namespace: default}}\n\
                 involvedObject: {{kind: Pod, name: web, namespace: default}}\nreason: Test\n"
            )
        })
        .collect();
    let out = server.kubectl_stdin(&["create", "-f", "-"], &events);
    assert!(!out.status.success(), "every event was admitted");
    assert!(
        stderr(&out).contains(
            "Error from server (TooManyRequests): error when creating \"STDIN\": Too many requests: limit reached on type Namespace for key default"
        ),
        "{}",
        stderr(&out)
    );
    let created = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!((2..8).contains(&created), "{created} events created");
}

crate::harness::on_both_backends!(
    the_default_ingress_class_is_set_on_ingresses_that_name_none,
    pods_created_on_a_node_carry_its_topology_labels;
    backend: enabled_plugins_pull_images_always_and_deny_external_ips,
    node_restriction_keeps_a_kubelet_to_its_own_node_and_labels,
    approving_a_csr_needs_approve_on_its_signer,
    event_rate_limit_refuses_events_beyond_the_burst
);
