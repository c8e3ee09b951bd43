use serde_json::{json, Value};

use super::*;

pub(super) fn messages(pod: &Value) -> Vec<String> {
    validate_pod(pod).iter().map(ToString::to_string).collect()
}

/// A pod whose only container is `c` merged over a valid container.
pub(super) fn with_container(c: Value) -> Value {
    let mut container = json!({"name": "app", "image": "nginx"});
    merge(&mut container, c);
    json!({"spec": {"containers": [container]}})
}

/// A valid one-container pod with `spec` merged over its spec.
pub(super) fn with_spec(spec: Value) -> Value {
    let mut pod = json!({"spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    merge(&mut pod["spec"], spec);
    pod
}

fn merge(target: &mut Value, patch: Value) {
    if let (Some(t), Value::Object(p)) = (target.as_object_mut(), patch) {
        for (k, v) in p {
            t.insert(k, v);
        }
    }
}

/// Each case: the pod and exactly the messages upstream gives for it.
pub(super) fn check(cases: Vec<(Value, Vec<&str>)>) {
    for (pod, expected) in cases {
        assert_eq!(messages(&pod), expected, "pod: {pod}");
    }
}

#[test]
fn realistic_pod_is_accepted() {
    let pod = json!({"metadata": {"name": "web"}, "spec": {
        "serviceAccountName": "web",
        "terminationGracePeriodSeconds": 30,
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
            "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}]},
        "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]},
            {"name": "sidecar", "image": "envoy", "restartPolicy": "Always",
             "readinessProbe": {"tcpSocket": {"port": 9901}}}],
        "containers": [{"name": "app", "image": "nginx:1.25",
            "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File",
            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"},
                      {"name": "metrics", "containerPort": 9090}],
            "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                    {"name": "TEAM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['team']"}}},
                    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                    {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                    {"name": "1_weird-name.ok", "value": "x"}],
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "example.com/gpu": "1"},
                          "limits": {"cpu": "1", "memory": "128Mi", "example.com/gpu": "1"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http",
                "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                "initialDelaySeconds": 3, "periodSeconds": 10, "successThreshold": 1},
            "readinessProbe": {"exec": {"command": ["cat", "/ready"]}, "successThreshold": 3},
            "startupProbe": {"grpc": {"port": 9090}, "failureThreshold": 30},
            "lifecycle": {"preStop": {"sleep": {"seconds": 5}},
                          "postStart": {"exec": {"command": ["echo"]}}},
            "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "app"},
                             {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                             {"name": "token", "mountPath": "/var/run/token"},
                             {"name": "info", "mountPath": "/etc/info"}]}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "config", "configMap": {"name": "cfg", "defaultMode": 420,
                "items": [{"key": "app.yaml", "path": "app.yaml"}]}},
            {"name": "token", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "api"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
            {"name": "info", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "cpu", "resourceFieldRef": {"containerName": "app", "resource": "requests.cpu"}}]}},
            {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}}],
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100,
                "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname"}}]}},
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 300}, {"operator": "Exists"}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}],
        "nodeSelector": {"disktype": "ssd"},
        "dnsConfig": {"nameservers": ["10.0.0.10"], "searches": ["svc.cluster.local"],
            "options": [{"name": "ndots", "value": "2"}]},
        "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local"]}],
        "priorityClassName": "high", "activeDeadlineSeconds": 600,
        "hostname": "web-0", "subdomain": "web",
        "imagePullSecrets": [{"name": "registry"}]}});
    assert_eq!(messages(&pod), Vec::<String>::new());
}

#[test]
fn container_names_and_images() {
    check(vec![
        (json!({"spec": {"containers": []}}), vec!["spec.containers: Required value"]),
        (with_container(json!({"image": ""})), vec!["spec.containers[0].image: Required value"]),
        (
            with_container(json!({"image": " nginx"})),
            vec!["spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace"],
        ),
        (
            json!({"spec": {"initContainers": [{"name": "app", "image": "x"}],
                "containers": [{"name": "app", "image": "x"}, {"name": "app", "image": "x"}]}}),
            vec![
                "spec.containers[1].name: Duplicate value: \"app\"",
                "spec.initContainers[0].name: Duplicate value: \"app\"",
            ],
        ),
        (
            with_container(json!({"name": "App_1"})),
            vec!["spec.containers[0].name: Invalid value: \"App_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"],
        ),
        (
            with_container(json!({"imagePullPolicy": "Sometimes", "terminationMessagePolicy": "Stdout"})),
            vec![
                "spec.containers[0].terminationMessagePolicy: Unsupported value: \"Stdout\": supported values: \"File\", \"FallbackToLogsOnError\"",
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            ],
        ),
    ]);
}

#[test]
fn container_ports() {
    check(vec![
        (
            with_container(json!({"ports": [{"containerPort": 0}, {"containerPort": 70000, "protocol": "ICMP"}]})),
            vec![
                "spec.containers[0].ports[0].containerPort: Required value",
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ],
        ),
        (
            with_container(json!({"ports": [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81},
                {"name": "Web_Port", "containerPort": 82}]})),
            vec![
                "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
                "spec.containers[0].ports[2].name: Invalid value: \"Web_Port\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            ],
        ),
        (
            json!({"spec": {"containers": [
                {"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]},
                {"name": "b", "image": "x", "ports": [{"containerPort": 81, "hostPort": 8080, "protocol": "TCP"}]}]}}),
            vec!["spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\""],
        ),
        (
            with_spec(json!({"hostNetwork": true, "containers": [{"name": "a", "image": "x",
                "ports": [{"containerPort": 80, "hostPort": 81}, {"containerPort": 90}]}]})),
            vec!["spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"],
        ),
    ]);
}

#[test]
fn container_env() {
    check(vec![
        (
            with_container(json!({"env": [{"name": ""}, {"name": "A=B"}]})),
            vec![
                "spec.containers[0].env[0].name: Required value",
                "spec.containers[0].env[1].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
            ],
        ),
        (
            with_container(json!({"env": [
                {"name": "A", "valueFrom": {}},
                {"name": "B", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"},
                    "configMapKeyRef": {"name": "c", "key": "k"}}}]})),
            vec![
                "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                "spec.containers[0].env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
                "spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
            ],
        ),
        (
            with_container(json!({"env": [
                {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.restartPolicy"}}},
                {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "status.nope"}}},
                {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "c", "key": ""}}},
                {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}]})),
            vec![
                "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"spec.restartPolicy\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
                "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Invalid value: \"status.nope\": error converting fieldPath: field label not supported: status.nope",
                "spec.containers[0].env[2].valueFrom.configMapKeyRef.key: Required value",
                "spec.containers[0].env[3].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"",
            ],
        ),
        (
            with_container(json!({"envFrom": [{}, {"secretRef": {"name": ""}}]})),
            vec![
                "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
                "spec.containers[0].envFrom[1].secretRef.name: Required value",
            ],
        ),
    ]);
}

#[test]
fn container_resources() {
    check(vec![
        (
            with_container(json!({"resources": {"requests": {"cpu": "2", "memory": "-1"}, "limits": {"cpu": "500m"}}})),
            vec![
                "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 500m",
                "spec.containers[0].resources.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
            ],
        ),
        (
            with_container(json!({"resources": {"limits": {"cpuu": "1", "pods": "1"}}})),
            vec![
                "spec.containers[0].resources.limits[cpuu]: Invalid value: \"cpuu\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.limits[cpuu]: Invalid value: \"cpuu\": must be a standard resource for containers",
                "spec.containers[0].resources.limits[pods]: Invalid value: \"pods\": must be a standard resource for containers",
            ],
        ),
        (
            with_container(json!({"resources": {"requests": {"example.com/gpu": "1"}}})),
            vec!["spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"],
        ),
        (
            with_container(json!({"resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}})),
            vec!["spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2"],
        ),
        (
            with_container(json!({"resources": {"limits": {"hugepages-2Mi": "3Mi"}}})),
            vec![
                "spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
                "spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
            ],
        ),
    ]);
}

#[test]
fn probes_and_lifecycle() {
    check(vec![
        (
            with_container(json!({"livenessProbe": {"exec": {"command": ["true"]}, "httpGet": {"port": 80}}})),
            vec!["spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"],
        ),
        (
            with_container(json!({"readinessProbe": {"periodSeconds": -1}})),
            vec![
                "spec.containers[0].readinessProbe: Required value: must specify a handler type",
                "spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        (
            with_container(json!({"livenessProbe": {"tcpSocket": {"port": 0}, "successThreshold": 2},
                "startupProbe": {"httpGet": {"port": "http", "scheme": "FTP"}}})),
            vec![
                "spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].startupProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
            ],
        ),
        (
            with_container(json!({"readinessProbe": {"exec": {"command": []}, "terminationGracePeriodSeconds": 5}})),
            vec![
                "spec.containers[0].readinessProbe.exec.command: Required value",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
            ],
        ),
        (
            with_container(json!({"lifecycle": {"preStop": {"sleep": {"seconds": 60}}}})),
            vec!["spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)"],
        ),
        (
            json!({"spec": {"containers": [{"name": "a", "image": "x"}],
                "initContainers": [{"name": "i", "image": "x", "livenessProbe": {"exec": {"command": ["x"]}}}]}}),
            vec!["spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"],
        ),
    ]);
}

#[test]
fn security_contexts() {
    check(vec![
        (
            with_container(json!({"securityContext": {"runAsUser": -1, "privileged": true,
                "allowPrivilegeEscalation": false}})),
            vec![
                "spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
                "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext: Invalid value: {\"allowPrivilegeEscalation\":false,\"privileged\":true,\"runAsUser\":-1}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ],
        ),
        (
            with_container(json!({"securityContext": {"procMount": "Unmasked",
                "seccompProfile": {"type": "Localhost"}}})),
            vec![
                "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
                "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
            ],
        ),
        (
            with_spec(json!({"hostPID": true, "shareProcessNamespace": true,
                "securityContext": {"fsGroup": -5, "fsGroupChangePolicy": "Never",
                    "sysctls": [{"name": "Bad"}, {"name": "kernel.shm_rmid_forced"}, {"name": "kernel.shm_rmid_forced"}]}})),
            vec![
                "spec.securityContext.fsGroup: Invalid value: -5: must be between 0 and 2147483647, inclusive",
                "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
                "spec.securityContext.sysctls[0].name: Invalid value: \"Bad\": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
                "spec.securityContext.sysctls[2].name: Duplicate value: \"kernel.shm_rmid_forced\"",
                "spec.securityContext.fsGroupChangePolicy: Unsupported value: \"Never\": supported values: \"Always\", \"OnRootMismatch\"",
            ],
        ),
    ]);
}

#[test]
fn volumes_and_mounts() {
    check(vec![
        (
            with_spec(json!({"volumes": [{"name": "v"}, {"name": "w", "emptyDir": {}, "secret": {"secretName": "s"}}]})),
            vec![
                "spec.volumes[0]: Required value: must specify a volume type",
                "spec.volumes[1].secret: Forbidden: may not specify more than 1 volume type",
            ],
        ),
        (
            with_spec(json!({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}},
                {"name": "Bad_Name", "configMap": {"name": ""}}]})),
            vec![
                "spec.volumes[1].name: Duplicate value: \"v\"",
                "spec.volumes[2].configMap.name: Required value",
                "spec.volumes[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ],
        ),
        (
            with_spec(json!({"serviceAccountName": "sa", "volumes": [
                {"name": "a", "hostPath": {"path": "/x/../etc", "type": "Dir"}},
                {"name": "b", "persistentVolumeClaim": {}},
                {"name": "c", "secret": {"secretName": "s", "defaultMode": 1000,
                    "items": [{"key": "k", "path": "/abs"}]}},
                {"name": "d", "projected": {"sources": [{"secret": {"name": "s"}, "configMap": {"name": "c"}},
                    {"serviceAccountToken": {"path": "t", "expirationSeconds": 60}}]}}]})),
            vec![
                "spec.volumes[0].hostPath.path: Invalid value: \"/x/../etc\": must not contain '..'",
                "spec.volumes[0].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
                "spec.volumes[1].persistentVolumeClaim.claimName: Required value",
                "spec.volumes[2].secret.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.volumes[2].secret.items[0].path: Invalid value: \"/abs\": must be a relative path",
                "spec.volumes[3].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
                "spec.volumes[3].projected.sources[1].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
            ],
        ),
        (
            with_spec(json!({"volumes": [{"name": "data", "emptyDir": {}}],
                "containers": [{"name": "a", "image": "x", "volumeMounts": [
                    {"name": "missing", "mountPath": "/m"},
                    {"name": "data", "mountPath": "/m"},
                    {"name": "data", "mountPath": "", "subPath": "../up"}]}]})),
            vec![
                "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/m\": must be unique",
                "spec.containers[0].volumeMounts[2].mountPath: Required value",
                "spec.containers[0].volumeMounts.subPath: Invalid value: \"../up\": must not contain '..'",
            ],
        ),
        (
            with_spec(json!({"volumes": [{"name": "t", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}}]}}]})),
            vec!["spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set"],
        ),
    ]);
}

#[test]
fn pod_level_fields() {
    check(vec![
        (
            with_spec(json!({"restartPolicy": "Sometimes", "dnsPolicy": "Google"})),
            vec![
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Unsupported value: \"Google\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            ],
        ),
        (
            with_spec(json!({"dnsPolicy": "None"})),
            vec!["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"],
        ),
        (
            with_spec(json!({"activeDeadlineSeconds": 0, "priorityClassName": "High", "hostname": "a.b"})),
            vec![
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
                "spec.hostname: Invalid value: \"a.b\": must not contain dots",
                "spec.priorityClassName: Invalid value: \"High\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ],
        ),
        (
            with_spec(json!({"tolerations": [{"operator": "Equal", "value": "x"},
                {"key": "k", "operator": "Exists", "value": "v", "effect": "NoExecute"},
                {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]})),
            vec![
                "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "spec.tolerations[1].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
                "spec.tolerations[2].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
            ],
        ),
        (
            with_spec(json!({"topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})),
            vec![
                "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
                "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Maybe\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
                "spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"",
            ],
        ),
        (
            with_spec(json!({"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In"}, {"key": "zone", "operator": "Near", "values": ["a"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}}})),
            vec![
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].operator: Invalid value: \"Near\": not a valid selector operator",
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            ],
        ),
        (
            with_spec(json!({"hostAliases": [{"ip": "not-an-ip", "hostnames": ["ok"]}],
                "nodeSelector": {"bad key": "v"}})),
            vec![
                "spec.nodeSelector: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.hostAliases[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ],
        ),
    ]);
}

#[test]
fn templates_check_metadata_and_forbid_ephemeral_containers() {
    let template = json!({"template": {"metadata": {"labels": {"app": "a b"}}, "spec": {
        "containers": [{"name": "c", "image": " x"}],
        "ephemeralContainers": [{"name": "e", "image": "x"}]}}});
    let errs: Vec<String> = validate_pod_template(&template)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0]
        .starts_with("template.metadata.labels: Invalid value: \"a b\": a valid label must be"));
    assert_eq!(
        errs[1],
        "template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"
    );
}

#[test]
fn ephemeral_containers_keep_to_their_fields() {
    let pod = json!({"spec": {"containers": [{"name": "app", "image": "x"}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox", "targetContainerName": "nope",
            "ports": [{"containerPort": 80}], "resources": {}}, {"name": "app", "image": "x"}]}});
    assert_eq!(
        messages(&pod),
        [
            "spec.ephemeralContainers[0].targetContainerName: Not found: \"nope\"",
            "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
            "spec.ephemeralContainers[1].name: Duplicate value: \"app\"",
        ]
    );
}

#[test]
fn ephemeral_containers_are_refused_only_on_create() {
    let pod = with_spec(json!({"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}));
    let errs: Vec<String> = validate_pod_create(&pod)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        ["spec.ephemeralContainers: Forbidden: cannot be set on create"]
    );
    assert!(messages(&pod).is_empty(), "{:?}", messages(&pod));
    assert!(validate_pod_create(&with_spec(json!({"ephemeralContainers": []}))).is_empty());
}

#[test]
fn odd_input_never_panics() {
    for spec in [
        json!(null),
        json!("spec"),
        json!({"containers": "x", "volumes": 3}),
        json!({"containers": [null, 1, {"ports": [null], "env": [{"valueFrom": 1}],
            "resources": {"limits": {"cpu": "x"}, "requests": {"cpu": []}},
            "livenessProbe": {"httpGet": {"port": {}}}}]}),
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
            "tolerations": [null], "topologySpreadConstraints": [{"maxSkew": "x"}]}),
    ] {
        validate_pod(&json!({"spec": spec}));
    }
}
