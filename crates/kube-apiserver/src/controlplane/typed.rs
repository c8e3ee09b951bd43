//! Built-in resources are checked against their type definitions from the
//! k8s-openapi crate: a request body is decoded into the Rust type (as
//! upstream decodes into the Go type), which rejects wrongly typed fields and
//! drops unknown ones, and encoded back. The fields that did not survive the
//! round trip are the unknown fields `fieldValidation` reports; quantities
//! come back in canonical form (see [`QuantityFields`]).

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use apiserver::registry::rest::{Decoded, Scheme};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::quantities::QuantityFields;

/// The scheme of a built-in resource: decoding through type `K`,
/// defaulting by `inner`.
pub struct Typed<K> {
    inner: Arc<dyn Scheme>,
    /// Where `K` holds quantities, learnt on first decode.
    quantities: OnceLock<Option<QuantityFields>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Typed<K> {
    pub fn new(inner: Arc<dyn Scheme>) -> Self {
        Typed {
            inner,
            quantities: OnceLock::new(),
            _kind: PhantomData,
        }
    }
}

/// Paths present (and not null) in `input` but missing from `output`.
pub fn unknown_fields(input: &Value, output: &Value, path: &str, found: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(inp), Value::Object(out)) => {
            for (key, value) in inp {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match out.get(key) {
                    None if !value.is_null() => found.push(child),
                    None => {}
                    Some(out_value) => unknown_fields(value, out_value, &child, found),
                }
            }
        }
        (Value::Array(inp), Value::Array(out)) => {
            for (i, (a, b)) in inp.iter().zip(out).enumerate() {
                unknown_fields(a, b, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

/// k8s-openapi writes `apiVersion` and `kind` on every embedded resource
/// (a StatefulSet's `volumeClaimTemplates`); Go keeps what was sent, so
/// below the root they are dropped where the input had none.
fn drop_added_type_meta(input: &Value, output: &mut Value) {
    match (input, output) {
        (Value::Object(inp), Value::Object(out)) => {
            for (key, value) in out.iter_mut() {
                if let Some(given) = inp.get(key) {
                    drop_nested_type_meta(given, value);
                }
            }
        }
        (Value::Array(inp), Value::Array(out)) => {
            for (given, value) in inp.iter().zip(out.iter_mut()) {
                drop_nested_type_meta(given, value);
            }
        }
        _ => {}
    }
}

fn drop_nested_type_meta(input: &Value, output: &mut Value) {
    if let (Value::Object(inp), Value::Object(out)) = (input, &mut *output) {
        for key in ["apiVersion", "kind"] {
            if inp.get(key).is_none_or(Value::is_null) {
                out.remove(key);
            }
        }
    }
    drop_added_type_meta(input, output);
}

impl<K> Scheme for Typed<K>
where
    K: Serialize + DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
{
    fn decode(&self, obj: Value) -> Result<Decoded, String> {
        let typed: K = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
        let mut object = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
        if let Some(fields) = self.quantities.get_or_init(QuantityFields::of::<K>) {
            fields
                .canonicalize(&mut object)
                .map_err(|e| e.to_string())?;
        }
        drop_added_type_meta(&obj, &mut object);
        let mut unknown = Vec::new();
        unknown_fields(&obj, &object, "", &mut unknown);
        Ok(Decoded {
            object,
            unknown_fields: unknown,
        })
    }

    fn apply_defaults(&self, obj: &mut Value) {
        self.inner.apply_defaults(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::registry::store::DefaultStrategy;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_dropped_and_reported() {
        let s = Typed::<ConfigMap>::new(Arc::new(DefaultStrategy));
        let decoded = s
            .decode(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": true}))
            .expect("decodes");
        assert_eq!(decoded.unknown_fields, vec!["metadata.bogus", "extra"]);
        assert!(decoded.object.get("extra").is_none());
        assert_eq!(decoded.object["data"]["k"], "v");
    }

    #[test]
    fn wrongly_typed_fields_are_errors() {
        let s = Typed::<ConfigMap>::new(Arc::new(DefaultStrategy));
        let err = s
            .decode(json!({"metadata": {"name": "a"}, "data": {"k": 5}}))
            .expect_err("bad type");
        assert!(err.contains("invalid type"), "{err}");
    }
}
