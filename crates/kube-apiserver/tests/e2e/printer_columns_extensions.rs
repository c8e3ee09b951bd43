//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/extensions`: flowcontrol, admissionregistration,
//! resource.k8s.io, APIServices and CRDs (plus events.k8s.io Events, which
//! share the core Event printer) — what real kubectl prints, and the raw
//! Table's column definitions.

use std::time::Duration;

use serde_json::Value;

use crate::harness::TestServer;
use crate::support::tables::{raw_table, table};
use crate::support::wait::eventually;

/// How long the server's background work may take here.
const WAIT: Duration = Duration::from_secs(30);

const FLOWCONTROL: &str = r#"
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: pl-queued}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 7
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 20}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: pl-reject}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 3
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: fs-users}
spec:
  priorityLevelConfiguration: {name: pl-queued}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: team-a}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["/healthz/team-a"]}]
"#;

const ADMISSION: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: two-hooks}
webhooks:
- name: a.example.com
  clientConfig: {url: "https://hooks.example.com/a"}
  rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}]
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Ignore
- name: b.example.com
  clientConfig: {url: "https://hooks.example.com/b"}
  rules: [{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}]
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Ignore
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: no-hooks}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}
  validations:
  - expression: "true"
  - expression: "object.metadata.name != 'x'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: by-name}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits, namespace: team-a, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: by-selector}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef:
    selector: {matchLabels: {tier: web}}
    parameterNotFoundAction: Allow
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: labeller}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"a": "b"}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: labeller-binding}
spec:
  policyName: labeller
"#;

const RESOURCES: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: claim-1}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu-template}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  nodeName: node-1
  driver: gpu.example.com
  pool: {name: pool-a, generation: 1, resourceSliceCount: 1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: shared-net}
spec:
  allNodes: true
  driver: net.example.com
  pool: {name: fabric, generation: 1, resourceSliceCount: 1}
"#;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd, wdg]}
  versions:
  - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  - {name: v2, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v0, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
"#;

const AGGREGATED_AND_EVENTS: &str = r#"
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.example.com}
spec:
  group: metrics.example.com
  version: v1beta1
  service: {namespace: kube-system, name: metrics-server}
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web.1}
eventTime: "2020-01-01T00:00:00.000000Z"
reportingController: example.com/controller
reportingInstance: controller-0
action: Scale
reason: Scaled
type: Normal
note: "  scaled up  "
regarding: {kind: Deployment, namespace: default, name: web}
"#;

/// Whether a cell is a short age such as `3s` or `1m5s`.
fn is_age(cell: &str) -> bool {
    cell.ends_with('s')
        && cell[..cell.len() - 1]
            .chars()
            .all(|c| c.is_ascii_alphanumeric())
}

/// Checks a row whose cell at `age` is an age and whose others are `want`.
fn assert_row(row: &[String], age: usize, want: &[&str]) {
    let mut rest = row.to_vec();
    assert!(age < rest.len(), "no age cell in {row:?}");
    let cell = rest.remove(age);
    assert!(is_age(&cell), "age cell {cell:?} in {row:?}");
    assert_eq!(rest, want, "row {row:?}");
}

/// `(name, type, format, priority)` of each column definition.
fn definitions(table: &Value) -> Vec<(String, String, String, u64)> {
    table["columnDefinitions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_owned(),
                c["type"].as_str().unwrap_or("").to_owned(),
                c["format"].as_str().unwrap_or("").to_owned(),
                c["priority"].as_u64().unwrap_or(9),
            )
        })
        .collect()
}

fn column(name: &str, kind: &str, format: &str, priority: u64) -> (String, String, String, u64) {
    (name.into(), kind.into(), format.into(), priority)
}

#[test]
fn flowcontrol_kinds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(FLOWCONTROL);

    // The configuration consumer marks the schema's level as found.
    eventually("the Dangling condition", WAIT, || {
        table(&s, &["flowschemas", "fs-users"])
            .1
            .last()
            .map(String::as_str)
            == Some("False")
    });
    let (header, row) = table(&s, &["flowschemas", "fs-users", "-o", "wide"]);
    assert_eq!(
        header,
        [
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL"
        ]
    );
    assert_row(
        &row,
        4,
        &["fs-users", "pl-queued", "500", "ByUser", "False"],
    );

    let (header, row) = table(&s, &["prioritylevelconfigurations", "pl-queued"]);
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE"
        ]
    );
    assert_row(&row, 6, &["pl-queued", "Limited", "7", "16", "4", "20"]);
    let (_, row) = table(&s, &["prioritylevelconfigurations", "pl-reject"]);
    assert_row(
        &row,
        6,
        &["pl-reject", "Limited", "3", "<none>", "<none>", "<none>"],
    );
    // The bootstrap exempt level is not limited at all.
    let (_, row) = table(&s, &["prioritylevelconfigurations", "exempt"]);
    assert_row(
        &row,
        6,
        &["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"],
    );

    let fs = raw_table(
        &s,
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/fs-users",
    );
    assert_eq!(
        definitions(&fs),
        [
            column("Name", "string", "name", 0),
            column("PriorityLevel", "string", "", 0),
            column("MatchingPrecedence", "string", "", 0),
            column("DistinguisherMethod", "string", "", 0),
            column("Age", "string", "", 0),
            column("MissingPL", "string", "", 0),
        ]
    );
    assert_eq!(fs["rows"][0]["cells"][2], 500);

    // Lists are printed by matching precedence, then name, as upstream.
    let listed = s.ok(&["get", "flowschemas", "--no-headers"]);
    let names: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        names,
        [
            "exempt",
            "probes",
            "system-leader-election",
            "system-node-high",
            "fs-users",
            "system-nodes",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
            "catch-all",
        ]
    );
}

#[test]
fn admission_kinds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(ADMISSION);

    let (header, row) = table(&s, &["validatingwebhookconfigurations", "two-hooks"]);
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"]);
    assert_row(&row, 2, &["two-hooks", "2"]);
    let (header, row) = table(&s, &["mutatingwebhookconfigurations", "no-hooks"]);
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"]);
    assert_row(&row, 2, &["no-hooks", "0"]);

    let (header, row) = table(&s, &["validatingadmissionpolicies", "replica-limit"]);
    assert_eq!(header, ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]);
    assert_row(&row, 3, &["replica-limit", "2", "v1/ConfigMap"]);
    let (header, row) = table(&s, &["mutatingadmissionpolicies", "labeller"]);
    assert_eq!(header, ["NAME", "MUTATIONS", "PARAMKIND", "AGE"]);
    assert_row(&row, 3, &["labeller", "1", "<unset>"]);

    let (header, row) = table(&s, &["validatingadmissionpolicybindings", "by-name"]);
    assert_eq!(header, ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert_row(&row, 3, &["by-name", "replica-limit", "team-a/limits"]);
    let (_, row) = table(&s, &["validatingadmissionpolicybindings", "by-selector"]);
    assert_row(
        &row,
        3,
        &[
            "by-selector",
            "replica-limit",
            "&LabelSelector{MatchLabels:map[string]string{tier: web,},MatchExpressions:[]LabelSelectorRequirement{},}",
        ],
    );
    let (header, row) = table(&s, &["mutatingadmissionpolicybindings", "labeller-binding"]);
    assert_eq!(header, ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert_row(&row, 3, &["labeller-binding", "labeller", "<unset>"]);

    let hooks = raw_table(
        &s,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    );
    assert_eq!(definitions(&hooks)[1], column("Webhooks", "integer", "", 0));
}

#[test]
fn resource_kinds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(RESOURCES);

    let (header, row) = table(&s, &["deviceclasses", "gpu.example.com"]);
    assert_eq!(header, ["NAME", "AGE"]);
    assert_row(&row, 1, &["gpu.example.com"]);
    let (header, row) = table(&s, &["resourceclaimtemplates", "gpu-template"]);
    assert_eq!(header, ["NAME", "AGE"]);
    assert_row(&row, 1, &["gpu-template"]);

    let (header, row) = table(&s, &["resourceclaims", "claim-1"]);
    assert_eq!(header, ["NAME", "STATE", "AGE"]);
    assert_row(&row, 2, &["claim-1", "pending"]);
    let allocated = r#"{"status":{"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.example.com","pool":"pool-a","device":"gpu-0"}]}},"reservedFor":[{"resource":"pods","name":"p","uid":"6b0b3f4e-0000-4000-8000-000000000001"}]}}"#;
    s.ok(&[
        "patch",
        "resourceclaims",
        "claim-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        allocated,
    ]);
    let (_, row) = table(&s, &["resourceclaims", "claim-1"]);
    assert_row(&row, 2, &["claim-1", "allocated,reserved"]);

    let (header, row) = table(&s, &["resourceslices", "node-1-gpu"]);
    assert_eq!(header, ["NAME", "NODE", "DRIVER", "POOL", "AGE"]);
    assert_row(
        &row,
        4,
        &["node-1-gpu", "node-1", "gpu.example.com", "pool-a"],
    );
    // No node: the cell is null, which kubectl leaves blank.
    let (_, row) = table(&s, &["resourceslices", "shared-net"]);
    assert_row(&row, 3, &["shared-net", "net.example.com", "fabric"]);
    let slice = raw_table(&s, "/apis/resource.k8s.io/v1/resourceslices/shared-net");
    assert_eq!(slice["rows"][0]["cells"][1], Value::Null);
}

#[test]
fn crds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(CRD);

    eventually("the CRD to be established", WAIT, || {
        table(&s, &["crds", "widgets.example.com", "-o", "wide"])
            .1
            .last()
            .map(String::as_str)
            == Some("true")
    });
    let (header, row) = table(&s, &["crds", "widgets.example.com", "-o", "wide"]);
    assert_eq!(
        header,
        [
            "NAME",
            "SCOPE",
            "VERSIONS",
            "CREATED AT",
            "GROUP",
            "KIND",
            "SHORTNAMES",
            "ESTABLISHED"
        ]
    );
    let created = s.ok(&[
        "get",
        "crd",
        "widgets.example.com",
        "-o",
        "jsonpath={.metadata.creationTimestamp}",
    ]);
    assert_eq!(
        row,
        [
            "widgets.example.com",
            "Namespaced",
            "v1,v2(storage)",
            created.as_str(),
            "example.com",
            "Widget",
            "wd,wdg",
            "true"
        ]
    );
    let crd = raw_table(
        &s,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    );
    assert_eq!(
        definitions(&crd)[3..],
        [
            column("Created At", "date", "", 0),
            column("Group", "string", "", 1),
            column("Kind", "string", "", 1),
            column("ShortNames", "string", "", 1),
            column("Established", "boolean", "", 1),
        ]
    );
}

#[test]
fn api_service_and_event_kinds_print_upstreams_columns() {
    let s = TestServer::start();
    s.apply_yaml(AGGREGATED_AND_EVENTS);

    let (header, row) = table(&s, &["apiservices", "v1beta1.metrics.example.com"]);
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    assert_eq!(
        row[..2],
        ["v1beta1.metrics.example.com", "kube-system/metrics-server"]
    );
    // The Available condition carries its reason unless it is True: the
    // aggregator finds no Service behind this one.
    let mut row = Vec::new();
    eventually("the APIService's condition", WAIT, || {
        row = table(&s, &["apiservices", "v1beta1.metrics.example.com"]).1;
        row.get(2).is_some_and(|c| c == "False (ServiceNotFound)")
    });
    assert_row(
        &row,
        3,
        &[
            "v1beta1.metrics.example.com",
            "kube-system/metrics-server",
            "False (ServiceNotFound)",
        ],
    );
    let (_, row) = table(&s, &["apiservices", "v1.apps"]);
    assert_eq!(row[..2], ["v1.apps", "Local"]);
    // Local APIServices are marked available by the server itself.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while table(&s, &["apiservices", "v1.apps"]).1[2] != "True" {
        assert!(
            std::time::Instant::now() < deadline,
            "v1.apps never became available"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    let (header, row) = table(&s, &["events.v1.events.k8s.io", "web.1", "-o", "wide"]);
    assert_eq!(
        header,
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ]
    );
    // The subobject is empty, which kubectl leaves blank.
    assert!(row[0].contains('y'), "last seen {row:?}");
    assert_eq!(
        row[1..6],
        [
            "Normal",
            "Scaled",
            "deployment/web",
            "example.com/controller, controller-0",
            "scaled up"
        ]
    );
    assert_eq!(row[6], row[0], "first seen {row:?}");
    assert_eq!(row[7..], ["1", "web.1"]);
}
