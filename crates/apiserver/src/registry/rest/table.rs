//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`):
//! the server-side printing `kubectl get` asks for. A resource prints
//! through its [`TableConvertor`] (upstream's `rest.TableConvertor`,
//! `registry/rest/table.go`), by default upstream's default table of name
//! and creation time.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableColumn {
    pub name: &'static str,
    /// OpenAPI type of the cells: string, integer, number, boolean, date.
    pub kind: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0: shown by `kubectl get`; 1: only with `-o wide`.
    pub priority: u32,
}

impl TableColumn {
    pub const fn new(name: &'static str, kind: &'static str, description: &'static str) -> Self {
        TableColumn {
            name,
            kind,
            format: "",
            description,
            priority: 0,
        }
    }

    pub const fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    pub const fn format(mut self, format: &'static str) -> Self {
        self.format = format;
        self
    }

    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.kind,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// Upstream's `ObjectMeta` documentation of `name` and `creationTimestamp`,
/// which its tables give as the descriptions of these columns.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub const NAME_COLUMN: TableColumn =
    TableColumn::new("Name", "string", NAME_DESCRIPTION).format("name");

pub const AGE_COLUMN: TableColumn =
    TableColumn::new("Age", "string", CREATION_TIMESTAMP_DESCRIPTION);

/// Upstream's default table for resources without printers of their own.
/// Compares two objects for the order of their Table rows.
pub type RowOrder = fn(&Value, &Value) -> std::cmp::Ordering;

pub fn default_columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        TableColumn::new("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION),
    ]
}

pub fn default_row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        obj.pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

pub fn name_cell(obj: &Value) -> Value {
    obj.pointer("/metadata/name").cloned().unwrap_or_default()
}

/// The Age cell: time since creation, printed as upstream's HumanDuration.
pub fn age_cell(obj: &Value) -> Value {
    let created = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    match created {
        Some(t) => Value::String(human_duration(Utc::now().signed_duration_since(t))),
        None => Value::String("<unknown>".into()),
    }
}

/// Upstream's `duration.HumanDuration`: precise for short spans, coarse for
/// long ones.
pub fn human_duration(d: chrono::TimeDelta) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return with_remainder(minutes, "m", seconds % 60, "s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return with_remainder(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return with_remainder(hours / 24, "d", hours % 24, "h");
    }
    let days = hours / 24;
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    if hours < 24 * 365 * 8 {
        return with_remainder(days / 365, "y", days % 365, "d");
    }
    format!("{}y", days / 365)
}

fn with_remainder(major: i64, major_unit: &str, minor: i64, minor_unit: &str) -> String {
    if minor == 0 {
        format!("{major}{major_unit}")
    } else {
        format!("{major}{major_unit}{minor}{minor_unit}")
    }
}

/// How much of each object a Table row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    None,
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "" | "Metadata" => Some(IncludeObject::Metadata),
            "None" => Some(IncludeObject::None),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }

    pub fn row_object(self, obj: &Value) -> Option<Value> {
        match self {
            IncludeObject::None => None,
            IncludeObject::Object => Some(obj.clone()),
            IncludeObject::Metadata => Some(json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
            })),
        }
    }
}

pub trait TableConvertor: Send + Sync + 'static {
    /// Columns of `kubectl get` (Table output). The default is upstream's
    /// default table: name and creation time.
    fn table_columns(&self) -> Vec<TableColumn> {
        default_columns()
    }

    /// The Table's column definitions; by default `table_columns` as JSON.
    /// Strategies whose columns are only known at run time answer here.
    fn table_column_definitions(&self) -> Vec<Value> {
        self.table_columns()
            .iter()
            .map(TableColumn::to_json)
            .collect()
    }

    /// One row's cells for `table_columns`.
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        default_row(obj)
    }

    /// How a list's Table rows are ordered; `None` (most kinds) keeps the
    /// list's order (upstream sorts FlowSchemas by matching precedence).
    fn table_order(&self) -> Option<RowOrder> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    #[test]
    fn human_durations_match_upstream() {
        let cases = [
            (-5, "<invalid>"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60 * 5, "3h5m"),
            (47 * 3600, "47h"),
            (3 * 86400 + 3600, "3d1h"),
            (10 * 86400, "10d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(TimeDelta::seconds(secs)), want, "{secs}s");
        }
    }

    #[test]
    fn metadata_rows_carry_partial_object_metadata() {
        let obj = json!({"kind": "Pod", "metadata": {"name": "a"}, "spec": {}});
        let row = IncludeObject::Metadata.row_object(&obj).unwrap_or_default();
        assert_eq!(row["kind"], "PartialObjectMetadata");
        assert_eq!(row["metadata"]["name"], "a");
        assert!(row.get("spec").is_none());
        assert_eq!(IncludeObject::None.row_object(&obj), None);
    }
}
