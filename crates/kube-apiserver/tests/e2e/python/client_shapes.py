"""Creates, reads and lists one object of every GA built-in kind with the
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


def ca_pem():
    """A self-signed PEM certificate, for a ClusterTrustBundle."""
    with tempfile.TemporaryDirectory() as d:
        return subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{d}/k",
             "-subj", "/CN=py-ca", "-days", "1"],
            check=True, capture_output=True).stdout.decode()


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
    for i, (api, kind, body) in enumerate(more_namespaced()):
        body["metadata"] = meta(f"{kind.replace('_', '-')}-m{i}")
        namespaced(api, kind, body)
        print(f"ok {type(api).__name__} {kind}", flush=True)
    for api, kind, body in cluster_scoped():
        cluster(api, kind, body)
        print(f"ok {type(api).__name__} {kind}", flush=True)
    print("ok cluster-scoped", flush=True)


def more_namespaced():
    """The other namespaced GA kinds."""
    core, storage = client.CoreV1Api(), client.StorageV1Api()
    res = client.ResourceV1Api()
    claim_spec = {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": "dc"}}]}}
    return [
        (core, "endpoints", {"subsets": [{"addresses": [{"ip": "10.0.0.2"}],
                                          "ports": [{"port": 80}]}]}),
        (core, "limit_range", {"spec": {"limits": [{"type": "Container",
                                                    "max": {"cpu": "1"}}]}}),
        (core, "resource_quota", {"spec": {"hard": {"pods": "10"}}}),
        (core, "pod_template", {"template": TEMPLATE}),
        (core, "service_account", {}),
        (client.AppsV1Api(), "controller_revision", {"revision": 1, "data": {"a": 1}}),
        (storage, "csi_storage_capacity", {"storageClassName": "sc"}),
        (res, "resource_claim", {"spec": claim_spec}),
        (res, "resource_claim_template", {"spec": {"spec": claim_spec}}),
    ]


def cluster_scoped():
    """Every cluster-scoped GA kind, with the smallest valid body."""
    storage, adm = client.StorageV1Api(), client.AdmissionregistrationV1Api()
    net, rbac = client.NetworkingV1Api(), client.RbacAuthorizationV1Api()
    flow, res = client.FlowcontrolApiserverV1Api(), client.ResourceV1Api()
    webhook = {"name": "w.example.com", "clientConfig": {"url": "https://w.example.com/"},
               "sideEffects": "None", "admissionReviewVersions": ["v1"]}
    pod_rule = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["pods"]}]
    with_meta = lambda name, body: dict(body, metadata=meta(name))
    return [
        (client.CoreV1Api(), "persistent_volume", with_meta("pv", {"spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/pv"}}})),
        (client.CoreV1Api(), "node", with_meta("py-node", {})),
        (storage, "storage_class", with_meta("sc", {"provisioner": "x.io/p"})),
        (storage, "csi_driver", with_meta("x.example.com", {"spec": {}})),
        (storage, "csi_node", with_meta("py-node", {"spec": {"drivers": []}})),
        (storage, "volume_attachment", with_meta("va", {"spec": {
            "attacher": "x.example.com", "nodeName": "py-node",
            "source": {"persistentVolumeName": "pv"}}})),
        (storage, "volume_attributes_class", with_meta("vac", {
            "driverName": "x.example.com", "parameters": {"iops": "100"}})),
        (client.SchedulingV1Api(), "priority_class", with_meta("pc", {"value": 10})),
        (client.CertificatesV1Api(), "certificate_signing_request", with_meta("csr", {
            "spec": {"request": csr_request(), "signerName": "example.com/signer",
                     "usages": ["client auth"]}})),
        (client.NodeV1Api(), "runtime_class", with_meta("rc", {"handler": "runc"})),
        (net, "ingress_class", with_meta("ic", {"spec": {"controller": "x.io/c"}})),
        (net, "service_cidr", with_meta("cidr", {"spec": {"cidrs": ["10.200.0.0/16"]}})),
        (net, "ip_address", with_meta("10.200.0.9", {"spec": {"parentRef": {
            "resource": "services", "namespace": NS, "name": "s"}}})),
        (rbac, "cluster_role", with_meta("cr", {"rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})),
        (rbac, "cluster_role_binding", with_meta("crb", {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cr"},
            "subjects": [{"kind": "User", "name": "u",
                          "apiGroup": "rbac.authorization.k8s.io"}]})),
        (adm, "validating_webhook_configuration", with_meta("vwc", {"webhooks": [
            dict(webhook, rules=pod_rule, failurePolicy="Ignore")]})),
        (adm, "mutating_webhook_configuration", with_meta("mwc", {"webhooks": [
            dict(webhook, rules=pod_rule, failurePolicy="Ignore")]})),
        (adm, "validating_admission_policy", with_meta("vap", {"spec": {
            "matchConstraints": {"resourceRules": pod_rule},
            "validations": [{"expression": "true"}]}})),
        (adm, "validating_admission_policy_binding", with_meta("vapb", {"spec": {
            "policyName": "vap", "validationActions": ["Deny"]}})),
        (adm, "mutating_admission_policy", with_meta("map", {"spec": {
            "matchConstraints": {"resourceRules": pod_rule}, "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{}"}}]}})),
        (adm, "mutating_admission_policy_binding", with_meta("mapb", {"spec": {
            "policyName": "map"}})),
        (client.CertificatesV1Api(), "cluster_trust_bundle", with_meta("ctb", {"spec": {
            "trustBundle": ca_pem()}})),
        (flow, "priority_level_configuration", with_meta("plc", {"spec": {
            "type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                                           "limitResponse": {"type": "Reject"}}}})),
        (flow, "flow_schema", with_meta("fs", {"spec": {
            "priorityLevelConfiguration": {"name": "plc"}, "matchingPrecedence": 5000}})),
        (res, "device_class", with_meta("dc", {"spec": {}})),
        (res, "resource_slice", with_meta("rs", {"spec": {
            "driver": "x.example.com", "pool": {"name": "p", "generation": 1,
                                               "resourceSliceCount": 1},
            "allNodes": True, "devices": [{"name": "d"}]}})),
        (client.ApiextensionsV1Api(), "custom_resource_definition", with_meta(
            "widgets.py.example.com", {"spec": {
                "group": "py.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                    "openAPIV3Schema": {"type": "object"}}}]}})),
        (client.ApiregistrationV1Api(), "api_service", with_meta("v1.other.example.com", {
            "spec": {"group": "other.example.com", "version": "v1", "groupPriorityMinimum": 100,
                     "versionPriority": 10}})),
    ]


if __name__ == "__main__":
    main()
