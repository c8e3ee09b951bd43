"""Creates, reads and lists one object of each common built-in kind with the
official Python client (`pip install kubernetes`), whose models refuse a
response that lacks a field upstream always sends (e.g. a DaemonSet's
`status.currentNumberScheduled`). Usage: client_shapes.py KUBECONFIG.
Prints one line per kind and exits non-zero on the first exception."""

import base64
import subprocess
import sys
import tempfile

from kubernetes import client, config

NS = "py-shapes"
EVENTS_NS = "py-events"
LABELS = {"app": "web"}
SELECTOR = {"matchLabels": LABELS}
POD_SPEC = {"containers": [{"name": "c", "image": "nginx"}]}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}


def csr_request():
    """A PEM certificate request, base64-encoded as the CSR API wants it."""
    with tempfile.TemporaryDirectory() as d:
        pem = subprocess.run(
            ["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{d}/k",
             "-subj", "/CN=py-client"],
            check=True, capture_output=True).stdout
    return base64.b64encode(pem).decode()


def meta(name):
    return {"name": name, "labels": LABELS}


def namespaced(api, kind, body, ns=NS):
    """Create, read and list through the typed client of `kind`."""
    getattr(api, f"create_namespaced_{kind}")(ns, body)
    name = body["metadata"]["name"]
    got = getattr(api, f"read_namespaced_{kind}")(name, ns)
    assert got.metadata.name == name, got.metadata
    items = getattr(api, f"list_namespaced_{kind}")(ns).items
    assert any(i.metadata.name == name for i in items), kind


def cluster(api, kind, body):
    getattr(api, f"create_{kind}")(body)
    name = body["metadata"]["name"]
    got = getattr(api, f"read_{kind}")(name)
    assert got.metadata.name == name, got.metadata
    items = getattr(api, f"list_{kind}")().items
    assert any(i.metadata.name == name for i in items), kind


def main():
    config.load_kube_config(config_file=sys.argv[1])
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    cluster(core, "namespace", {"metadata": meta(NS)})
    event_time = "2026-01-02T03:04:05.000000Z"
    involved = {"kind": "Pod", "namespace": NS, "name": "p"}
    hpa_target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    cases = [
        (apps, "daemon_set", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
        (apps, "stateful_set", {"spec": {"selector": SELECTOR, "template": TEMPLATE,
                                         "serviceName": "s"}}),
        (apps, "deployment", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
        (apps, "replica_set", {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
        (core, "replication_controller", {"spec": {"selector": LABELS, "template": TEMPLATE}}),
        (core, "service", {"spec": {"selector": LABELS, "ports": [{"port": 80}]}}),
        (core, "pod", {"spec": POD_SPEC}),
        (core, "persistent_volume_claim", {"spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
        (core, "config_map", {"data": {"k": "<v>&"}}),
        (core, "secret", {"stringData": {"k": "v"}}),
        (core, "event", {"involvedObject": involved, "reason": "R", "message": "m"}),
        (client.BatchV1Api(), "job", {"spec": {"template": {
            "spec": dict(POD_SPEC, restartPolicy="Never")}}}),
        (client.BatchV1Api(), "cron_job", {"spec": {"schedule": "* * * * *", "jobTemplate": {
            "spec": {"template": {"spec": dict(POD_SPEC, restartPolicy="Never")}}}}}),
        (client.AutoscalingV2Api(), "horizontal_pod_autoscaler", {"spec": {
            "scaleTargetRef": hpa_target, "maxReplicas": 3}}),
        (client.AutoscalingV1Api(), "horizontal_pod_autoscaler", {"spec": {
            "scaleTargetRef": hpa_target, "maxReplicas": 3}}),
        (client.RbacAuthorizationV1Api(), "role", {"rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        (client.RbacAuthorizationV1Api(), "role_binding", {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]}),
        (client.NetworkingV1Api(), "ingress", {"spec": {"defaultBackend": {
            "service": {"name": "s", "port": {"number": 80}}}}}),
        (client.NetworkingV1Api(), "network_policy", {"spec": {"podSelector": {}}}),
        (client.PolicyV1Api(), "pod_disruption_budget", {"spec": {"minAvailable": 1,
                                                                  "selector": SELECTOR}}),
        (client.CoordinationV1Api(), "lease", {"spec": {"holderIdentity": "h"}}),
        (client.DiscoveryV1Api(), "endpoint_slice", {"addressType": "IPv4", "endpoints": [
            {"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
    ]
    for i, (api, kind, body) in enumerate(cases):
        body["metadata"] = meta(f"{kind.replace('_', '-')}-{i}")
        namespaced(api, kind, body)
        print(f"ok {type(api).__name__} {kind}", flush=True)
    # In a namespace of its own: a core/v1 Event without eventTime lists in
    # events.k8s.io/v1 with `eventTime: null`, which this client refuses
    # against upstream too.
    cluster(core, "namespace", {"metadata": meta(EVENTS_NS)})
    namespaced(client.EventsV1Api(), "event", {
        "metadata": meta("ev"), "eventTime": event_time, "reportingController": "x/y",
        "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
        "regarding": dict(involved, namespace=EVENTS_NS)}, EVENTS_NS)
    print("ok EventsV1Api event", flush=True)
    storage, scheduling = client.StorageV1Api(), client.SchedulingV1Api()
    cluster(storage, "storage_class", {"metadata": meta("sc"), "provisioner": "x.io/p"})
    cluster(scheduling, "priority_class", {"metadata": meta("pc"), "value": 10})
    cluster(client.CertificatesV1Api(), "certificate_signing_request", {
        "metadata": meta("csr"),
        "spec": {"request": csr_request(), "signerName": "example.com/signer",
                 "usages": ["client auth"]}})
    print("ok cluster-scoped", flush=True)


if __name__ == "__main__":
    main()
