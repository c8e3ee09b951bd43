//! Label and field selectors turned into a storage predicate. Field
//! selectors may name metadata.name, metadata.namespace and the fields the
//! resource's strategy declares; anything else is a 400, as upstream.

use std::collections::BTreeMap;

use apimachinery::fields::{field_label_not_supported, FieldSelector};
use apimachinery::labels::Selector;
use apimachinery::status::ApiError;
use serde_json::Value;
use storage::Predicate;

use crate::registry::store::Store;

pub fn predicate(store: &Store, label: &str, field: &str) -> Result<Predicate, ApiError> {
    let labels = Selector::parse(label).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(field).map_err(|e| ApiError::bad_request(e.to_string()))?;
    for req in fields.requirements() {
        let name = req.field.as_str();
        let known = matches!(name, "metadata.name" | "metadata.namespace")
            || store.strategies.fields.is_selectable_field(name);
        if !known {
            return Err(ApiError::bad_request(field_label_not_supported(name)));
        }
    }
    if labels.is_empty() && fields.is_empty() {
        return Ok(Predicate::everything());
    }
    let fields_of = store.strategies.fields.clone();
    let namespaced = store.info.namespaced;
    Ok(Predicate::new(move |obj: &Value| {
        let empty = serde_json::Map::new();
        let obj_labels = obj
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        if !labels.matches(obj_labels) {
            return false;
        }
        if fields.is_empty() {
            return true;
        }
        let mut set = BTreeMap::new();
        let meta = |k: &str| {
            obj.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        set.insert("metadata.name".to_owned(), meta("name"));
        if namespaced {
            set.insert("metadata.namespace".to_owned(), meta("namespace"));
        }
        fields_of.selectable_fields(obj, &mut set);
        fields.matches(&set)
    }))
}
