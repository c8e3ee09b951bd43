//! The required fields and `default`s of upstream's generated OpenAPI
//! definitions (`pkg/generated/openapi`, written by kube-openapi's
//! `openapi-gen` from the `+optional`, `+required` and `+default=`
//! markers, `omitempty` tags and Go types of the API types), from the
//! table `structured-merge-codegen` derives from the same Go declarations
//! (`generated/fields.table`). Both documents take `required` from it;
//! only the v3 ones carry the defaults, as upstream prunes them from
//! `/openapi/v2` (`handler.PruneDefaults`).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

const TABLE: &str = include_str!("generated/fields.table");

/// A field upstream marks required or gives a default.
struct Field {
    name: &'static str,
    required: bool,
    default: Option<Value>,
}

fn table() -> &'static HashMap<&'static str, Vec<Field>> {
    static FIELDS: OnceLock<HashMap<&'static str, Vec<Field>>> = OnceLock::new();
    FIELDS.get_or_init(|| {
        let mut out: HashMap<&str, Vec<Field>> = HashMap::new();
        let mut current: Option<&str> = None;
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            if let Some(name) = line.strip_prefix("type ") {
                out.entry(name).or_default();
                current = Some(name);
                continue;
            }
            let mut parts = line.trim_start().splitn(3, ' ');
            let (Some(ty), Some(name), Some(flag)) = (current, parts.next(), parts.next()) else {
                continue;
            };
            let default = parts.next().and_then(|d| serde_json::from_str(d).ok());
            out.entry(ty).or_default().push(Field {
                name,
                required: flag == "r",
                default,
            });
        }
        out
    })
}

/// Sets a definition's `required` list to upstream's (in declaration
/// order, none when empty). False for a type the table does not know.
pub(super) fn set_required(name: &str, def: &mut Value) -> bool {
    let (Some(fields), Some(map)) = (table().get(name), def.as_object_mut()) else {
        return false;
    };
    let properties = map.get("properties").and_then(Value::as_object);
    let required: Vec<Value> = fields
        .iter()
        .filter(|f| f.required && properties.is_some_and(|p| p.contains_key(f.name)))
        .map(|f| Value::from(f.name))
        .collect();
    if required.is_empty() {
        map.remove("required");
    } else {
        map.insert("required".into(), Value::Array(required));
    }
    true
}

/// Adds upstream's `default`s to a definition's properties.
pub(super) fn add_defaults(name: &str, def: &mut Value) {
    let Some(fields) = table().get(name) else {
        return;
    };
    let Some(props) = def.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for f in fields {
        if let (Some(default), Some(Value::Object(prop))) = (&f.default, props.get_mut(f.name)) {
            prop.insert("default".into(), default.clone());
        }
    }
}
