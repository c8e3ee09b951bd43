//! PATCH: JSON patch (RFC 6902) and JSON merge patch (RFC 7386) applied to
//! the current object inside the store's read-modify-write loop, so a patch
//! is never applied to a stale object.
//!
//! Strategic merge patch is applied by [`super::strategic_merge`],
//! server-side apply by [`super::apply`]; every patch records its manager
//! in the managed fields.

use std::sync::{Arc, Mutex};

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::serializer::{json, DecodeError};
use apimachinery::status::ApiError;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::Value;

use super::negotiation::Negotiated;
use super::query::{FieldValidation, Query};
use super::response;
use crate::registry::store::{Store, Target, WriteOptions};

/// The most operations one JSON patch may hold (upstream's
/// `maxJSONPatchOperations`); more is 413.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    super::apply::APPLY_PATCH_TYPE,
];

/// What resources without strategic merge metadata accept (upstream's
/// list for custom resources).
const UNSTRUCTURED_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch types a 415 lists: `types`, then CBOR apply while the
/// `CBORServingAndStorage` gate is on (upstream appends it last).
fn accepted(types: &[&'static str]) -> Vec<&'static str> {
    let mut all = types.to_vec();
    if super::negotiation::cbor_enabled() {
        all.push(super::apply::APPLY_CBOR_PATCH_TYPE);
    }
    all
}

#[derive(Debug, Clone)]
pub enum Patch {
    Json(json_patch::Patch),
    Merge(Value),
    Strategic(Value),
}

pub fn parse_patch(headers: &HeaderMap, bytes: &[u8]) -> Result<Patch, ApiError> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let bad = |e: DecodeError| ApiError::bad_request(format!("error decoding patch: {e}"));
    match essence {
        "application/json-patch+json" => {
            let ops: json_patch::Patch = json::decode_as(bytes).map_err(bad)?;
            if ops.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::request_entity_too_large(&format!(
                    "The allowed maximum operations in a JSON patch is \
                     {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.0.len()
                )));
            }
            Ok(Patch::Json(ops))
        }
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            let v: Value = json::decode(bytes).map_err(bad)?;
            if !v.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: a merge patch must be a JSON object",
                ));
            }
            if essence == "application/merge-patch+json" {
                Ok(Patch::Merge(v))
            } else {
                Ok(Patch::Strategic(v))
            }
        }
        _ => Err(ApiError::unsupported_media_type(&accepted(PATCH_TYPES))),
    }
}

pub fn apply(patch: &Patch, raw: &[u8], current: &Value) -> Result<Value, ApiError> {
    let mut doc = current.clone();
    match patch {
        Patch::Json(p) => json_patch::patch(&mut doc, p).map_err(|e| {
            ApiError::invalid(
                "",
                "",
                "",
                &[FieldError::invalid(
                    &Path::new("patch"),
                    Value::String(String::from_utf8_lossy(raw).into_owned()),
                    e.to_string(),
                )],
            )
        })?,
        Patch::Merge(p) => json_patch::merge(&mut doc, p),
        Patch::Strategic(p) => doc = super::strategic_merge::apply(doc, p)?,
    }
    Ok(doc)
}

#[allow(clippy::too_many_arguments)]
pub async fn serve(
    store: &Arc<Store>,
    ns: Option<&str>,
    name: &str,
    target: Target,
    headers: &HeaderMap,
    bytes: Bytes,
    query: &Query,
    neg: &Negotiated,
) -> Result<Response<Body>, ApiError> {
    if super::apply::is_apply(headers) {
        return super::apply::serve(store, ns, name, target, headers, bytes, query, neg).await;
    }
    super::apply::check_patch_options(query, false)?;
    let tracker =
        super::apply::Tracker::for_store(store, target, super::apply::manager_name(query, headers));
    let opts = WriteOptions {
        dry_run: query.dry_run()?,
    };
    let validation = query.field_validation()?;
    let patch = parse_patch(headers, &bytes)?;
    if matches!(patch, Patch::Strategic(_)) && !store.strategies.scheme.supports_strategic_merge() {
        return Err(ApiError::unsupported_media_type(&accepted(
            UNSTRUCTURED_PATCH_TYPES,
        )));
    }
    let unknown = Arc::new(Mutex::new(Vec::<String>::new()));
    let step_store = store.clone();
    let step_unknown = unknown.clone();
    let info = store.info.clone();
    let owned_name = name.to_owned();
    let mutate = Arc::new(move |current: Option<&Value>| {
        let current =
            current.ok_or_else(|| ApiError::not_found(&info.group, &info.resource, &owned_name))?;
        let patched = apply(&patch, &bytes, current)?;
        let decoded = step_store
            .strategies
            .scheme
            .decode(patched)
            .map_err(ApiError::bad_request)?;
        if validation == FieldValidation::Strict && !decoded.unknown_fields.is_empty() {
            return Err(strict_error(&decoded.unknown_fields));
        }
        if let Ok(mut u) = step_unknown.lock() {
            *u = decoded.unknown_fields;
        }
        let mut object = decoded.object;
        step_store.strategies.scheme.apply_defaults(&mut object);
        tracker.update(Some(current), &mut object);
        Ok(object)
    });
    let (stored, _) = store.update(ns, name, target, mutate, &opts).await?;
    let unknown = unknown.lock().map(|u| u.clone()).unwrap_or_default();
    let mut resp = response::object(
        StatusCode::OK,
        &stored,
        neg,
        &store.info,
        store.strategies.table.as_ref(),
    );
    if validation == FieldValidation::Warn {
        let mut w = super::warning::Warnings::default();
        for f in &unknown {
            w.add(format!("unknown field \"{f}\""));
        }
        w.apply(resp.headers_mut());
    }
    Ok(resp)
}

pub fn strict_error(unknown_fields: &[String]) -> ApiError {
    let fields: Vec<String> = unknown_fields
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    ApiError::bad_request(format!("strict decoding error: {}", fields.join(", ")))
}
