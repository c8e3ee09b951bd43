//! Defaulting of custom resources from schema `default`s (upstream's
//! `defaulting.Default` and `PruneNonNullableNullsWithoutDefaults`).

use serde_json::Value;

use crate::props::Props;

fn is_non_nullable_null(x: &Value, s: Option<&Props>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// Sets missing fields (and nulls of non-nullable fields) to their schema
/// `default`, everywhere below `s`.
pub fn apply(x: &mut Value, s: &Props) {
    match x {
        Value::Object(map) => {
            for (k, prop) in &s.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                match map.get(k) {
                    Some(v) if !is_non_nullable_null(v, Some(prop)) => {}
                    _ => {
                        map.insert(k.clone(), default.clone());
                    }
                }
            }
            let additional = s.additional_schema();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop);
                } else if s.additional_properties.is_some() {
                    if let Some(ap) = additional {
                        if is_non_nullable_null(v, Some(ap)) {
                            if let Some(default) = &ap.default {
                                *v = default.clone();
                            }
                        }
                        apply(v, ap);
                    }
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items_schema() else {
                return;
            };
            for v in items.iter_mut() {
                if is_non_nullable_null(v, Some(item_schema)) {
                    if let Some(default) = &item_schema.default {
                        *v = default.clone();
                    }
                }
                apply(v, item_schema);
            }
        }
        _ => {}
    }
}

fn field_schema<'a>(field: &str, s: Option<&'a Props>) -> Option<&'a Props> {
    let s = s?;
    s.properties.get(field).or_else(|| s.additional_schema())
}

/// Drops nulls of non-nullable fields that have no default (they would
/// otherwise fail validation although the client meant "unset").
pub fn prune_non_nullable_nulls(x: &mut Value, s: Option<&Props>) {
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let schema = field_schema(k, s);
                let drop =
                    v.is_null() && schema.is_some_and(|s| !s.nullable && s.default.is_none());
                if !drop {
                    prune_non_nullable_nulls(v, schema);
                }
                !drop
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(Props::items_schema);
            for v in items.iter_mut() {
                prune_non_nullable_nulls(v, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Props {
        Props::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "default": {}, "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "auto", "nullable": true},
                "plain": {"type": "string"},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"}}}},
                "limits": {"type": "object", "additionalProperties": {"type": "string", "default": "0"}}
            }}
        }}))
    }

    #[test]
    fn defaults_missing_fields_recursively() {
        let mut obj = json!({});
        apply(&mut obj, &schema());
        assert_eq!(obj, json!({"spec": {"replicas": 1, "mode": "auto"}}));

        let mut obj = json!({"spec": {"replicas": null, "mode": null, "ports": [{}, {"protocol": "UDP"}],
                                       "limits": {"cpu": null}}});
        apply(&mut obj, &schema());
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 1, "mode": null, "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}],
                            "limits": {"cpu": "0"}}})
        );
    }

    #[test]
    fn drops_non_nullable_nulls_without_default() {
        let mut obj =
            json!({"spec": {"plain": null, "replicas": null, "mode": null}, "other": null});
        prune_non_nullable_nulls(&mut obj, Some(&schema()));
        assert_eq!(
            obj,
            json!({"spec": {"replicas": null, "mode": null}, "other": null})
        );
    }
}
