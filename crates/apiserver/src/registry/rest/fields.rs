//! The fields a field selector may match beyond `metadata.name` and
//! `metadata.namespace` (upstream's per-resource `GetAttrs`/`storage.AttrFunc`
//! and `SelectableFields`, with `registry/generic`'s object meta fields).

use std::collections::BTreeMap;

use serde_json::Value;

pub trait SelectableFields: Send + Sync + 'static {
    /// Field values a field selector may match (e.g. pods' spec.nodeName
    /// and status.phase).
    fn selectable_fields(&self, _obj: &Value, _fields: &mut BTreeMap<String, String>) {}

    /// The names of the extra selectable fields, to reject unknown ones.
    fn selectable_field_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether a field selector may name `field`. Strategies whose fields
    /// are only known at run time (custom resources) answer here instead
    /// of by name list.
    fn is_selectable_field(&self, field: &str) -> bool {
        self.selectable_field_names().contains(&field)
    }
}
