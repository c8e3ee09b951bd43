//! Create validation of the storage.k8s.io kinds and HorizontalPodAutoscalers
//! (upstream's pkg/apis/storage and pkg/apis/autoscaling validation): bad
//! objects created with kubectl are refused with upstream's field messages,
//! and the 422 Status of a raw create carries upstream's causes.

use serde_json::json;

use crate::harness::TestServer;
use crate::spec_validation::refused;
use crate::support::http::request;

#[test]
fn bad_storage_and_autoscaling_objects_are_refused() {
    let s = TestServer::start();
    let sc = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: sc}\n\
        provisioner: bad provisioner!\nreclaimPolicy: Recycle\n";
    let err = refused(&s, sc);
    assert!(
        err.contains("The StorageClass \"sc\" is invalid: \n* provisioner: Invalid value: \"bad provisioner!\": name part must consist of alphanumeric characters"),
        "{err}"
    );
    assert!(
        err.contains("\n* reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"\n"),
        "{err}"
    );
    let va = "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va}\n\
        spec: {attacher: csi.example.com, nodeName: node-1, source: {}}\n";
    let err = refused(&s, va);
    assert!(
        err.contains("spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"),
        "{err}"
    );
    let hpa = "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h1}\n\
        spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 2, minReplicas: 3}\n";
    let err = refused(&s, hpa);
    assert!(
        err.contains(
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"
        ),
        "{err}"
    );
    let hpa = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h3}\n\
        spec: {scaleTargetRef: {kind: Deployment, name: web}, maxReplicas: 2, metrics: [\
        {type: ContainerResource, containerResource: {name: pods, container: app, \
        target: {type: Utilization, averageUtilization: 50}}}]}\n";
    let err = refused(&s, hpa);
    assert!(
        err.contains("spec.metrics[0].containerResource.name: Invalid value: \"pods\": must be a standard resource for containers"),
        "{err}"
    );
    // Valid objects still go through.
    s.ok(&["create", "deployment", "web", "--image=nginx"]);
    s.ok(&[
        "autoscale",
        "deployment",
        "web",
        "--max=3",
        "--cpu-percent=50",
    ]);
    let good = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\n\
        provisioner: csi.example.com\nparameters: {type: ssd}\n";
    s.apply_yaml(good);

    let body = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h2"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 0}});
    let a = request(
        &s,
        "POST",
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        &["Content-Type: application/json"],
        Some(&body.to_string()),
    );
    assert_eq!(a.code, 422, "{}", a.body);
    let message = "HorizontalPodAutoscaler.autoscaling \"h2\" is invalid: \
        [spec.maxReplicas: Invalid value: 0: must be greater than 0, \
        spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`]";
    let want = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Invalid",
        "details": {"name": "h2", "group": "autoscaling", "kind": "HorizontalPodAutoscaler",
            "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be greater than 0",
                    "field": "spec.maxReplicas"},
                {"reason": "FieldValueInvalid",
                    "message": "Invalid value: 0: must be greater than or equal to `minReplicas`",
                    "field": "spec.maxReplicas"}]},
        "code": 422});
    assert_eq!(a.body, want);
}

#[test]
fn bad_persistent_volume_claims_are_refused() {
    let s = TestServer::start();
    let empty = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c1}\nspec: {}\n";
    let err = refused(&s, empty);
    assert!(
        err.contains("The PersistentVolumeClaim \"c1\" is invalid: \n* spec.accessModes: Required value: at least 1 access mode is required\n* spec.resources[storage]: Required value\n"),
        "{err}"
    );
    let modes = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c2}\nspec:\n  \
        accessModes: [ReadWriteOncePod, ReadWriteOnce]\n  resources: {requests: {storage: 0}}\n  \
        volumeMode: Raw\n";
    let err = refused(&s, modes);
    for part in [
        "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
        "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
        "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
    ] {
        assert!(err.contains(part), "{part} in {err}");
    }
    let good = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c3}\nspec:\n  \
        accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n";
    s.apply_yaml(good);
    // Updates are checked too: a bound claim may grow, not lose its modes.
    let err = s.kubectl(&[
        "patch",
        "pvc",
        "c3",
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/spec/accessModes"}]"#,
    ]);
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(
        stderr.contains("spec.accessModes: Required value: at least 1 access mode is required"),
        "{stderr}"
    );
}
