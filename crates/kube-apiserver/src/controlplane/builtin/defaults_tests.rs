//! Upstream's defaulting of every built-in kind that has any (the
//! `SetDefaults_*` functions of pkg/apis/<group>/<version>/defaults.go and
//! the `+default` markers of k8s.io/api), one row per kind listing the
//! defaults it checks, applied through the kind's scheme as a request
//! body is.

use serde_json::{json, Value};

use super::fixtures_tests::catalogue;

/// (JSON pointer, defaulted value) pairs; a null value means the field
/// is left unset.
pub(super) type Expected = Vec<(String, Value)>;

/// (apiVersion, kind, body, the defaults checked).
pub(super) type Row = (&'static str, &'static str, Value, Expected);

pub(super) fn at(pairs: Vec<(&str, Value)>) -> Expected {
    pairs.into_iter().map(|(p, v)| (p.to_owned(), v)).collect()
}

fn pod_spec() -> Value {
    json!({
        "containers": [{"name": "c", "image": "nginx:1.27",
            "ports": [{"containerPort": 80}],
            "readinessProbe": {"grpc": {"port": 9000}},
            "livenessProbe": {"httpGet": {"port": 80}},
            "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
        "volumes": [
            {"name": "none"},
            {"name": "s", "secret": {"secretName": "s"}},
            {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
            {"name": "h", "hostPath": {"path": "/x"}},
            {"name": "i", "iscsi": {"targetPortal": "t:3260", "iqn": "iqn.x", "lun": 0}},
            {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
            {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "u"}},
            {"name": "o", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}}
        ]
    })
}

fn pod_spec_defaults() -> Expected {
    at(vec![
        ("/dnsPolicy", json!("ClusterFirst")),
        ("/restartPolicy", json!("Always")),
        ("/schedulerName", json!("default-scheduler")),
        ("/terminationGracePeriodSeconds", json!(30)),
        ("/securityContext", json!({})),
        ("/containers/0/imagePullPolicy", json!("IfNotPresent")),
        (
            "/containers/0/terminationMessagePath",
            json!("/dev/termination-log"),
        ),
        ("/containers/0/terminationMessagePolicy", json!("File")),
        ("/containers/0/ports/0/protocol", json!("TCP")),
        ("/containers/0/readinessProbe/grpc/service", json!("")),
        ("/containers/0/readinessProbe/timeoutSeconds", json!(1)),
        ("/containers/0/readinessProbe/periodSeconds", json!(10)),
        ("/containers/0/readinessProbe/successThreshold", json!(1)),
        ("/containers/0/readinessProbe/failureThreshold", json!(3)),
        ("/containers/0/livenessProbe/httpGet/path", json!("/")),
        ("/containers/0/livenessProbe/httpGet/scheme", json!("HTTP")),
        (
            "/containers/0/env/0/valueFrom/fieldRef/apiVersion",
            json!("v1"),
        ),
        ("/volumes/0/emptyDir", json!({})),
        ("/volumes/1/secret/defaultMode", json!(420)),
        ("/volumes/2/projected/defaultMode", json!(420)),
        (
            "/volumes/2/projected/sources/0/serviceAccountToken/expirationSeconds",
            json!(3600),
        ),
        ("/volumes/3/hostPath/type", json!("")),
        ("/volumes/4/iscsi/iscsiInterface", json!("default")),
        ("/volumes/5/rbd/pool", json!("rbd")),
        ("/volumes/5/rbd/user", json!("admin")),
        ("/volumes/5/rbd/keyring", json!("/etc/ceph/keyring")),
        ("/volumes/6/azureDisk/cachingMode", json!("ReadWrite")),
        ("/volumes/6/azureDisk/fsType", json!("ext4")),
        ("/volumes/6/azureDisk/readOnly", json!(false)),
        ("/volumes/6/azureDisk/kind", json!("Shared")),
        ("/volumes/7/scaleIO/storageMode", json!("ThinProvisioned")),
        ("/volumes/7/scaleIO/fsType", json!("xfs")),
    ])
}

/// The pod spec's defaults below `prefix`.
pub(super) fn under(prefix: &str) -> Expected {
    pod_spec_defaults()
        .into_iter()
        .map(|(p, v)| (format!("{prefix}{p}"), v))
        .collect()
}

pub(super) fn template() -> Value {
    json!({"metadata": {"labels": {"app": "a"}}, "spec": pod_spec()})
}

fn core_rows() -> Vec<Row> {
    let mut pod = under("/spec");
    pod.push(("/spec/enableServiceLinks".into(), json!(true)));
    let mut rc = under("/spec/template/spec");
    rc.extend(at(vec![
        ("/spec/replicas", json!(1)),
        ("/spec/selector", json!({"app": "a"})),
        ("/metadata/labels", json!({"app": "a"})),
    ]));
    vec![
        (
            "v1",
            "Pod",
            json!({"metadata": {}, "spec": pod_spec()}),
            pod,
        ),
        (
            "v1",
            "PodTemplate",
            json!({"metadata": {}, "template": template()}),
            under("/template/spec"),
        ),
        (
            "v1",
            "ReplicationController",
            json!({"metadata": {}, "spec": {"template": template()}}),
            rc,
        ),
        (
            "v1",
            "Service",
            json!({"spec": {"ports": [{"port": 80}]}}),
            at(vec![
                ("/spec/type", json!("ClusterIP")),
                ("/spec/sessionAffinity", json!("None")),
                ("/spec/ports/0/protocol", json!("TCP")),
                ("/spec/ports/0/targetPort", json!(80)),
                ("/spec/internalTrafficPolicy", json!("Cluster")),
            ]),
        ),
        (
            "v1",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                "ports": [{"port": 80, "targetPort": 0}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
            at(vec![
                ("/spec/externalTrafficPolicy", json!("Cluster")),
                ("/spec/allocateLoadBalancerNodePorts", json!(true)),
                (
                    "/spec/sessionAffinityConfig/clientIP/timeoutSeconds",
                    json!(10800),
                ),
            ]),
        ),
        (
            "v1",
            "Secret",
            json!({}),
            at(vec![("/type", json!("Opaque"))]),
        ),
        (
            "v1",
            "Endpoints",
            json!({"subsets": [{"ports": [{"port": 80}]}]}),
            at(vec![("/subsets/0/ports/0/protocol", json!("TCP"))]),
        ),
        (
            "v1",
            "PersistentVolume",
            json!({"spec": {"hostPath": {"path": "/x"}, "rbd": {"monitors": ["m"], "image": "i"},
                "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0},
                "azureDisk": {"diskName": "d", "diskURI": "u"},
                "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}}}),
            at(vec![
                ("/spec/persistentVolumeReclaimPolicy", json!("Retain")),
                ("/spec/volumeMode", json!("Filesystem")),
                ("/spec/hostPath/type", json!("")),
                ("/spec/rbd/pool", json!("rbd")),
                ("/spec/rbd/user", json!("admin")),
                ("/spec/rbd/keyring", json!("/etc/ceph/keyring")),
                ("/spec/iscsi/iscsiInterface", json!("default")),
                ("/spec/azureDisk/cachingMode", json!("ReadWrite")),
                ("/spec/azureDisk/kind", json!("Shared")),
                ("/spec/scaleIO/storageMode", json!("ThinProvisioned")),
                ("/spec/scaleIO/fsType", json!("xfs")),
            ]),
        ),
        (
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {}}),
            at(vec![("/spec/volumeMode", json!("Filesystem"))]),
        ),
        (
            "v1",
            "LimitRange",
            json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}]}}),
            at(vec![
                ("/spec/limits/0/default", json!({"cpu": "2"})),
                (
                    "/spec/limits/0/defaultRequest",
                    json!({"cpu": "2", "memory": "1Mi"}),
                ),
            ]),
        ),
    ]
}

fn named_rows() -> Vec<Row> {
    let rbac = "rbac.authorization.k8s.io";
    let binding = json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
            {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]});
    let binding_defaults = at(vec![
        ("/roleRef/apiGroup", json!(rbac)),
        ("/subjects/0/apiGroup", json!(rbac)),
        ("/subjects/1/apiGroup", json!(rbac)),
        ("/subjects/2/apiGroup", json!("")),
    ]);
    vec![
        (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            json!({"ports": [{"port": 80}, {"name": "x", "protocol": "UDP"}]}),
            at(vec![
                ("/ports/0/name", json!("")),
                ("/ports/0/protocol", json!("TCP")),
                ("/ports/1/name", json!("x")),
                ("/ports/1/protocol", json!("UDP")),
            ]),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            binding.clone(),
            binding_defaults.clone(),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            binding,
            binding_defaults,
        ),
        (
            "storage.k8s.io/v1",
            "StorageClass",
            json!({"provisioner": "p"}),
            at(vec![
                ("/reclaimPolicy", json!("Delete")),
                ("/volumeBindingMode", json!("Immediate")),
            ]),
        ),
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}}),
            at(vec![
                ("/spec/policyTypes", json!(["Ingress", "Egress"])),
                ("/spec/egress/0/ports/0/protocol", json!("TCP")),
            ]),
        ),
        (
            "scheduling.k8s.io/v1",
            "PriorityClass",
            json!({"value": 1}),
            at(vec![("/preemptionPolicy", json!("PreemptLowerPriority"))]),
        ),
    ]
}

/// `body` defaulted through the scheme of the served kind.
pub(super) fn defaulted(api_version: &str, kind: &str, mut body: Value) -> Value {
    let all = catalogue();
    let builtin = all
        .iter()
        .find(|b| b.info.api_version() == api_version && b.info.kind == kind)
        .unwrap_or_else(|| panic!("{api_version} {kind} is served"));
    builtin.strategies.scheme.apply_defaults(&mut body);
    body
}

/// Applies each row's kind's defaults to its body and checks the listed
/// pointers, reporting every mismatch at once.
pub(super) fn assert_defaults(rows: impl IntoIterator<Item = Row>) {
    let mut failures = Vec::new();
    for (api_version, kind, body, expected) in rows {
        let body = defaulted(api_version, kind, body);
        for (pointer, want) in expected {
            let got = body.pointer(&pointer);
            let unset = want.is_null() && got.is_none_or(Value::is_null);
            if got != Some(&want) && !unset {
                failures.push(format!(
                    "{api_version} {kind} {pointer}: want {want}, got {got:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_kind_gets_upstreams_defaults() {
    assert_defaults(core_rows().into_iter().chain(named_rows()));
}
