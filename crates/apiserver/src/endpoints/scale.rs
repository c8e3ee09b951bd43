//! The `scale` subresource (autoscaling/v1 Scale) of workloads: a view of
//! `spec.replicas`, `status.replicas` and the selector, read and written
//! through the same store as the object, so `kubectl scale` works. The
//! writer owns the replicas in the managed fields with subresource `scale`.
//! Admission sees the write as upstream's scale storage shows it: an
//! update of the `scale` subresource whose objects are Scales.

use std::sync::Arc;

use apimachinery::status::ApiError;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::{json, Value};
use storage::GetOptions;

use super::negotiation::Negotiated;
use super::patch;
use super::query::Query;
use super::response;
use crate::admission::GroupVersionKind;
use crate::registry::admission::AdmissionView;
use crate::registry::store::ScalePaths;
use crate::registry::store::{Mutate, Store, WriteOptions};

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

/// Sets the value at a JSON pointer, creating missing parent objects.
fn set_pointer(obj: &mut Value, pointer: &str, value: Value) {
    let mut at = obj;
    for token in pointer.split('/').skip(1) {
        let key = token.replace("~1", "/").replace("~0", "~");
        if !at.is_object() {
            *at = json!({});
        }
        let Some(map) = at.as_object_mut() else {
            return;
        };
        at = map.entry(key).or_insert(Value::Null);
    }
    *at = value;
}

/// The Scale view of a workload (or custom resource, by its paths).
pub fn to_scale(obj: &Value, paths: &ScalePaths) -> Value {
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
        "spec": {"replicas": obj.pointer(&paths.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": scale_status(obj, paths),
    })
}

/// Scale's status; the selector is left out when empty, as upstream's
/// `omitempty`.
fn scale_status(obj: &Value, paths: &ScalePaths) -> Value {
    let replicas = obj.pointer(&paths.status_replicas).cloned();
    let mut status = json!({"replicas": replicas.unwrap_or(json!(0))});
    let selector = match &paths.label_selector {
        None => selector_string(obj),
        Some(p) => obj
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    };
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    status
}

/// Applies a Scale's desired replicas (and resourceVersion precondition)
/// to the workload.
fn apply_scale(mut obj: Value, scale: &Value, paths: &ScalePaths) -> Result<Value, ApiError> {
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            obj.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            &[apimachinery::field_errors::FieldError::invalid(
                &apimachinery::field_errors::Path::new("spec").child("replicas"),
                json!(replicas),
                "must be greater than or equal to 0",
            )],
        ));
    }
    set_pointer(&mut obj, &paths.spec_replicas, json!(replicas));
    if let Some(rv) = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        obj["metadata"]["resourceVersion"] = json!(rv);
    }
    Ok(obj)
}

/// What admission sees of a scale write: autoscaling/v1 Scale objects of
/// the `scale` subresource, whose changed replicas go back to the workload.
struct ScaleView {
    paths: ScalePaths,
}

impl AdmissionView for ScaleView {
    fn subresource(&self) -> &'static str {
        "scale"
    }

    fn kind(&self) -> GroupVersionKind {
        GroupVersionKind {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
        }
    }

    fn view(&self, object: &Value) -> Value {
        to_scale(object, &self.paths)
    }

    fn write_back(&self, object: Value, view: &Value) -> Result<Value, ApiError> {
        apply_scale(object, view, &self.paths)
    }
}

fn respond(code: StatusCode, obj: &Value, neg: &Negotiated, paths: &ScalePaths) -> Response<Body> {
    response::respond(
        code,
        response::encode(&to_scale(obj, paths), neg.encoding, neg.pretty),
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
    let paths = store.strategies.scale.clone();
    // Upstream validates a write's options before anything else.
    match verb {
        "update" => super::apply::check_write_options(query, "UpdateOptions")?,
        "patch" => {
            super::apply::check_patch_options(query, false)?;
        }
        _ => {}
    }
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
            return Ok(respond(StatusCode::OK, &obj, &neg, &paths));
        }
        "update" => {
            let encoding = super::negotiation::body_encoding(headers)?;
            let scale = super::body::decode(encoding, &body)
                .map_err(|e| ApiError::bad_request(format!("Scale cannot be decoded: {e}")))?;
            let paths = paths.clone();
            Arc::new(move |current: Option<&Value>| {
                let current = current.ok_or_else(|| ApiError::not_found("", "", ""))?;
                apply_scale(current.clone(), &scale, &paths)
            })
        }
        "patch" => {
            let p = patch::parse_patch(headers, &body)?;
            let paths = paths.clone();
            Arc::new(move |current: Option<&Value>| {
                let current = current.ok_or_else(|| ApiError::not_found("", "", ""))?;
                let scale = patch::apply(&p, &body, &to_scale(current, &paths))?;
                apply_scale(current.clone(), &scale, &paths)
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
    let tracker =
        super::apply::Tracker::for_scale(&store.info, super::apply::manager_name(query, headers))
            .with_type_schema(store.strategies.scheme.type_schema());
    let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
        let mut obj = mutate(current)?;
        tracker.update(current, &mut obj);
        Ok(obj)
    });
    let view = Arc::new(ScaleView {
        paths: paths.clone(),
    });
    let obj = store.update_viewed(ns, name, mutate, &opts, view).await?;
    Ok(respond(StatusCode::OK, &obj, &neg, &paths))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_view_and_update() {
        let d = json!({"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}},
            "status": {"replicas": 1}});
        let paths = ScalePaths::default();
        let s = to_scale(&d, &paths);
        assert_eq!(s["spec"]["replicas"], 2);
        assert_eq!(s["status"]["selector"], "app=web");
        assert_eq!(s["metadata"]["namespace"], "ns");
        let updated =
            apply_scale(d.clone(), &json!({"spec": {"replicas": 5}}), &paths).unwrap_or_default();
        assert_eq!(updated["spec"]["replicas"], 5);
        assert!(apply_scale(d, &json!({"spec": {"replicas": -1}}), &paths).is_err());
        let rc = json!({"spec": {"selector": {"app": "x"}}});
        assert_eq!(selector_string(&rc), "app=x");
    }

    #[test]
    fn custom_paths_are_read_and_written() {
        let paths = ScalePaths {
            spec_replicas: "/spec/size".into(),
            status_replicas: "/status/count".into(),
            label_selector: Some("/status/sel".into()),
        };
        let cr =
            json!({"metadata": {"name": "w"}, "spec": {}, "status": {"count": 3, "sel": "a=b"}});
        let s = to_scale(&cr, &paths);
        assert_eq!(s["spec"]["replicas"], 0);
        assert_eq!(s["status"]["replicas"], 3);
        assert_eq!(s["status"]["selector"], "a=b");
        let none = to_scale(&json!({"spec": {}}), &paths);
        assert!(none["status"].get("selector").is_none());
        let updated = apply_scale(cr, &json!({"spec": {"replicas": 4}}), &paths);
        assert_eq!(updated.unwrap_or_default()["spec"]["size"], 4);
    }
}

#[cfg(test)]
mod admission_tests {
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use serde_json::{json, Value};

    use super::ScaleView;
    use crate::admission::{
        Attributes, Chain, Handler, MutationInterface, Operation, Plugin, RequestContext,
        ValidationInterface,
    };
    use crate::authentication::user::UserInfo;
    use crate::registry::admission::WriteAdmission;
    use crate::registry::store::ScalePaths;
    use crate::registry::ResourceInfo;

    /// A webhook-like plugin: doubles the Scale's replicas, and records
    /// what each side saw.
    struct Doubler(Mutex<Vec<String>>);

    impl Handler for Doubler {
        fn handles(&self, _: Operation) -> bool {
            true
        }
    }

    fn seen(a: &Attributes) -> String {
        let replicas = |o: Option<&Value>| o.and_then(|o| o.pointer("/spec/replicas")).cloned();
        format!(
            "{}/{} {} {} {}/{} {:?} {:?}",
            a.kind.group,
            a.kind.version,
            a.kind.kind,
            a.resource.resource,
            a.name,
            a.subresource,
            replicas(a.object.as_ref()),
            replicas(a.old_object.as_deref().map(|o| o.value())),
        )
    }

    #[async_trait]
    impl MutationInterface for Doubler {
        async fn admit(&self, a: &mut Attributes) -> Result<(), apimachinery::status::ApiError> {
            self.0.lock().map(|mut l| l.push(seen(a))).ok();
            if let Some(scale) = a.object.as_mut() {
                let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
                scale["spec"]["replicas"] = json!(replicas * 2);
            }
            Ok(())
        }
    }

    #[async_trait]
    impl ValidationInterface for Doubler {
        async fn validate(&self, a: &Attributes) -> Result<(), apimachinery::status::ApiError> {
            self.0.lock().map(|mut l| l.push(seen(a))).ok();
            Ok(())
        }
    }

    fn deployments() -> ResourceInfo {
        ResourceInfo {
            has_status: true,
            has_scale: true,
            ..ResourceInfo::testing("apps", "Deployment")
        }
    }

    #[tokio::test]
    async fn scale_writes_are_admitted_as_scales_of_the_scale_subresource() {
        let plugin = Arc::new(Doubler(Mutex::new(Vec::new())));
        let chain = Arc::new(Chain::new(vec![Plugin::both("doubler", plugin.clone())]));
        let old: storage::Object = Arc::new(
            json!({"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"replicas": 1, "template": {}}, "status": {"replicas": 1}})
            .into(),
        );
        let mut new = Value::clone(&old);
        new["spec"]["replicas"] = json!(3);
        let context = RequestContext::new(Arc::new(UserInfo::anonymous()));
        let info = deployments();
        let admitted = context
            .scope(async {
                let view = Arc::new(ScaleView {
                    paths: ScalePaths::default(),
                });
                let admission =
                    WriteAdmission::for_request(Some(&chain), "", false).map(|a| a.viewed_as(view));
                let Some(admission) = admission else {
                    return Value::Null;
                };
                let new = admission
                    .admit(&info, Operation::Update, new, Some(old.clone()))
                    .await
                    .unwrap_or_default();
                admission
                    .validate(&info, Operation::Update, new, Some(old))
                    .await
                    .unwrap_or_default()
            })
            .await;
        // The mutation reached the deployment; the rest of it is untouched.
        assert_eq!(admitted["spec"]["replicas"], 6);
        assert_eq!(admitted["spec"]["template"], json!({}));
        let log = plugin.0.lock().map(|l| l.clone()).unwrap_or_default();
        assert_eq!(
            log,
            [
                "autoscaling/v1 Scale deployments web/scale Some(Number(3)) Some(Number(1))",
                "autoscaling/v1 Scale deployments web/scale Some(Number(6)) Some(Number(1))",
            ]
        );
    }
}
