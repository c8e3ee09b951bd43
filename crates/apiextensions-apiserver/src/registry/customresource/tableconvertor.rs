//! Table output of custom resources (upstream's `tableconvertor`): the Name
//! column, then the version's `additionalPrinterColumns` evaluated by
//! JSONPath, or the default Age column when the version declares none.

use apiserver::registry::rest::table::{self, NAME_COLUMN};
use serde_json::{json, Value};

use client_go::util::jsonpath::JsonPath;

const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One printer column of a custom resource version.
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    path: Option<JsonPath>,
}

/// The columns of one version and how to fill them.
#[derive(Debug, Clone)]
pub struct Printer {
    columns: Vec<PrinterColumn>,
}

impl Printer {
    /// From a version's `additionalPrinterColumns` (JSON); the default Age
    /// column when there are none.
    pub fn new(columns: &[Value]) -> Self {
        let field = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let mut parsed: Vec<PrinterColumn> = columns
            .iter()
            .map(|c| PrinterColumn {
                name: field(c, "name"),
                kind: field(c, "type"),
                format: field(c, "format"),
                description: field(c, "description"),
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                // Validation of the CRD rejects bad paths; one that slipped
                // through prints empty cells.
                path: JsonPath::parse(&field(c, "jsonPath")).ok(),
            })
            .collect();
        if parsed.is_empty() {
            parsed.push(PrinterColumn {
                name: "Age".into(),
                kind: "date".into(),
                format: String::new(),
                description: CREATION_TIMESTAMP_DESCRIPTION.into(),
                priority: 0,
                path: JsonPath::parse(".metadata.creationTimestamp").ok(),
            });
        }
        Printer { columns: parsed }
    }

    pub fn definitions(&self) -> Vec<Value> {
        let mut defs = vec![NAME_COLUMN.to_json()];
        defs.extend(self.columns.iter().map(|c| {
            json!({"name": c.name, "type": c.kind, "format": c.format,
                "description": c.description, "priority": c.priority})
        }));
        defs
    }

    pub fn row(&self, obj: &Value) -> Vec<Value> {
        let mut cells = vec![table::name_cell(obj)];
        cells.extend(self.columns.iter().map(|c| {
            let value = c.path.as_ref().and_then(|p| p.first(obj));
            value.map_or(Value::Null, |v| cell(&c.kind, v))
        }));
        cells
    }
}

/// A cell of the column's type, or null when the value does not fit it.
fn cell(kind: &str, v: &Value) -> Value {
    match kind {
        "string" => match v {
            Value::String(_) => v.clone(),
            other => Value::String(other.to_string()),
        },
        "integer" => match v.as_i64() {
            Some(i) => json!(i),
            None => v
                .as_f64()
                .filter(|f| f.fract() == 0.0)
                .map_or(Value::Null, |f| json!(f as i64)),
        },
        "number" => v.as_f64().map_or(Value::Null, |f| json!(f)),
        "boolean" => v.as_bool().map_or(Value::Null, Value::Bool),
        "date" => v
            .as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .map_or(Value::Null, |t| {
                Value::String(table::human_duration(
                    chrono::Utc::now().signed_duration_since(t),
                ))
            }),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_columns_are_typed_cells() {
        let printer = Printer::new(&[
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
            json!({"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1}),
            json!({"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"}),
        ]);
        let defs = printer.definitions();
        assert_eq!(defs[0]["name"], "Name");
        assert_eq!(defs[2]["priority"], 1);
        let row = printer.row(&json!({"metadata": {"name": "a"},
            "spec": {"replicas": 2.0, "color": "red"}, "status": {"ready": "yes"}}));
        assert_eq!(row, vec![json!("a"), json!(2), json!("red"), Value::Null]);
    }

    #[test]
    fn no_columns_means_name_and_age() {
        let printer = Printer::new(&[]);
        let defs = printer.definitions();
        assert_eq!(defs[1]["name"], "Age");
        assert_eq!(defs[1]["type"], "date");
        let old = (chrono::Utc::now() - chrono::TimeDelta::seconds(30)).to_rfc3339();
        let row = printer.row(&json!({"metadata": {"name": "a", "creationTimestamp": old}}));
        assert_eq!(row[1], json!("30s"));
    }
}
