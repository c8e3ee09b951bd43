//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/core`: endpoints, persistent volumes, pod templates,
//! replication controllers, resource quotas, controller revisions, leases,
//! runtime classes, priority classes, HPAs (v2 and v1) and the
//! certificates kinds, as real kubectl prints them, plus the raw Table's
//! column definitions.

use serde_json::Value;

use crate::harness::TestServer;
use crate::support::pki::csr_request;
use crate::support::tables::table_body;

/// The cells of `row` cut at the column starts of `header` (kubectl pads
/// every column to a common start, so an empty cell stays in place).
fn cells(header: &str, row: &str) -> Vec<String> {
    let mut starts = vec![0];
    for (i, w) in header.as_bytes().windows(3).enumerate() {
        if matches!(w, [b' ', b' ', c] if *c != b' ') {
            starts.push(i + 2);
        }
    }
    let mut out = Vec::with_capacity(starts.len());
    for (n, &start) in starts.iter().enumerate() {
        let end = starts
            .get(n + 1)
            .copied()
            .unwrap_or(row.len())
            .min(row.len());
        out.push(row.get(start.min(end)..end).unwrap_or("").trim().to_owned());
    }
    out
}

/// Runs `kubectl get` and returns the header and the cells of the row
/// whose first cell is `name`, with the AGE cell (if any) replaced by
/// "AGE" once it is checked to be a short age.
fn get(s: &TestServer, args: &[&str], name: &str) -> (String, Vec<String>) {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    let out = s.ok(&all);
    let mut lines = out.lines();
    let header = lines.next().unwrap_or("").trim_end().to_owned();
    let row = lines
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{out}"));
    let mut row_cells = cells(&header, row);
    let titles = cells(&header, &header);
    for (cell, title) in row_cells.iter_mut().zip(titles) {
        if title == "AGE" {
            assert!(
                cell.ends_with('s') && cell.len() <= 4,
                "age {cell:?} in:\n{out}"
            );
            *cell = "AGE".into();
        }
    }
    (header, row_cells)
}

fn words(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// A raw Table GET of `path`, as kubectl asks for it.
fn table(s: &TestServer, path: &str) -> Value {
    let body = table_body(s, path);
    serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&body));
    })
}

/// `(name, type, format, priority)` of each column definition.
fn definitions(t: &Value) -> Vec<(String, String, String, u64)> {
    t["columnDefinitions"]
        .as_array()
        .map(|cols| {
            cols.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_owned(),
                        c["type"].as_str().unwrap_or("").to_owned(),
                        c["format"].as_str().unwrap_or("").to_owned(),
                        c["priority"].as_u64().unwrap_or(9),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn def(name: &str, kind: &str, format: &str, priority: u64) -> (String, String, String, u64) {
    (name.into(), kind.into(), format.into(), priority)
}

const CORE: &str = r#"
apiVersion: v1
kind: PodTemplate
metadata: {name: tmpl}
template:
  metadata: {labels: {tier: web, app: demo}}
  spec: {containers: [{name: a, image: nginx}, {name: b, image: busybox}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 2
  selector: {app: rc, tier: web}
  template:
    metadata: {labels: {app: rc, tier: web}}
    spec: {containers: [{name: web, image: "nginx:1.25"}, {name: log, image: busybox}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: ep}
subsets:
- addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]
  ports: [{name: http, port: 80}, {name: https, port: 443}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  capacity: {storage: 1024Mi}
  accessModes: [ReadOnlyMany, ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: fast
  volumeMode: Block
  hostPath: {path: /tmp/pv1}
  claimRef: {namespace: default, name: data}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota}
spec:
  hard: {pods: "10", limits.cpu: "2", requests.memory: 1Gi}
"#;

#[test]
fn core_kinds_print_upstream_columns() {
    let s = TestServer::start();
    s.apply_yaml(CORE);
    s.ok(&[
        "patch",
        "pv",
        "pv1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Available"}}"#,
    ]);
    // The quota controller records what the namespace's pods use.
    s.apply_yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: sized}\nspec:\n  containers:\n  - {name: c, image: nginx, resources: {limits: {cpu: 500m}, requests: {memory: 64Mi}}}\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let used = |s: &TestServer| {
        s.ok(&[
            "get",
            "quota",
            "quota",
            "-o",
            "jsonpath={.status.used.pods}",
        ])
    };
    while used(&s) != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "quota usage not recorded"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let (header, row) = get(&s, &["podtemplates"], "tmpl");
    assert_eq!(header, "NAME   CONTAINERS   IMAGES          POD LABELS");
    assert_eq!(
        row,
        words(&["tmpl", "a,b", "nginx,busybox", "app=demo,tier=web"])
    );

    let (header, row) = get(&s, &["rc"], "rc");
    assert_eq!(header, "NAME   DESIRED   CURRENT   READY   AGE");
    assert_eq!(row, words(&["rc", "2", "0", "0", "AGE"]));
    let (header, row) = get(&s, &["rc", "-o", "wide"], "rc");
    assert!(
        header.ends_with("AGE   CONTAINERS   IMAGES               SELECTOR"),
        "{header}"
    );
    assert_eq!(
        row,
        words(&[
            "rc",
            "2",
            "0",
            "0",
            "AGE",
            "web,log",
            "nginx:1.25,busybox",
            "app=rc,tier=web"
        ])
    );

    let (header, row) = get(&s, &["endpoints"], "ep");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "ENDPOINTS", "AGE"]
    );
    assert_eq!(
        row,
        words(&[
            "ep",
            "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
            "AGE"
        ])
    );

    let (header, row) = get(&s, &["pv"], "pv1");
    assert_eq!(
        header,
        "NAME   CAPACITY   ACCESS MODES   RECLAIM POLICY   STATUS      CLAIM          \
         STORAGECLASS   VOLUMEATTRIBUTESCLASS   REASON   AGE"
    );
    assert_eq!(
        row,
        words(&[
            "pv1",
            "1Gi",
            "RWO,ROX",
            "Retain",
            "Available",
            "default/data",
            "fast",
            "<unset>",
            "",
            "AGE"
        ])
    );
    let (header, row) = get(&s, &["pv", "-o", "wide"], "pv1");
    assert!(header.ends_with("REASON   AGE   VOLUMEMODE"), "{header}");
    assert_eq!(row.last().map(String::as_str), Some("Block"));

    let (header, row) = get(&s, &["quota"], "quota");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "REQUEST", "LIMIT", "AGE"]
    );
    assert_eq!(
        row,
        words(&[
            "quota",
            "pods: 1/10, requests.memory: 64Mi/1Gi",
            "limits.cpu: 500m/2",
            "AGE"
        ])
    );

    // The raw Table: types, formats and which columns are wide.
    let t = table(&s, "/api/v1/namespaces/default/replicationcontrollers");
    assert_eq!(
        definitions(&t),
        [
            def("Name", "string", "name", 0),
            def("Desired", "integer", "", 0),
            def("Current", "integer", "", 0),
            def("Ready", "integer", "", 0),
            def("Age", "string", "", 0),
            def("Containers", "string", "", 1),
            def("Images", "string", "", 1),
            def("Selector", "string", "", 1),
        ]
    );
    assert_eq!(t["rows"][0]["cells"][1], 2, "{t}");
    // LimitRanges have no printer upstream: the default table.
    let t = table(&s, "/api/v1/namespaces/default/limitranges");
    assert_eq!(
        definitions(&t),
        [
            def("Name", "string", "name", 0),
            def("Created At", "date", "", 0)
        ]
    );
}

const CLUSTER: &str = r#"
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lock}
spec: {holderIdentity: node-a, leaseDurationSeconds: 15}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: false
preemptionPolicy: Never
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 1024Mi}}
  - type: Pods
    pods: {metric: {name: qps}, target: {type: AverageValue, averageValue: 1k}}
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: old}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  targetCPUUtilizationPercentage: 50
"#;

fn csr_yaml() -> String {
    let request = csr_request("alice", &[]);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: req1}}\nspec:\n  request: {request}\n  signerName: example.com/signer\n  expirationSeconds: 5400\n  usages: [digital signature]\n"
    )
}

fn bundle_yaml(s: &TestServer) -> String {
    let ca = std::fs::read_to_string(s.dir.path().join("pki/ca.crt")).expect("ca");
    let indented: String = ca.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: ClusterTrustBundle\nmetadata: {{name: plain-bundle}}\nspec:\n  trustBundle: |\n{indented}"
    )
}

#[test]
fn cluster_kinds_print_upstream_columns() {
    let s = TestServer::start();
    s.ok(&["create", "deployment", "web", "--image=nginx"]);
    s.apply_yaml(CLUSTER);

    let (header, row) = get(&s, &["lease", "lock"], "lock");
    assert_eq!(header, "NAME   HOLDER   AGE");
    assert_eq!(row, words(&["lock", "node-a", "AGE"]));

    let (header, row) = get(&s, &["runtimeclass"], "gvisor");
    assert_eq!(header, "NAME     HANDLER   AGE");
    assert_eq!(row, words(&["gvisor", "runsc", "AGE"]));

    let (header, row) = get(&s, &["priorityclass"], "high");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    );
    assert_eq!(row, words(&["high", "1000", "false", "AGE", "Never"]));
    let t = table(&s, "/apis/scheduling.k8s.io/v1/priorityclasses/high");
    assert_eq!(t["columnDefinitions"][2]["type"], "boolean", "{t}");
    assert_eq!(t["rows"][0]["cells"][2], false, "{t}");

    let (header, row) = get(&s, &["hpa"], "web");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    assert_eq!(
        row,
        words(&[
            "web",
            "Deployment/web",
            "cpu: <unknown>/70%, memory: <unknown>/1Gi + 1 more...",
            "2",
            "5",
            "0",
            "AGE"
        ])
    );
    // The same HPAs read at autoscaling/v1 print the same cells.
    for name in ["web", "old"] {
        let (_, v2) = get(&s, &["horizontalpodautoscalers.v2.autoscaling"], name);
        let (_, v1) = get(&s, &["horizontalpodautoscalers.v1.autoscaling"], name);
        assert_eq!(v1, v2);
    }
    let (_, old) = get(&s, &["hpa"], "old");
    assert_eq!(
        old,
        words(&[
            "old",
            "Deployment/web",
            "cpu: <unknown>/50%",
            "1",
            "3",
            "0",
            "AGE"
        ])
    );
    let t = table(
        &s,
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/old",
    );
    let types: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|d| d["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["string"; 7], "{t}");
    assert_eq!(t["rows"][0]["cells"][4], 3, "{t}");

    // A controller revision names its controlling owner.
    let uid = s.ok(&["get", "deploy", "web", "-o", "jsonpath={.metadata.uid}"]);
    s.apply_yaml(&format!(
        "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata:\n  name: rev2\n  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: web, uid: \"{uid}\", controller: true}}]\nrevision: 7\ndata: {{}}\n---\napiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {{name: rev1}}\nrevision: 3\n"
    ));
    let (header, row) = get(&s, &["controllerrevisions"], "rev2");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "CONTROLLER", "REVISION", "AGE"]
    );
    assert_eq!(row, words(&["rev2", "deployment.apps/web", "7", "AGE"]));
    let (_, row) = get(&s, &["controllerrevisions"], "rev1");
    assert_eq!(row, words(&["rev1", "<none>", "3", "AGE"]));

    s.apply_yaml(&csr_yaml());
    s.ok(&["certificate", "approve", "req1"]);
    let (header, row) = get(&s, &["csr"], "req1");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    // The requestor cell (spec.username) is left out: it is the strategy's.
    assert_eq!(
        [&row[..3], &row[4..]].concat(),
        words(&["req1", "AGE", "example.com/signer", "90m", "Approved"])
    );

    s.apply_yaml(&bundle_yaml(&s));
    let (header, row) = get(&s, &["clustertrustbundles"], "plain-bundle");
    assert_eq!(header, "NAME           SIGNERNAME");
    assert_eq!(row, words(&["plain-bundle", "<none>"]));
    let t = table(&s, "/apis/certificates.k8s.io/v1/clustertrustbundles");
    assert_eq!(
        definitions(&t),
        [
            def("Name", "string", "name", 0),
            def("SignerName", "string", "", 0)
        ]
    );
}
