//! Printers of discovery.k8s.io (EndpointSlice), networking.k8s.io
//! (IngressClass, Ingress, IPAddress, NetworkPolicy, ServiceCIDR) and policy
//! (PodDisruptionBudget): upstream's columns and cells for each.

use serde_json::{json, Value};

use super::*;

pub const PRINTERS: &[Printer] = &[
    Printer {
        group: "discovery.k8s.io",
        version: "v1",
        kind: "EndpointSlice",
        columns: endpoint_slice_columns,
        row: endpoint_slice_row,
    },
    Printer {
        group: "networking.k8s.io",
        version: "v1",
        kind: "IngressClass",
        columns: ingress_class_columns,
        row: ingress_class_row,
    },
    Printer {
        group: "networking.k8s.io",
        version: "v1",
        kind: "Ingress",
        columns: ingress_columns,
        row: ingress_row,
    },
    Printer {
        group: "networking.k8s.io",
        version: "v1",
        kind: "IPAddress",
        columns: ip_address_columns,
        row: ip_address_row,
    },
    Printer {
        group: "networking.k8s.io",
        version: "v1",
        kind: "NetworkPolicy",
        columns: network_policy_columns,
        row: network_policy_row,
    },
    Printer {
        group: "networking.k8s.io",
        version: "v1",
        kind: "ServiceCIDR",
        columns: service_cidr_columns,
        row: service_cidr_row,
    },
    Printer {
        group: "policy",
        version: "v1",
        kind: "PodDisruptionBudget",
        columns: pdb_columns,
        row: pdb_row,
    },
];

/// How many entries the list cells show before "+ N more...".
const SHOWN: usize = 3;

/// Upstream's `listWithMoreString`: the first [`SHOWN`] items, then how
/// many were left out; `<unset>` for none.
fn list_with_more(items: impl Iterator<Item = String>) -> String {
    let mut shown = Vec::with_capacity(SHOWN);
    let mut total = 0;
    for item in items {
        if shown.len() < SHOWN {
            shown.push(item);
        }
        total += 1;
    }
    let joined = shown.join(",");
    if total > SHOWN {
        format!("{joined} + {} more...", total - SHOWN)
    } else if joined.is_empty() {
        "<unset>".to_owned()
    } else {
        joined
    }
}

fn array<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn endpoint_slice_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("AddressType", "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name."),
        string("Ports", "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports."),
        string("Endpoints", "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints."),
        AGE_COLUMN,
    ]
}

/// A port by number, else by name, else `*` (all ports).
fn discovery_port(port: &Value) -> String {
    match (port.get("port").and_then(Value::as_i64), port.get("name")) {
        (Some(number), _) => number.to_string(),
        (None, Some(name)) => name.as_str().unwrap_or("").to_owned(),
        (None, None) => "*".to_owned(),
    }
}

fn endpoint_slice_row(slice: &Value) -> Vec<Value> {
    let ports = list_with_more(array(slice, "/ports").iter().map(discovery_port));
    let addresses = array(slice, "/endpoints")
        .iter()
        .flat_map(|e| array(e, "/addresses"))
        .map(|a| a.as_str().unwrap_or("").to_owned());
    vec![
        name_cell(slice),
        json!(text(slice, "/addressType")),
        json!(ports),
        json!(list_with_more(addresses)),
        age_cell(slice),
    ]
}

fn ingress_class_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "Controller",
            "Controller that is responsible for handling this class",
        ),
        string(
            "Parameters",
            "A reference to a resource with additional parameters",
        ),
        AGE_COLUMN,
    ]
}

/// `Kind[.apiGroup]/name` of the parameters reference.
fn ingress_class_parameters(class: &Value) -> String {
    let Some(params) = class.pointer("/spec/parameters") else {
        return "<none>".to_owned();
    };
    let kind = text(params, "/kind");
    let name = text(params, "/name");
    match params.get("apiGroup").and_then(Value::as_str) {
        Some(group) => format!("{kind}.{group}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

fn ingress_class_row(class: &Value) -> Vec<Value> {
    vec![
        name_cell(class),
        json!(text(class, "/spec/controller")),
        json!(ingress_class_parameters(class)),
        age_cell(class),
    ]
}

fn ingress_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "Class",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        string(
            "Hosts",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        string(
            "Address",
            "Address is a list containing ingress points for the load-balancer",
        ),
        string("Ports", "Ports of TLS configurations that open"),
        AGE_COLUMN,
    ]
}

/// Upstream's `formatHosts`: the first three hosts; the "more" count is of
/// all rules, hostless ones included; `*` when no rule names a host.
fn ingress_hosts(ingress: &Value) -> String {
    let rules = array(ingress, "/spec/rules");
    let mut hosts = Vec::with_capacity(SHOWN);
    for rule in rules {
        if hosts.len() == SHOWN {
            return format!("{} + {} more...", hosts.join(","), rules.len() - SHOWN);
        }
        match text(rule, "/host") {
            "" => {}
            host => hosts.push(host),
        }
    }
    if hosts.is_empty() {
        "*".to_owned()
    } else {
        hosts.join(",")
    }
}

fn ingress_row(ingress: &Value) -> Vec<Value> {
    let class = ingress
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let ports = if array(ingress, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name_cell(ingress),
        json!(class),
        json!(ingress_hosts(ingress)),
        json!(load_balancer_addresses(
            ingress,
            "/status/loadBalancer/ingress"
        )),
        json!(ports),
        age_cell(ingress),
    ]
}

/// Upstream declares no Age column for IPAddresses but its rows still carry
/// the age as a third cell; kubectl shows only the declared columns.
fn ip_address_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "ParentRef",
            "parentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.",
        ),
    ]
}

/// `resource[.group][/namespace]/name`, lower-cased like upstream's
/// GroupResource string.
fn ip_address_parent(ip: &Value) -> String {
    let Some(parent) = ip.pointer("/spec/parentRef") else {
        return "<none>".to_owned();
    };
    let mut out = match text(parent, "/group") {
        "" => text(parent, "/resource").to_lowercase(),
        group => format!("{}.{group}", text(parent, "/resource")).to_lowercase(),
    };
    match text(parent, "/namespace") {
        "" => {}
        namespace => {
            out.push('/');
            out.push_str(namespace);
        }
    }
    out.push('/');
    out.push_str(text(parent, "/name"));
    out
}

fn ip_address_row(ip: &Value) -> Vec<Value> {
    vec![name_cell(ip), json!(ip_address_parent(ip)), age_cell(ip)]
}

fn network_policy_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Pod-Selector", "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace."),
        AGE_COLUMN,
    ]
}

fn network_policy_row(policy: &Value) -> Vec<Value> {
    vec![
        name_cell(policy),
        selector(policy, "/spec/podSelector"),
        age_cell(policy),
    ]
}

fn service_cidr_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("CIDRs", "cidrs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable."),
        AGE_COLUMN,
    ]
}

fn service_cidr_row(cidr: &Value) -> Vec<Value> {
    let cidrs: Vec<&str> = array(cidr, "/spec/cidrs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    vec![name_cell(cidr), json!(cidrs.join(",")), age_cell(cidr)]
}

fn pdb_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string(
            "Min Available",
            "The minimum number of pods that must be available.",
        ),
        string(
            "Max Unavailable",
            "The maximum number of pods that may be unavailable.",
        ),
        integer(
            "Allowed Disruptions",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        AGE_COLUMN,
    ]
}

/// An int-or-string field as upstream's `IntOrString.String()`, `N/A` when
/// unset.
fn int_or_string(obj: &Value, pointer: &str) -> String {
    match obj.pointer(pointer) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".to_owned(),
    }
}

fn pdb_row(pdb: &Value) -> Vec<Value> {
    vec![
        name_cell(pdb),
        json!(int_or_string(pdb, "/spec/minAvailable")),
        json!(int_or_string(pdb, "/spec/maxUnavailable")),
        json!(int(pdb, "/status/disruptionsAllowed")),
        age_cell(pdb),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printer(kind: &str) -> &'static Printer {
        PRINTERS
            .iter()
            .find(|p| p.kind == kind)
            .unwrap_or_else(|| panic!("no printer for {kind}"))
    }

    /// The cells of a row without the trailing Age (checked separately).
    fn cells(kind: &str, obj: Value) -> Vec<Value> {
        let printer = printer(kind);
        let mut row = (printer.row)(&obj);
        let names: Vec<&str> = (printer.columns)().iter().map(|c| c.name).collect();
        if names.last() == Some(&"Age") {
            assert_eq!(row.len(), names.len(), "{kind}: one cell per column");
            row.pop();
        }
        row
    }

    #[test]
    fn every_printer_is_found_by_kind() {
        for p in PRINTERS {
            let found = for_kind(p.group, p.version, p.kind).map(|f| f.kind);
            assert_eq!(found, Some(p.kind));
        }
    }

    #[test]
    fn endpoint_slices_list_three_ports_and_addresses_then_count_the_rest() {
        let slice = json!({
            "metadata": {"name": "web-abc"},
            "addressType": "IPv4",
            "ports": [{"port": 80, "name": "http"}, {"name": "dns"}, {}, {"port": 443}, {"port": 8080}],
            "endpoints": [
                {"addresses": ["10.0.0.1", "10.0.0.2"]},
                {"addresses": ["10.0.0.3"]},
                {"addresses": ["10.0.0.4", "10.0.0.5"]},
            ],
        });
        assert_eq!(
            cells("EndpointSlice", slice),
            [
                json!("web-abc"),
                json!("IPv4"),
                json!("80,dns,* + 2 more..."),
                json!("10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."),
            ]
        );
        let exact = json!({
            "metadata": {"name": "s"}, "addressType": "IPv6",
            "ports": [{"port": 53}, {"port": 54}, {"port": 55}],
            "endpoints": [{"addresses": ["fd00::1"]}],
        });
        assert_eq!(
            cells("EndpointSlice", exact)[2..],
            [json!("53,54,55"), json!("fd00::1")]
        );
        let empty = json!({"metadata": {"name": "e"}, "addressType": "FQDN", "endpoints": []});
        assert_eq!(
            cells("EndpointSlice", empty)[2..],
            [json!("<unset>"), json!("<unset>")]
        );
    }

    #[test]
    fn ingress_classes_print_controller_and_parameters() {
        let with_group = json!({"metadata": {"name": "nginx"}, "spec": {
            "controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"},
        }});
        assert_eq!(
            cells("IngressClass", with_group)[1..],
            [
                json!("k8s.io/ingress-nginx"),
                json!("IngressParameters.k8s.example.com/external-lb")
            ]
        );
        let core = json!({"metadata": {"name": "c"}, "spec": {
            "controller": "x/y", "parameters": {"kind": "ConfigMap", "name": "cfg"},
        }});
        assert_eq!(cells("IngressClass", core)[2], json!("ConfigMap/cfg"));
        let bare = json!({"metadata": {"name": "b"}, "spec": {}});
        assert_eq!(
            cells("IngressClass", bare)[1..],
            [json!(""), json!("<none>")]
        );
    }

    #[test]
    fn ingresses_print_class_hosts_address_and_ports() {
        let ingress = json!({
            "metadata": {"name": "web"},
            "spec": {
                "ingressClassName": "nginx",
                "rules": [{"host": "a.example.com"}, {}, {"host": "b.example.com"}, {"host": "c.example.com"}, {"host": "d.example.com"}],
                "tls": [{"hosts": ["a.example.com"]}],
            },
            "status": {"loadBalancer": {"ingress": [
                {"ip": "192.0.2.20"}, {"hostname": "lb.example.com"}, {"ip": "192.0.2.3", "hostname": "x"}, {"ip": "192.0.2.20"}, {},
            ]}},
        });
        assert_eq!(
            cells("Ingress", ingress)[1..],
            [
                json!("nginx"),
                json!("a.example.com,b.example.com,c.example.com + 2 more..."),
                json!("192.0.2.20,192.0.2.3,lb.example.com"),
                json!("80, 443"),
            ]
        );
        let bare = json!({"metadata": {"name": "b"}, "spec": {"rules": [{}]}});
        assert_eq!(
            cells("Ingress", bare)[1..],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
        let three = json!({"metadata": {"name": "t"}, "spec": {
            "rules": [{"host": "a"}, {"host": "b"}, {"host": "c"}],
        }});
        assert_eq!(cells("Ingress", three)[2], json!("a,b,c"));
    }

    #[test]
    fn ip_addresses_print_the_parent_and_carry_an_undeclared_age() {
        let printer = printer("IPAddress");
        let service = json!({"metadata": {"name": "10.96.0.1", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}}});
        let row = (printer.row)(&service);
        assert_eq!(
            row[..2],
            [json!("10.96.0.1"), json!("services/default/kubernetes")]
        );
        assert_eq!(row.len(), 3);
        assert_eq!((printer.columns)().len(), 2);
        let grouped = json!({"metadata": {"name": "ip"},
            "spec": {"parentRef": {"group": "Example.COM", "resource": "Gateways", "name": "gw"}}});
        assert_eq!((printer.row)(&grouped)[1], json!("gateways.example.com/gw"));
        let orphan = json!({"metadata": {"name": "ip"}, "spec": {}});
        assert_eq!((printer.row)(&orphan)[1], json!("<none>"));
    }

    #[test]
    fn network_policies_print_the_pod_selector() {
        let policy = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }}});
        assert_eq!(
            cells("NetworkPolicy", policy)[1],
            json!("app=shop,env in (dev,prod),!legacy,tier=web")
        );
        let all = json!({"metadata": {"name": "all"}, "spec": {"podSelector": {}}});
        assert_eq!(cells("NetworkPolicy", all)[1], json!("<none>"));
    }

    #[test]
    fn service_cidrs_join_their_cidrs() {
        let cidr = json!({"metadata": {"name": "kubernetes"},
            "spec": {"cidrs": ["10.96.0.0/12", "fd00:10:96::/112"]}});
        assert_eq!(
            cells("ServiceCIDR", cidr)[1],
            json!("10.96.0.0/12,fd00:10:96::/112")
        );
        let empty = json!({"metadata": {"name": "e"}, "spec": {}});
        assert_eq!(cells("ServiceCIDR", empty)[1], json!(""));
    }

    #[test]
    fn disruption_budgets_print_int_or_string_bounds() {
        let pdb = json!({"metadata": {"name": "web"},
            "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            cells("PodDisruptionBudget", pdb)[1..],
            [json!("2"), json!("N/A"), json!(1)]
        );
        let percent = json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "25%"}});
        assert_eq!(
            cells("PodDisruptionBudget", percent)[1..],
            [json!("N/A"), json!("25%"), json!(0)]
        );
    }

    #[test]
    fn column_types_follow_upstream() {
        let pdb = pdb_columns();
        assert_eq!(pdb[3].kind, "integer");
        assert!(PRINTERS
            .iter()
            .flat_map(|p| (p.columns)())
            .all(|c| c.priority == 0));
        let names: Vec<&str> = ingress_columns().iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Class", "Hosts", "Address", "Ports", "Age"]);
    }
}
