//! Pod spec validation through kubectl: manifests with the mistakes users
//! make (a bad port, a probe with two handlers, limits below requests, a
//! mount of a missing volume, block devices, resize policies, resource
//! claims, pod-level resources, Windows-only rules) are refused with
//! upstream's messages; privileged containers need `--allow-privileged`;
//! realistic pods and workloads, as kubectl builds them, are accepted.

use crate::harness::TestServer;

pub(crate) fn refused(s: &TestServer, yaml: &str) -> String {
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success(), "created: {yaml}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub(crate) fn assert_has(err: &str, lines: &[&str]) {
    for line in lines {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
}

const BAD_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - name: app
    image: nginx
    ports: [{containerPort: 0}, {containerPort: 80, protocol: TPC}]
    livenessProbe:
      exec: {command: [cat, /ok]}
      httpGet: {path: /, port: 80}
    resources:
      requests: {cpu: "2", memory: 64Mi}
      limits: {cpu: 500m, memory: 64Mi}
    volumeMounts: [{name: data, mountPath: /data}]
"#;

#[test]
fn user_mistakes_are_refused_with_upstream_messages() {
    let s = TestServer::start();
    let err = refused(&s, BAD_POD);
    assert_has(
        &err,
        &[
            "The Pod \"bad\" is invalid:",
            "spec.containers[0].ports[0].containerPort: Required value",
            "spec.containers[0].ports[1].protocol: Unsupported value: \"TPC\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
            "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 500m",
            "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
        ],
    );

    let port = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: nginx, ports: [{containerPort: 70000}]}]\n";
    assert_has(
        &refused(&s, port),
        &["The Pod \"p\" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
    );

    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Always\n      containers: [{name: c, image: busybox}]\n";
    assert_has(
        &refused(&s, job),
        &["spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""],
    );

    let rc = "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc}\nspec:\n  selector: {app: web}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      containers: [{name: c, image: nginx, env: [{name: A, valueFrom: {}}]}]\n";
    assert_has(
        &refused(&s, rc),
        &[
            "spec.template.metadata.labels: Invalid value: {\"app\":\"db\"}: `selector` does not match template `labels`",
            "spec.template.spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ],
    );

    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      volumes: [{name: v, emptyDir: {}, secret: {secretName: s}}]\n      containers: [{name: c, image: nginx, readinessProbe: {periodSeconds: 5}}]\n";
    assert_has(
        &refused(&s, deploy),
        &[
            "spec.template.spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type",
            "spec.template.spec.containers[0].readinessProbe: Required value: must specify a handler type",
        ],
    );

    let cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: every minute\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers: [{name: c, image: busybox}]\n";
    assert_has(
        &refused(&s, cron),
        &["spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]"],
    );
}

const GOOD_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  serviceAccountName: default
  securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000, seccompProfile: {type: RuntimeDefault}}
  initContainers:
  - {name: init, image: busybox, command: ["sh", "-c", "true"]}
  containers:
  - name: app
    image: nginx:1.25
    ports: [{name: http, containerPort: 8080}]
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: db, key: password, optional: true}}}
    envFrom: [{configMapRef: {name: settings, optional: true}}]
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: "1", memory: 128Mi}}
    livenessProbe: {httpGet: {path: /healthz, port: http}, initialDelaySeconds: 5, periodSeconds: 10}
    readinessProbe: {tcpSocket: {port: 8080}, successThreshold: 2}
    startupProbe: {exec: {command: [cat, /tmp/started]}, failureThreshold: 30}
    lifecycle: {preStop: {exec: {command: [nginx, -s, quit]}}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts:
    - {name: token, mountPath: /var/run/secrets/tokens, readOnly: true}
    - {name: cache, mountPath: /cache}
    - {name: podinfo, mountPath: /etc/podinfo}
  volumes:
  - name: token
    projected:
      sources:
      - serviceAccountToken: {path: token, expirationSeconds: 3600, audience: vault}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
  - {name: cache, emptyDir: {sizeLimit: 1Gi}}
  - name: podinfo
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  tolerations: [{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm: {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}}}
"#;

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: db, image: postgres:16, ports: [{containerPort: 5432}], volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      hostNetwork: true
      tolerations: [{operator: Exists}]
      containers:
      - {name: agent, image: agent, ports: [{containerPort: 9100, hostPort: 9100}]}
      volumes: [{name: proc, hostPath: {path: /proc, type: Directory}}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: PodTemplate
metadata: {name: tmpl}
template:
  metadata: {labels: {app: t}}
  spec:
    containers: [{name: c, image: nginx}]
"#;

#[test]
fn realistic_pods_and_workloads_are_accepted() {
    let s = TestServer::start();
    s.apply_yaml(GOOD_POD);
    s.apply_yaml(WORKLOADS);
    s.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--port=80",
        "--replicas=2",
    ]);
    s.ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "--",
        "date",
    ]);
    s.ok(&[
        "create",
        "job",
        "once",
        "--image=busybox",
        "--",
        "echo",
        "hi",
    ]);
    s.ok(&[
        "run",
        "solo",
        "--image=nginx",
        "--port=80",
        "--env=A=B",
        "--labels=app=solo",
    ]);
    s.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    s.ok(&[
        "set",
        "resources",
        "deployment/web",
        "--limits=cpu=200m,memory=512Mi",
    ]);
    let err = s.fails(&[
        "set",
        "resources",
        "deployment/web",
        "--requests=cpu=1",
        "--limits=cpu=500m",
    ]);
    assert_has(
        &err,
        &["spec.template.spec.containers[0].resources.requests: Invalid value: \"1\": must be less than or equal to cpu limit of 500m"],
    );
}

#[test]
fn persistent_volume_sources_are_fixed() {
    let s = TestServer::start();
    s.apply_yaml("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /data}\n");
    s.ok(&[
        "patch",
        "pv",
        "pv",
        "-p",
        r#"{"spec":{"capacity":{"storage":"2Gi"}}}"#,
    ]);
    let err = s.fails(&[
        "patch",
        "pv",
        "pv",
        "-p",
        r#"{"spec":{"hostPath":{"path":"/other"}}}"#,
    ]);
    assert_has(
        &err,
        &["The PersistentVolume \"pv\" is invalid: spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"],
    );
}

const PRIVILEGED_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: priv}\nspec:\n  initContainers: [{name: i, image: busybox, securityContext: {privileged: true}}]\n  containers: [{name: c, image: nginx, securityContext: {privileged: true}}]\n";

#[test]
fn privileged_containers_need_allow_privileged() {
    let s = TestServer::start();
    assert_has(
        &refused(&s, PRIVILEGED_POD),
        &[
            "spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
            "spec.initContainers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
        ],
    );
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: c, image: nginx, securityContext: {privileged: true}}]\n";
    assert_has(
        &refused(&s, deploy),
        &["spec.template.spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy"],
    );

    assert_has(
        &refused(&s, HOST_PROCESS_POD),
        &["spec: Forbidden: hostProcess containers are disallowed by cluster policy"],
    );

    let allowed = TestServer::start_with(&["--allow-privileged=true"]);
    for pod in [PRIVILEGED_POD, HOST_PROCESS_POD] {
        let out = allowed.kubectl_stdin(&["create", "-f", "-"], pod);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Every container of a HostProcess pod is one (containers inherit the
    // pod's setting), and the pod uses the host network.
    let partial = "apiVersion: v1\nkind: Pod\nmetadata: {name: hp2}\nspec:\n  containers:\n  - {name: plain, image: nanoserver}\n  - {name: c, image: nanoserver, securityContext: {windowsOptions: {hostProcess: true}}}\n";
    assert_has(
        &refused(&allowed, partial),
        &[
            "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
            "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
        ],
    );
}

const HOST_PROCESS_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: hp}\nspec:\n  os: {name: windows}\n  hostNetwork: true\n  securityContext: {windowsOptions: {hostProcess: true, runAsUserName: \"NT AUTHORITY\\\\SYSTEM\"}}\n  containers: [{name: c, image: nanoserver}]\n";

const BLOCK_AND_CLAIMS_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: block}
spec:
  restartPolicy: Never
  resourceClaims:
  - {name: gpu, resourceClaimName: a, resourceClaimTemplateName: b}
  volumes:
  - {name: disk, persistentVolumeClaim: {claimName: disk}}
  - {name: cache, emptyDir: {}}
  containers:
  - name: app
    image: nginx
    volumeMounts: [{name: disk, mountPath: /data}]
    volumeDevices: [{name: cache, devicePath: /dev/xvda}, {name: disk, devicePath: /data}]
    resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}, {resourceName: cpu, restartPolicy: NotRequired}]
    resources:
      claims: [{name: tpu}]
"#;

const POD_LEVEL_POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: level}
spec:
  resources:
    requests: {cpu: 500m, ephemeral-storage: 1Gi}
    limits: {cpu: "1", memory: 256Mi}
  containers:
  - name: app
    image: nginx
    resources:
      requests: {cpu: 750m}
      limits: {memory: 512Mi}
"#;

const WINDOWS_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: win}\nspec:\n  os: {name: windows}\n  hostPID: true\n  securityContext: {runAsUser: 1000}\n  containers: [{name: c, image: nanoserver, securityContext: {privileged: false}}]\n";

#[test]
fn devices_resize_policies_claims_pod_resources_and_os_rules() {
    let s = TestServer::start();
    assert_has(
        &refused(&s, BLOCK_AND_CLAIMS_POD),
        &[
            "The Pod \"block\" is invalid:",
            "spec.resourceClaims[0]: Invalid value: {\"name\":\"gpu\",\"resourceClaimName\":\"a\",\"resourceClaimTemplateName\":\"b\"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            "spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/data\": must not already exist as a path in volumeDevices",
            "spec.containers[0].volumeDevices[0].name: Invalid value: \"cache\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            "spec.containers[0].volumeDevices[1].name: Invalid value: \"disk\": must not already exist in volumeMounts",
            "spec.containers[0].resources.claims[0]: Not found: \"tpu\": must be one of the names in pod.spec.resourceClaims: gpu",
            "spec.containers[0].resizePolicy[1]: Duplicate value: \"cpu\"",
            "spec.containers[0].resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'",
        ],
    );
    assert_has(
        &refused(&s, POD_LEVEL_POD),
        &[
            "spec.resources.requests[ephemeral-storage]: Unsupported value: \"ephemeral-storage\": supported values: \"cpu\", \"hugepages-\", \"memory\"",
            "spec.resources.requests[cpu]: Invalid value: \"500m\": must be greater than or equal to aggregate container requests of 750m",
            "spec.resources.containers[0][memory].limits: Invalid value: \"512Mi\": must be less than or equal to pod limits of 256Mi",
        ],
    );
    assert_has(
        &refused(&s, WINDOWS_POD),
        &[
            "spec.hostPID: Forbidden: cannot be set for a windows pod",
            "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
            "spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
        ],
    );
    // The same pods without their mistakes are created.
    let windows = "apiVersion: v1\nkind: Pod\nmetadata: {name: win}\nspec:\n  os: {name: windows}\n  securityContext: {windowsOptions: {runAsUserName: ContainerUser}}\n  containers: [{name: c, image: nanoserver}]\n";
    s.apply_yaml(windows);
    let level = "apiVersion: v1\nkind: Pod\nmetadata: {name: level}\nspec:\n  resources: {requests: {cpu: 500m}, limits: {cpu: \"1\"}}\n  containers: [{name: app, image: nginx, resources: {requests: {cpu: 250m}}, resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]}]\n";
    s.apply_yaml(level);
}
