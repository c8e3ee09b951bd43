//! The `scale` subresource (autoscaling/v1 Scale) of workloads: a view of
//! `spec.replicas`, `status.replicas` and the selector, read and written
//! through the same store as the object, so `kubectl scale` works.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::{json, Value};
use storage::GetOptions;

use super::negotiation::{Encoding, Negotiated};
use super::patch;
use super::query::Query;
use super::response;
use crate::registry::{Mutate, Store, Target, WriteOptions};

/// The label selector as the string form Scale's status carries.
fn selector_string(obj: &Value) -> String {
    let Some(sel) = obj.pointer("/spec/selector") else {
        return String::new();
    };
    // ReplicationControllers have a plain map; the others a LabelSelector.
    let labels = sel.get("matchLabels").unwrap_or(sel);
    let mut parts: Vec<String> = labels
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, v)| v.is_string())
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => parts.push(format!("{key} in ({})", values.join(","))),
            "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
            "Exists" => parts.push(key.to_owned()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            _ => {}
        }
    }
    parts.join(",")
}

/// The Scale view of a workload.
pub fn to_scale(obj: &Value) -> Value {
    let meta = |k: &str| {
        obj.pointer(&format!("/metadata/{k}"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut metadata = json!({
        "name": meta("name"),
        "uid": meta("uid"),
        "resourceVersion": meta("resourceVersion"),
        "creationTimestamp": meta("creationTimestamp"),
    });
    if let Some(ns) = obj.pointer("/metadata/namespace") {
        metadata["namespace"] = ns.clone();
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector_string(obj),
        },
    })
}

/// Applies a Scale's desired replicas (and resourceVersion precondition)
/// to the workload.
fn apply_scale(current: &Value, scale: &Value) -> Result<Value, ApiError> {
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            current
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            &[apimachinery::field_errors::FieldError::invalid(
                &apimachinery::field_errors::Path::new("spec").child("replicas"),
                json!(replicas),
                "must be greater than or equal to 0",
            )],
        ));
    }
    let mut obj = current.clone();
    obj["spec"]["replicas"] = json!(replicas);
    if let Some(rv) = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        obj["metadata"]["resourceVersion"] = json!(rv);
    }
    Ok(obj)
}

fn respond(code: StatusCode, obj: &Value, neg: &Negotiated) -> Response<Body> {
    response::respond(
        code,
        response::encode(&to_scale(obj), neg.encoding, neg.pretty),
        neg.encoding,
    )
}

/// What a request to the scale subresource addresses.
pub struct ScaleRequest<'a> {
    pub verb: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub headers: &'a HeaderMap,
}

pub async fn serve(
    store: &Arc<Store>,
    req: ScaleRequest<'_>,
    body: Bytes,
    query: &Query,
    neg: &Negotiated,
) -> Result<Response<Body>, ApiError> {
    let (verb, ns, name, headers) = (req.verb, req.namespace, req.name, req.headers);
    let neg = *neg;
    let opts = WriteOptions {
        dry_run: query.dry_run()?,
    };
    let mutate: Mutate = match verb {
        "get" => {
            let obj = store
                .get(
                    ns,
                    name,
                    GetOptions {
                        version: query.get_version()?,
                        ..Default::default()
                    },
                )
                .await?;
            return Ok(respond(StatusCode::OK, &obj, &neg));
        }
        "update" => {
            let scale: Value = match super::negotiation::body_encoding(headers)? {
                Encoding::Json => serde_json::from_slice(&body),
                Encoding::Yaml => serde_yaml::from_slice(&body).map_err(serde::de::Error::custom),
                Encoding::Protobuf => {
                    protobuf_codec::decode(&body).map_err(serde::de::Error::custom)
                }
            }
            .map_err(|e| ApiError::bad_request(format!("Scale cannot be decoded: {e}")))?;
            Arc::new(move |current: Option<&Value>| {
                let current = current.ok_or_else(|| ApiError::not_found("", "", ""))?;
                apply_scale(current, &scale)
            })
        }
        "patch" => {
            let p = patch::parse_patch(headers, &body)?;
            Arc::new(move |current: Option<&Value>| {
                let current = current.ok_or_else(|| ApiError::not_found("", "", ""))?;
                let scale = patch::apply(&p, &body, &to_scale(current))?;
                apply_scale(current, &scale)
            })
        }
        other => {
            return Err(ApiError::method_not_supported(
                "autoscaling",
                "scale",
                other,
            ))
        }
    };
    let (obj, _) = store.update(ns, name, Target::Main, mutate, &opts).await?;
    Ok(respond(StatusCode::OK, &obj, &neg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_view_and_update() {
        let d = json!({"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 1}});
        let s = to_scale(&d);
        assert_eq!(s["spec"]["replicas"], 2);
        assert_eq!(s["status"]["selector"], "app=web");
        assert_eq!(s["metadata"]["namespace"], "ns");
        let updated = apply_scale(&d, &json!({"spec": {"replicas": 5}})).unwrap_or_default();
        assert_eq!(updated["spec"]["replicas"], 5);
        assert!(apply_scale(&d, &json!({"spec": {"replicas": -1}})).is_err());
        let rc = json!({"spec": {"selector": {"app": "x"}}});
        assert_eq!(selector_string(&rc), "app=x");
    }
}
