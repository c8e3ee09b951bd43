//! Printer columns of built-in resources: what `kubectl get` shows, as
//! upstream's `pkg/printers/internalversion`. Each submodule registers the
//! printers of a few groups (like upstream's `AddHandlers`), found by
//! [`for_kind`]; the cell helpers below are shared by them and by the
//! strategies that set their printers directly (pods, workloads).

mod autoscaling;
mod certificates;
mod core;
mod extensions;
mod networking;
mod pod;
mod rbac_storage;
mod workloads;

use serde_json::{json, Value};

pub use apiserver::registry::rest::table::{
    age_cell, name_cell, RowOrder, TableColumn, AGE_COLUMN, NAME_COLUMN,
};

/// The columns and row of one kind at one group version.
pub struct Printer {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub columns: fn() -> Vec<TableColumn>,
    pub row: fn(&Value) -> Vec<Value>,
}

/// The printer registered for a kind, if upstream prints more than the
/// default name and age columns for it.
pub fn for_kind(group: &str, version: &str, kind: &str) -> Option<&'static Printer> {
    [
        core::PRINTERS,
        networking::PRINTERS,
        rbac_storage::PRINTERS,
        extensions::PRINTERS,
        workloads::PRINTERS,
    ]
    .into_iter()
    .flatten()
    .find(|p| p.group == group && p.version == version && p.kind == kind)
}

/// How upstream orders a list's rows when not in list order: FlowSchemas
/// by matching precedence, then name (`printFlowSchemaList`).
pub fn row_order(group: &str, kind: &str) -> Option<RowOrder> {
    match (group, kind) {
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => Some(extensions::flow_schema_order),
        _ => None,
    }
}

pub const fn string(name: &'static str, description: &'static str) -> TableColumn {
    TableColumn::new(name, "string", description)
}

pub const fn integer(name: &'static str, description: &'static str) -> TableColumn {
    TableColumn::new(name, "integer", description)
}

/// The string at a JSON pointer, or "".
pub fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The string at a pointer, or `<none>` as upstream prints missing values.
pub fn or_none(obj: &Value, pointer: &str) -> Value {
    match text(obj, pointer) {
        "" => json!("<none>"),
        s => json!(s),
    }
}

pub fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Number of entries of a map or list at a pointer.
pub fn count(obj: &Value, pointer: &str) -> usize {
    match obj.pointer(pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

/// A label selector printed as upstream's `metav1.FormatLabelSelector`:
/// requirements sorted by key, set values sorted, `<none>` for a missing or
/// empty selector, `<error>` for a malformed expression.
pub fn selector(obj: &Value, pointer: &str) -> Value {
    let Some(sel) = obj.pointer(pointer) else {
        return json!("<none>");
    };
    let mut parts: Vec<(&str, String)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), format!("{k}={}", v.as_str().unwrap_or(""))))
                .collect()
        })
        .unwrap_or_default();
    let exprs = sel.get("matchExpressions").and_then(Value::as_array);
    for e in exprs.into_iter().flatten() {
        match requirement(e) {
            Some(part) => parts.push((text(e, "/key"), part)),
            None => return json!("<error>"),
        }
    }
    // Stable, as upstream's sort of so few requirements is.
    parts.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = parts.into_iter().map(|(_, p)| p).collect();
    if parts.is_empty() {
        json!("<none>")
    } else {
        json!(parts.join(","))
    }
}

/// One `matchExpressions` entry as upstream's `Requirement.String()`, or
/// `None` when upstream would refuse it.
fn requirement(e: &Value) -> Option<String> {
    let key = text(e, "/key");
    let mut values: Vec<&str> = e
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    values.sort_unstable();
    let set = |op: &str| (!values.is_empty()).then(|| format!("{key} {op} ({})", values.join(",")));
    match text(e, "/operator") {
        "In" => set("in"),
        "NotIn" => set("notin"),
        "Exists" => values.is_empty().then(|| key.to_owned()),
        "DoesNotExist" => values.is_empty().then(|| format!("!{key}")),
        _ => None,
    }
}

/// A flat `key=value` map (service selectors, node selectors).
pub fn map_selector(obj: &Value, pointer: &str) -> Value {
    let mut pairs: Vec<(&String, &str)> = obj
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    // Upstream's `labels.FormatLabels` sorts by key.
    pairs.sort_unstable();
    let parts: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if parts.is_empty() {
        json!("<none>")
    } else {
        json!(parts.join(","))
    }
}

/// A load balancer status's ingress points (`ingress[].ip`, else
/// `.hostname`), sorted and deduplicated as upstream's
/// `loadBalancerStatusStringer`; the server prints its wide form, never
/// truncated.
pub fn load_balancer_addresses(obj: &Value, pointer: &str) -> String {
    let mut addresses: Vec<&str> = obj
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| match (text(i, "/ip"), text(i, "/hostname")) {
            ("", "") => None,
            ("", hostname) => Some(hostname),
            (ip, _) => Some(ip),
        })
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    addresses.join(",")
}
