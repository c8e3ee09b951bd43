//! Strategies of core (v1) resources: upstream's defaults, printer columns
//! and selectable fields for the types users meet first.

use std::collections::BTreeMap;

use apiserver::registry::rest::GcPolicy;
use serde_json::{json, Value};

use super::defaults::default_field;
use super::pod_defaults::{self, default_pod, default_pod_spec};
use super::pod_resources::qos_class;
use super::printers::*;
use super::ResourceStrategy;

fn pod_defaults(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_pod_spec(spec);
        default_pod(spec);
    }
}

fn pod_on_create(obj: &mut Value) {
    // Admission may have filled serviceAccountName after decoding.
    if let Some(spec) = obj.get_mut("spec") {
        pod_defaults::service_account_alias(spec);
    }
    obj["status"] = json!({"phase": "Pending", "qosClass": qos_class(obj)});
}

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];

fn pod_fields(pod: &Value, fields: &mut BTreeMap<String, String>) {
    for (name, pointer) in [
        ("spec.nodeName", "/spec/nodeName"),
        ("spec.restartPolicy", "/spec/restartPolicy"),
        ("spec.schedulerName", "/spec/schedulerName"),
        ("spec.serviceAccountName", "/spec/serviceAccountName"),
        ("status.phase", "/status/phase"),
        ("status.podIP", "/status/podIP"),
        ("status.podIPs", "/status/podIP"),
        ("status.nominatedNodeName", "/status/nominatedNodeName"),
    ] {
        fields.insert(name.to_owned(), text(pod, pointer).to_owned());
    }
    let host_network = pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true);
    fields.insert("spec.hostNetwork".into(), host_network.to_string());
}

/// Upstream's pod `CheckGracefulDelete`: the requested period, else
/// `spec.terminationGracePeriodSeconds` (defaulted to 30); 0 for a pod not
/// yet scheduled or already terminated, so that it goes at once.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> Option<i64> {
    let period = requested.unwrap_or_else(|| {
        pod.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let terminated = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Failed" | "Succeeded")
    );
    Some(match period {
        _ if !scheduled || terminated => 0,
        p if p < 0 => 1,
        p => p,
    })
}

pub fn pods() -> ResourceStrategy {
    ResourceStrategy {
        status: true,
        generation: true,
        grace_period: pod_grace_period,
        defaults: pod_defaults,
        on_create: pod_on_create,
        field_names: POD_FIELDS,
        fields: pod_fields,
        validate: super::validation::pod::validate_pod,
        validate_create: super::validation::pod::validate_pod_create,
        validate_update: super::validation::update::validate_pod_update,
        subresources: super::pod_subresources::POD,
        ..Default::default()
    }
}

fn namespace_on_create(obj: &mut Value) {
    obj["status"] = json!({"phase": "Active"});
    let finalizers = obj.pointer("/spec/finalizers").cloned();
    if finalizers.is_none() {
        obj["spec"] = json!({"finalizers": ["kubernetes"]});
    }
}

/// A deleted namespace whose `spec.finalizers` are not done stays, as
/// Terminating, until the namespace controller has deleted its content.
fn namespace_finalizers_pending(ns: &Value) -> bool {
    ns.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// Every namespace carries its name as the `kubernetes.io/metadata.name`
/// label (set on every write, so generated names and edits keep it), as
/// upstream's namespace strategy does; namespace selectors rely on it.
fn namespace_name_label(ns: &mut Value) {
    let Some(name) = ns.pointer("/metadata/name").and_then(Value::as_str) else {
        return;
    };
    let name = json!(name);
    let Some(meta) = ns.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["kubernetes.io/metadata.name"] = name;
}

fn namespace_on_delete(ns: &mut Value) {
    ns["status"]["phase"] = json!("Terminating");
}

fn namespace_fields(ns: &Value, fields: &mut BTreeMap<String, String>) {
    fields.insert("status.phase".into(), text(ns, "/status/phase").to_owned());
}

pub fn namespaces() -> ResourceStrategy {
    ResourceStrategy {
        status: true,
        on_create: namespace_on_create,
        holds_deletion: namespace_finalizers_pending,
        on_delete: namespace_on_delete,
        canonicalize: namespace_name_label,
        name: apimachinery::validation::name_is_dns_label,
        validate: super::validation::core_objects::validate_namespace,
        field_names: &["status.phase"],
        fields: namespace_fields,
        subresources: super::pod_subresources::NAMESPACE,
        ..Default::default()
    }
}

pub fn configmaps() -> ResourceStrategy {
    ResourceStrategy {
        validate: super::validation::core_objects::validate_config_map,
        validate_update: super::validation::update::validate_configmap_update,
        ..Default::default()
    }
}

fn secret_defaults(obj: &mut Value) {
    default_field(obj, "type", json!("Opaque"));
    merge_string_data(obj);
}

/// `stringData` is write-only: its entries are base64-encoded into `data`
/// (winning over the same keys there) and it is never stored, as upstream's
/// conversion of a v1 Secret does.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine as _;
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Default::default()));
    if !data.is_object() {
        *data = Value::Object(Default::default());
    }
    if let Value::Object(data) = data {
        for (key, value) in string_data {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
}

fn secret_fields(s: &Value, fields: &mut BTreeMap<String, String>) {
    fields.insert("type".into(), text(s, "/type").to_owned());
}

pub fn secrets() -> ResourceStrategy {
    ResourceStrategy {
        defaults: secret_defaults,
        validate: super::validation::core_objects::validate_secret,
        validate_update: super::validation::update::validate_secret_update,
        field_names: &["type"],
        fields: secret_fields,
        ..Default::default()
    }
}

pub fn service_accounts() -> ResourceStrategy {
    ResourceStrategy::default()
}

fn node_fields(node: &Value, fields: &mut BTreeMap<String, String>) {
    let unschedulable = node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    fields.insert("spec.unschedulable".into(), unschedulable.to_string());
}

/// Upstream's `dropDisabledFields` on create: the retired dynamic kubelet
/// configuration fields go.
fn node_on_create(node: &mut Value) {
    for (parent, field) in [("spec", "configSource"), ("status", "config")] {
        if let Some(map) = node.get_mut(parent).and_then(Value::as_object_mut) {
            map.remove(field);
        }
    }
}

/// An update sets `spec.configSource` only where the node already had one.
fn node_on_update(node: &mut Value, old: &Value) {
    if old.pointer("/spec/configSource").is_none_or(Value::is_null) {
        if let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("configSource");
        }
    }
}

/// A status write sets `status.config` only where the node already had one.
fn node_on_status_update(subresource: &str, node: &mut Value, old: &Value) {
    if subresource == "status" && old.pointer("/status/config").is_none_or(Value::is_null) {
        if let Some(status) = node.get_mut("status").and_then(Value::as_object_mut) {
            status.remove("config");
        }
    }
}

/// Nodes: all fields, status included, may be set on create (upstream's
/// node strategy), validated as upstream's `ValidateNode`.
pub fn nodes() -> ResourceStrategy {
    ResourceStrategy {
        status: true,
        status_on_create: true,
        on_create: node_on_create,
        on_update: node_on_update,
        on_subresource_update: node_on_status_update,
        validate_create: super::validation::nodes::validate_node,
        validate_update: super::validation::nodes::validate_node_update,
        field_names: &["spec.unschedulable"],
        fields: node_fields,
        ..Default::default()
    }
}

fn service_defaults(svc: &mut Value) {
    let Some(spec) = svc.get_mut("spec") else {
        return;
    };
    default_field(spec, "type", json!("ClusterIP"));
    default_field(spec, "sessionAffinity", json!("None"));
    session_affinity_defaults(spec);
    let service_type = text(spec, "/type").to_owned();
    if service_type != "ExternalName" {
        default_field(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if matches!(service_type.as_str(), "NodePort" | "LoadBalancer") {
        default_field(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        default_field(spec, "allocateLoadBalancerNodePorts", json!(true));
        load_balancer_ip_mode(svc);
    }
    let ports = svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut);
    for p in ports.into_iter().flatten() {
        default_field(p, "protocol", json!("TCP"));
        let unset = p
            .get("targetPort")
            .is_none_or(|t| t.is_null() || *t == json!(0) || *t == json!(""));
        if let (true, Some(port)) = (unset, p.get("port").cloned()) {
            p["targetPort"] = port;
        }
    }
}

/// `SetDefaults_Service`'s session affinity: no config without affinity,
/// and ClientIP affinity times out after upstream's 10800 s unless told.
fn session_affinity_defaults(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    match map.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            map.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let timeout = map
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .filter(|t| !t.is_null());
            if timeout.is_none() {
                map.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
}

/// A load balancer's ingress points with an IP and no mode are VIPs.
fn load_balancer_ip_mode(svc: &mut Value) {
    let ingress = svc
        .pointer_mut("/status/loadBalancer/ingress")
        .and_then(Value::as_array_mut);
    for point in ingress.into_iter().flatten() {
        let has_ip = point
            .get("ip")
            .and_then(Value::as_str)
            .is_some_and(|ip| !ip.is_empty());
        if has_ip && point.get("ipMode").is_none_or(Value::is_null) {
            point["ipMode"] = json!("VIP");
        }
    }
}

fn service_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Type", "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types"),
        string("Cluster-IP", "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
        string("External-IP", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system."),
        string("Port(s)", "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies"),
        AGE_COLUMN,
        string("Selector", "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/").wide(),
    ]
}

/// `port/protocol`, or `port:nodePort/protocol`, comma-joined.
fn service_ports(svc: &Value) -> String {
    let ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if ports.is_empty() {
        return "<none>".into();
    }
    ports
        .iter()
        .map(|p| {
            let port = int(p, "/port");
            let proto = text(p, "/protocol");
            match int(p, "/nodePort") {
                node if node > 0 => format!("{port}:{node}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Upstream's `getServiceExternalIP`: external IPs for ClusterIP and
/// NodePort, load balancer ingress then external IPs (or `<pending>`) for
/// LoadBalancer, the external name for ExternalName.
fn service_external_ip(svc: &Value) -> String {
    let external_ips: Vec<&str> = svc
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .map(|ips| ips.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match text(svc, "/spec/type") {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_owned(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let ingress = load_balancer_addresses(svc, "/status/loadBalancer/ingress");
            match (ingress.is_empty(), external_ips.is_empty()) {
                (true, true) => "<pending>".to_owned(),
                (true, false) => external_ips.join(","),
                (false, true) => ingress,
                (false, false) => format!("{ingress},{}", external_ips.join(",")),
            }
        }
        "ExternalName" => text(svc, "/spec/externalName").to_owned(),
        _ => "<unknown>".to_owned(),
    }
}

fn service_row(svc: &Value) -> Vec<Value> {
    let cluster_ip = svc
        .pointer("/spec/clusterIPs/0")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    vec![
        name_cell(svc),
        json!(text(svc, "/spec/type")),
        json!(cluster_ip),
        json!(service_external_ip(svc)),
        json!(service_ports(svc)),
        age_cell(svc),
        map_selector(svc, "/spec/selector"),
    ]
}

pub fn services() -> ResourceStrategy {
    ResourceStrategy {
        status: true,
        defaults: service_defaults,
        validate: super::validation::service::validate_service,
        validate_update: super::validation::update::validate_service_update,
        ..Default::default()
    }
    .printed(service_columns, service_row)
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// Fills `names` from `ev`, each at its path, but `source`: the source
/// component at `source`, else the reporting controller at `reporter`
/// (upstream's `ToSelectableFields`).
fn selectable_event_fields(
    ev: &Value,
    names: &[&str],
    (source, reporter): (&str, &str),
    fields: &mut BTreeMap<String, String>,
) {
    for name in names {
        let value = match *name {
            "source" => match text(ev, source) {
                "" => text(ev, reporter),
                component => component,
            },
            other => text(ev, &format!("/{}", other.replace('.', "/"))),
        };
        fields.insert((*name).to_owned(), value.to_owned());
    }
}

fn event_fields(ev: &Value, fields: &mut BTreeMap<String, String>) {
    let source = ("/source/component", "/reportingComponent");
    selectable_event_fields(ev, EVENT_FIELDS, source, fields);
}

/// The field labels of `events.k8s.io/v1` Events (upstream's
/// `AddFieldLabelConversionsForEvent` of pkg/apis/events/v1, mapping each
/// to the core label [`core_event_label`] whose value `ToSelectableFields`
/// of the core Event gives).
const EVENT_V1_FIELDS: &[&str] = &[
    "reason",
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reportingController",
    "source",
    "type",
];

/// The `events.k8s.io/v1` labels' values of an Event in either form: as
/// stored (core/v1, where storage filters) through the core labels, or
/// as served.
fn event_v1_fields(ev: &Value, fields: &mut BTreeMap<String, String>) {
    if text(ev, "/apiVersion") == "events.k8s.io/v1" {
        let source = ("/deprecatedSource/component", "/reportingController");
        return selectable_event_fields(ev, EVENT_V1_FIELDS, source, fields);
    }
    let mut core = BTreeMap::new();
    event_fields(ev, &mut core);
    for label in EVENT_V1_FIELDS {
        let value = core.remove(&core_event_label(label)).unwrap_or_default();
        fields.insert((*label).to_owned(), value);
    }
}

/// The core Event's label an `events.k8s.io/v1` label converts to.
fn core_event_label(label: &str) -> String {
    match (label, label.strip_prefix("regarding.")) {
        ("reportingController", _) => "reportingComponent".to_owned(),
        (_, Some(field)) => format!("involvedObject.{field}"),
        _ => label.to_owned(),
    }
}

/// `events.k8s.io/v1` Events: core Events' storage and rules, their own
/// field labels.
pub fn events_v1() -> ResourceStrategy {
    ResourceStrategy {
        field_names: EVENT_V1_FIELDS,
        fields: event_v1_fields,
        validate: super::validation::core_objects::validate_event_v1,
        validate_create: super::validation::core_objects::validate_event_v1_create,
        validate_update: super::validation::update_events::validate_event_v1_update,
        ..events()
    }
}

pub fn events() -> ResourceStrategy {
    ResourceStrategy {
        gc_policy: GcPolicy::Unsupported,
        validate: super::validation::core_objects::validate_event,
        field_names: EVENT_FIELDS,
        fields: event_fields,
        ..Default::default()
    }
}

/// Resources whose status is a subresource but that print the default table.
pub fn with_status() -> ResourceStrategy {
    ResourceStrategy {
        status: true,
        ..Default::default()
    }
}

/// PersistentVolumeClaims: status subresource and upstream's update rules.
pub fn persistent_volume_claims() -> ResourceStrategy {
    ResourceStrategy {
        validate_create: super::validation::persistent_volume_claims::validate_pvc,
        validate_update: super::validation::persistent_volume_claims::validate_pvc_update,
        ..with_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_grace_period_follows_check_graceful_delete() {
        let scheduled = json!({"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 45}});
        assert_eq!(pod_grace_period(&scheduled, None), Some(45));
        assert_eq!(pod_grace_period(&scheduled, Some(5)), Some(5));
        assert_eq!(pod_grace_period(&scheduled, Some(-3)), Some(1));
        let unscheduled = json!({"spec": {"terminationGracePeriodSeconds": 45}});
        assert_eq!(pod_grace_period(&unscheduled, Some(20)), Some(0));
        let mut done = scheduled.clone();
        done["status"] = json!({"phase": "Succeeded"});
        assert_eq!(pod_grace_period(&done, None), Some(0));
    }

    #[test]
    fn events_v1_labels_select_the_core_fields() {
        let core = json!({"apiVersion": "v1", "reason": "Pulled", "type": "Normal",
            "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"},
            "reportingComponent": "kubelet"});
        let served = json!({"apiVersion": "events.k8s.io/v1", "reason": "Pulled",
            "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "uid": "u1"},
            "reportingController": "kubelet"});
        for ev in [core, served] {
            let mut fields = BTreeMap::new();
            event_v1_fields(&ev, &mut fields);
            let keys: Vec<&str> = fields.keys().map(String::as_str).collect();
            let mut names = EVENT_V1_FIELDS.to_vec();
            names.sort_unstable();
            assert_eq!(keys, names);
            for (label, value) in [
                ("regarding.kind", "Pod"),
                ("regarding.name", "p"),
                ("regarding.uid", "u1"),
                ("regarding.namespace", ""),
                ("reportingController", "kubelet"),
                ("source", "kubelet"),
                ("reason", "Pulled"),
                ("type", "Normal"),
            ] {
                assert_eq!(fields[label], value, "{label} of {ev}");
            }
        }
        assert_eq!(
            core_event_label("regarding.fieldPath"),
            "involvedObject.fieldPath"
        );
        assert_eq!(core_event_label("source"), "source");
    }

    #[test]
    fn secret_string_data_is_merged_into_data() {
        let mut secret = json!({"data": {"a": "b2xk", "keep": "eA=="},
            "stringData": {"a": "new", "plain": "héllo"}});
        secret_defaults(&mut secret);
        assert_eq!(
            secret,
            json!({"type": "Opaque", "data": {"a": "bmV3", "keep": "eA==", "plain": "aMOpbGxv"}})
        );
    }

    #[test]
    fn pod_defaults_follow_upstream() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "registry:5000/app:1.2"}]}});
        pod_defaults(&mut pod);
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(
            pod["spec"]["containers"][1]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(pod["spec"]["containers"][0]["ports"][0]["protocol"], "TCP");
    }
}
