//! Printers of flowcontrol (FlowSchema, PriorityLevelConfiguration),
//! admissionregistration (webhook configurations, validating and mutating
//! admission policies and their bindings), resource.k8s.io (DeviceClass,
//! ResourceClaim, ResourceClaimTemplate, ResourceSlice), apiregistration
//! (APIService, as kube-aggregator's table convertor) and apiextensions
//! (CustomResourceDefinition, as apiextensions-apiserver's table
//! convertor). events.k8s.io Events share the core printer in `workloads`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};

use super::{age_cell, count, int, name_cell, string, text, Printer, TableColumn};
use super::{integer, AGE_COLUMN, NAME_COLUMN};
use apiserver::registry::rest::table::CREATION_TIMESTAMP_DESCRIPTION;

pub const PRINTERS: &[Printer] = &[
    printer(
        FLOWCONTROL,
        "FlowSchema",
        flow_schema_columns,
        flow_schema_row,
    ),
    printer(
        FLOWCONTROL,
        "PriorityLevelConfiguration",
        priority_level_columns,
        priority_level_row,
    ),
    printer(
        ADMISSION,
        "MutatingWebhookConfiguration",
        webhook_columns,
        webhook_row,
    ),
    printer(
        ADMISSION,
        "ValidatingWebhookConfiguration",
        webhook_columns,
        webhook_row,
    ),
    printer(
        ADMISSION,
        "ValidatingAdmissionPolicy",
        validating_policy_columns,
        validating_policy_row,
    ),
    printer(
        ADMISSION,
        "ValidatingAdmissionPolicyBinding",
        binding_columns,
        binding_row,
    ),
    printer(
        ADMISSION,
        "MutatingAdmissionPolicy",
        mutating_policy_columns,
        mutating_policy_row,
    ),
    printer(
        ADMISSION,
        "MutatingAdmissionPolicyBinding",
        binding_columns,
        binding_row,
    ),
    printer(RESOURCE, "DeviceClass", name_age_columns, name_age_row),
    printer(RESOURCE, "ResourceClaim", claim_columns, claim_row),
    printer(
        RESOURCE,
        "ResourceClaimTemplate",
        name_age_columns,
        name_age_row,
    ),
    printer(RESOURCE, "ResourceSlice", slice_columns, slice_row),
    printer(
        "apiregistration.k8s.io",
        "APIService",
        api_service_columns,
        api_service_row,
    ),
    printer(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        crd_columns,
        crd_row,
    ),
];

const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";
const RESOURCE: &str = "resource.k8s.io";

const fn printer(
    group: &'static str,
    kind: &'static str,
    columns: fn() -> Vec<TableColumn>,
    row: fn(&Value) -> Vec<Value>,
) -> Printer {
    Printer {
        group,
        version: "v1",
        kind,
        columns,
        row,
    }
}

fn name_age_columns() -> Vec<TableColumn> {
    vec![NAME_COLUMN, AGE_COLUMN]
}

fn name_age_row(obj: &Value) -> Vec<Value> {
    vec![name_cell(obj), age_cell(obj)]
}

fn flow_schema_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("PriorityLevel", "`name` is the name of the priority level configuration being referenced Required."),
        string("MatchingPrecedence", "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default."),
        string("DistinguisherMethod", "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string."),
        AGE_COLUMN,
        string("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
    ]
}

/// Upstream's `FlowSchemaSequence`: lower matching precedence first, then
/// by name.
pub fn flow_schema_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let precedence = |fs: &Value| int(fs, "/spec/matchingPrecedence");
    precedence(a)
        .cmp(&precedence(b))
        .then_with(|| text(a, "/metadata/name").cmp(text(b, "/metadata/name")))
}

/// Upstream's `printFlowSchema`; MissingPL is the status of the Dangling
/// condition, `?` before the controller has set one.
fn flow_schema_row(fs: &Value) -> Vec<Value> {
    let distinguisher = match fs.pointer("/spec/distinguisherMethod") {
        Some(method) if !method.is_null() => json!(text(method, "/type")),
        _ => json!("<none>"),
    };
    let dangling = fs
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"))
        .map_or("?", |c| text(c, "/status"));
    vec![
        name_cell(fs),
        json!(text(fs, "/spec/priorityLevelConfiguration/name")),
        json!(int(fs, "/spec/matchingPrecedence")),
        distinguisher,
        age_cell(fs),
        json!(dangling),
    ]
}

fn priority_level_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Type", "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required."),
        string("NominalConcurrencyShares", "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)"),
        string("Queues", "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64."),
        string("HandSize", "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8."),
        string("QueueLengthLimit", "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50."),
        AGE_COLUMN,
    ]
}

/// Upstream's `printPriorityLevelConfiguration`: numbers where the level is
/// limited (and queues), `<none>` where it is not.
fn priority_level_row(pl: &Value) -> Vec<Value> {
    let none = || json!("<none>");
    let present = |pointer: &str| pl.pointer(pointer).is_some_and(|v| !v.is_null());
    let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
    if present("/spec/limited") {
        shares = json!(int(pl, "/spec/limited/nominalConcurrencyShares"));
        if present("/spec/limited/limitResponse/queuing") {
            let queuing = |field: &str| {
                json!(int(
                    pl,
                    &format!("/spec/limited/limitResponse/queuing/{field}")
                ))
            };
            queues = queuing("queues");
            hand = queuing("handSize");
            limit = queuing("queueLengthLimit");
        }
    }
    vec![
        name_cell(pl),
        json!(text(pl, "/spec/type")),
        shares,
        queues,
        hand,
        limit,
        age_cell(pl),
    ]
}

fn webhook_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer(
            "Webhooks",
            "Webhooks indicates the number of webhooks registered in this configuration",
        ),
        AGE_COLUMN,
    ]
}

fn webhook_row(config: &Value) -> Vec<Value> {
    vec![
        name_cell(config),
        json!(count(config, "/webhooks")),
        age_cell(config),
    ]
}

const PARAM_KIND_COLUMN: TableColumn = string(
    "ParamKind",
    "ParamKind specifies the kind of resources used to parameterize this policy",
);

fn validating_policy_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer(
            "Validations",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        PARAM_KIND_COLUMN,
        AGE_COLUMN,
    ]
}

fn mutating_policy_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        integer(
            "Mutations",
            "Mutation indicates the number of mutations rules defined in this configuration",
        ),
        PARAM_KIND_COLUMN,
        AGE_COLUMN,
    ]
}

fn validating_policy_row(policy: &Value) -> Vec<Value> {
    policy_row(policy, "/spec/validations")
}

fn mutating_policy_row(policy: &Value) -> Vec<Value> {
    policy_row(policy, "/spec/mutations")
}

/// The rule count and `apiVersion/kind` of the parameters (`<unset>`
/// without), as upstream's policy printers.
fn policy_row(policy: &Value, rules: &str) -> Vec<Value> {
    let param_kind = match policy.pointer("/spec/paramKind") {
        Some(kind) if !kind.is_null() => {
            format!("{}/{}", text(kind, "/apiVersion"), text(kind, "/kind"))
        }
        _ => "<unset>".to_owned(),
    };
    vec![
        name_cell(policy),
        json!(count(policy, rules)),
        json!(param_kind),
        age_cell(policy),
    ]
}

fn binding_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "PolicyName",
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
        string(
            "ParamRef",
            "ParamRef indicates the param resource which sets the configration param",
        ),
        AGE_COLUMN,
    ]
}

/// Upstream's binding printers: the parameter as `namespace/name` (`*/name`
/// when the namespace is left to the request), else its selector in Go's
/// generated `LabelSelector.String()` form, else `<unset>`.
fn binding_row(binding: &Value) -> Vec<Value> {
    let param = match binding.pointer("/spec/paramRef") {
        Some(param) if !param.is_null() => {
            match (text(param, "/namespace"), text(param, "/name")) {
                (_, "") => match param.get("selector") {
                    Some(selector) if !selector.is_null() => go_selector_string(selector),
                    _ => "<unset>".to_owned(),
                },
                ("", name) => format!("*/{name}"),
                (namespace, name) => format!("{namespace}/{name}"),
            }
        }
        _ => "<unset>".to_owned(),
    };
    vec![
        name_cell(binding),
        json!(text(binding, "/spec/policyName")),
        json!(param),
        age_cell(binding),
    ]
}

/// A label selector as the protobuf-generated `String()` of upstream's
/// `metav1.LabelSelector` prints it: labels sorted by key, expressions in
/// order with their values as a Go slice (`[a b]`).
fn go_selector_string(selector: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort_unstable();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(e, "/key"),
                text(e, "/operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

fn claim_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "State",
            "A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        AGE_COLUMN,
    ]
}

/// Upstream's `resourceClaimState`: deleted, pending (unallocated and not
/// deleted), allocated and reserved, comma-joined.
fn claim_row(claim: &Value) -> Vec<Value> {
    let set = |pointer: &str| claim.pointer(pointer).is_some_and(|v| !v.is_null());
    let deleted = set("/metadata/deletionTimestamp");
    let mut states = Vec::with_capacity(3);
    if deleted {
        states.push("deleted");
    }
    if set("/status/allocation") {
        states.push("allocated");
        if count(claim, "/status/reservedFor") > 0 {
            states.push("reserved");
        }
    } else if !deleted {
        states.push("pending");
    }
    vec![name_cell(claim), json!(states.join(",")), age_cell(claim)]
}

fn slice_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Node", "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable."),
        string("Driver", "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable."),
        string("Pool", "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required. A field selector can be used to list only ResourceSlice objects belonging to a certain pool.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable."),
        AGE_COLUMN,
    ]
}

/// The node name is optional (a pointer upstream): null, which kubectl
/// prints blank, for pools not bound to one node.
fn slice_row(slice: &Value) -> Vec<Value> {
    vec![
        name_cell(slice),
        slice
            .pointer("/spec/nodeName")
            .cloned()
            .unwrap_or(Value::Null),
        json!(text(slice, "/spec/driver")),
        json!(text(slice, "/spec/pool/name")),
        age_cell(slice),
    ]
}

fn api_service_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "Service",
            "The reference to the service that hosts this API endpoint.",
        ),
        string("Available", "Whether this service is available."),
        AGE_COLUMN,
    ]
}

/// kube-aggregator's APIService table: the backing service or `Local`, and
/// the Available condition with its reason when it is not True.
fn api_service_row(service: &Value) -> Vec<Value> {
    let backend = match service.pointer("/spec/service") {
        Some(svc) if !svc.is_null() => {
            format!("{}/{}", text(svc, "/namespace"), text(svc, "/name"))
        }
        _ => "Local".to_owned(),
    };
    let available = service
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .map_or_else(
            || "Unknown".to_owned(),
            |c| match (text(c, "/status"), text(c, "/reason")) {
                ("True", _) | (_, "") => text(c, "/status").to_owned(),
                (status, reason) => format!("{status} ({reason})"),
            },
        );
    vec![
        name_cell(service),
        json!(backend),
        json!(available),
        age_cell(service),
    ]
}

fn crd_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Scope", "Cluster/Namespaced"),
        string("Versions", "Served versions"),
        TableColumn::new("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION),
        string("Group", "API group").wide(),
        string("Kind", "CustomResource kind").wide(),
        string("ShortNames", "Short names").wide(),
        TableColumn::new("Established", "boolean", "Established status").wide(),
    ]
}

/// apiextensions-apiserver's CRD table: served versions sorted, the storage
/// one marked `(storage)`; the creation time in RFC 3339 (UTC).
fn crd_row(crd: &Value) -> Vec<Value> {
    let mut versions: Vec<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .map(|v| {
            let name = text(v, "/name");
            if v["storage"] == true {
                format!("{name}(storage)")
            } else {
                name.to_owned()
            }
        })
        .collect();
    versions.sort_unstable();
    let short_names: Vec<&str> = crd
        .pointer("/spec/names/shortNames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    vec![
        name_cell(crd),
        json!(text(crd, "/spec/scope")),
        json!(versions.join(",")),
        json!(rfc3339_utc(text(crd, "/metadata/creationTimestamp"))),
        json!(text(crd, "/spec/group")),
        json!(text(crd, "/spec/names/kind")),
        json!(short_names.join(",")),
        json!(established),
    ]
}

/// A timestamp as Go's `Time.UTC().Format(time.RFC3339)`; unset or
/// unparsable values are Go's zero time.
fn rfc3339_utc(timestamp: &str) -> String {
    DateTime::parse_from_rfc3339(timestamp).map_or_else(
        |_| "0001-01-01T00:00:00Z".to_owned(),
        |t| {
            t.with_timezone(&Utc)
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        },
    )
}

#[cfg(test)]
mod tests;
