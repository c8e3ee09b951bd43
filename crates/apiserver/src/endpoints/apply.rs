//! Server-side apply (`PATCH` with `application/apply-patch+yaml`) and the
//! managed fields every write records (upstream's `fieldmanager` wiring in
//! the create, update and patch handlers). The ownership rules live in the
//! `structured-merge` crate; this module chooses the schema and manager of
//! a request, runs the apply inside the store's read-modify-write loop and
//! turns conflicts into upstream's 409.

use std::sync::{Arc, Mutex};

use apimachinery::status::{ApiError, StatusCause, StatusReason};
use apimachinery::validation::options::{
    options_invalid, validate_patch_options, validate_write_options, WriteOptions as OptionsSpec,
};
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::Value;
use structured_merge::fieldpath::{PathElement, Set};
use structured_merge::managed::{ApplyError, FieldManager};
use structured_merge::schema::{Schema, TypeRef};
use structured_merge::typed::{Ty, Typer};

use super::negotiation::{Encoding, Negotiated};
use super::query::{FieldValidation, Query};
use super::response;
use super::warning::Warnings;
use crate::registry::object_meta;
use crate::registry::resource::ResourceInfo;
use crate::registry::store::{Store, Target, WriteOptions};

/// The content type of server-side apply.
pub const APPLY_PATCH_TYPE: &str = "application/apply-patch+yaml";

/// Server-side apply with a CBOR body (with the `CBORServingAndStorage`
/// gate only).
pub const APPLY_CBOR_PATCH_TYPE: &str = "application/apply-patch+cbor";

/// Whether a PATCH is a server-side apply.
pub fn is_apply(headers: &HeaderMap) -> bool {
    apply_cbor(headers).is_some()
}

/// `Some(true)` for a CBOR apply, `Some(false)` for a YAML one, `None`
/// for any other PATCH.
fn apply_cbor(headers: &HeaderMap) -> Option<bool> {
    let essence = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split(';').next())?
        .trim();
    match essence {
        APPLY_PATCH_TYPE => Some(false),
        APPLY_CBOR_PATCH_TYPE if super::negotiation::cbor_enabled() => Some(true),
        _ => None,
    }
}

/// Who a write is recorded for: `fieldManager`, else the User-Agent up to
/// its first `/` (printable characters, at most 128 bytes).
pub fn manager_name(query: &Query, headers: &HeaderMap) -> String {
    if let Some(m) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let prefix = agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > apimachinery::validation::options::FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// The write options of the query as upstream's option validation sees
/// them: `fieldManager`, every `dryRun` value and `fieldValidation`.
fn options_spec<'a>(query: &'a Query, dry_run: &'a [String]) -> OptionsSpec<'a> {
    OptionsSpec {
        field_manager: query.get("fieldManager").unwrap_or(""),
        dry_run,
        field_validation: query.get("fieldValidation").unwrap_or(""),
    }
}

/// Upstream's `ValidateCreateOptions` / `ValidateUpdateOptions` over the
/// query (`kind` names them in the 422): the field manager, `dryRun` and
/// `fieldValidation`.
pub fn check_write_options(query: &Query, kind: &str) -> Result<(), ApiError> {
    let dry_run = query.all("dryRun");
    let errors = validate_write_options(&options_spec(query, &dry_run));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(options_invalid(kind, &errors))
    }
}

/// Upstream's `ValidatePatchOptions` over the query: apply needs a field
/// manager, only apply may force, and the write options' rules. Returns
/// `force` (converted as upstream: any value but `0` and `false` is true).
pub fn check_patch_options(query: &Query, apply: bool) -> Result<bool, ApiError> {
    let force = query.opt_flag("force");
    let dry_run = query.all("dryRun");
    let errors = validate_patch_options(&options_spec(query, &dry_run), force, apply);
    if !errors.is_empty() {
        return Err(options_invalid("PatchOptions", &errors));
    }
    Ok(force.unwrap_or(false))
}

/// The field manager of one request: the resource's schema, version and
/// subresource, and the manager the write is recorded for.
#[derive(Debug, Clone)]
pub struct Tracker {
    /// The kind's root type; `None` (custom resources without a schema)
    /// reads values as deduced: maps granular, lists atomic.
    root: Option<TypeRef>,
    /// The strategy's own schema (custom resources); `None` uses the
    /// built-in one.
    types: Option<Arc<(Schema, String)>>,
    api_version: String,
    target: Target,
    /// `status` or `scale` for writes to a subresource.
    subresource: &'static str,
    has_status: bool,
    manager: String,
}

impl Tracker {
    pub fn new(info: &ResourceInfo, target: Target, manager: String) -> Self {
        let root = structured_merge::builtin::root(&info.group, &info.version, &info.kind)
            .map(TypeRef::named);
        let subresource = target.subresource();
        Tracker {
            root,
            types: None,
            api_version: info.api_version(),
            target,
            subresource,
            has_status: info.has_status,
            manager,
        }
    }

    /// The tracker of a write to `store`, typed by its strategy's schema
    /// when it has one.
    pub fn for_store(store: &Store, target: Target, manager: String) -> Self {
        Tracker::new(&store.info, target, manager)
            .with_type_schema(store.strategies.scheme.type_schema())
    }

    /// Types objects with `types` (a schema and its root type's name)
    /// instead of the built-in schema; `None` keeps the built-in one.
    pub fn with_type_schema(self, types: Option<Arc<(Schema, String)>>) -> Self {
        match types {
            Some(types) => Tracker {
                root: Some(TypeRef::named(types.1.as_str())),
                types: Some(types),
                ..self
            },
            None => self,
        }
    }

    /// Writes through the `scale` subresource, which change only the
    /// replicas of the object: the writer owns them with subresource
    /// `scale`.
    pub fn for_scale(info: &ResourceInfo, manager: String) -> Self {
        Tracker {
            subresource: "scale",
            ..Tracker::new(info, Target::Main, manager)
        }
    }

    fn field_manager(&self, live: Option<&Value>, new: &Value) -> FieldManager<'_> {
        let ty = match &self.root {
            Some(r) => Ty::Ref(r),
            None => Ty::Untyped,
        };
        let schema = match &self.types {
            Some(types) => &types.0,
            None => structured_merge::builtin::schema(),
        };
        let typer = Typer::new(schema);
        FieldManager::new(typer, ty, &self.api_version, self.subresource)
            .with_reset_fields(self.reset_fields(live, new))
    }

    /// Fields the strategy resets for this target, which nobody owns: the
    /// status of the main resource, everything but status and metadata of
    /// the status subresource.
    fn reset_fields(&self, live: Option<&Value>, new: &Value) -> Set {
        let mut reset = Set::new();
        match self.target {
            Target::Main if self.has_status && self.subresource.is_empty() => {
                reset.insert(&[PathElement::field("status")])
            }
            Target::Main | Target::Subresource(_) => {}
            Target::Status => {
                let keys = [live, Some(new)]
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_object)
                    .flat_map(|m| m.keys());
                for key in keys {
                    if !matches!(key.as_str(), "status" | "metadata" | "apiVersion" | "kind") {
                        reset.insert(&[PathElement::field(key.as_str())]);
                    }
                }
            }
        }
        reset
    }

    /// Records a create (`live` None), update or non-apply patch in
    /// `new`'s managed fields.
    pub fn update(&self, live: Option<&Value>, new: &mut Value) {
        let fm = self.field_manager(live, new);
        fm.update(live, new, &self.manager, chrono::Utc::now());
    }

    fn apply(
        &self,
        live: Option<&Value>,
        config: &Value,
        force: bool,
    ) -> Result<Value, ApplyError> {
        let fm = self.field_manager(live, config);
        fm.apply(live, config, &self.manager, force, chrono::Utc::now())
    }
}

/// `PATCH` with `application/apply-patch+yaml`.
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
    let force = check_patch_options(query, true)?;
    let opts = WriteOptions {
        dry_run: query.dry_run()?,
    };
    let validation = query.field_validation()?;
    let config = decode_config(&bytes, apply_cbor(headers) == Some(true))?;
    let request = Arc::new(ApplyRequest {
        store: store.clone(),
        tracker: Tracker::for_store(store, target, manager_name(query, headers)),
        config,
        force,
        validation,
        name: name.to_owned(),
        namespace: ns.unwrap_or("").to_owned(),
        unknown: Mutex::new(Vec::new()),
    });
    let step = request.clone();
    let mutate = Arc::new(move |current: Option<&Value>| step.apply(current));
    let (stored, created) = match store.update(ns, name, target, mutate, &opts).await {
        Err(e) if e.code == 404 && target == Target::Main => {
            // Apply creates what does not exist yet.
            let obj = request.apply(None)?;
            (store.create(obj, &opts).await?, true)
        }
        other => other?,
    };
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut resp = response::object(
        code,
        &stored,
        neg,
        &store.info,
        store.strategies.table.as_ref(),
    );
    if validation == FieldValidation::Warn {
        let mut w = Warnings::default();
        if let Ok(unknown) = request.unknown.lock() {
            for f in unknown.iter() {
                w.add(format!("unknown field \"{f}\""));
            }
        }
        w.apply(resp.headers_mut());
    }
    Ok(resp)
}

/// The applied configuration: YAML (or JSON, which is YAML), or CBOR,
/// holding one object.
fn decode_config(bytes: &[u8], cbor: bool) -> Result<Value, ApiError> {
    let bad = |e: String| ApiError::bad_request(format!("error decoding patch: {e}"));
    let encoding = if cbor { Encoding::Cbor } else { Encoding::Yaml };
    let value = super::body::decode(encoding, bytes).map_err(|e| bad(e.to_string()))?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: the applied configuration must be an object",
        ));
    }
    Ok(value)
}

/// Everything one apply needs, shared by the store's retries.
struct ApplyRequest {
    store: Arc<Store>,
    tracker: Tracker,
    config: Value,
    force: bool,
    validation: FieldValidation,
    name: String,
    namespace: String,
    /// Unknown fields of the last attempt, for warnings.
    unknown: Mutex<Vec<String>>,
}

impl ApplyRequest {
    /// The object to store when `current` is the live one.
    fn apply(&self, current: Option<&Value>) -> Result<Value, ApiError> {
        let info = &self.store.info;
        let gvk = gvk_of(&self.config);
        if gvk
            != (
                info.group.as_str(),
                info.version.as_str(),
                info.kind.as_str(),
            )
        {
            return Err(ApiError::bad_request(format!(
                "invalid object type: {}/{}, Kind={}",
                gvk.0, gvk.1, gvk.2
            )));
        }
        if self
            .config
            .pointer("/metadata/managedFields")
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        let mut applied = self
            .tracker
            .apply(current, &self.config, self.force)
            .map_err(|e| self.apply_error(e))?;
        self.check_name_and_namespace(&mut applied)?;
        let decoded = self
            .store
            .strategies
            .scheme
            .decode(applied)
            .map_err(ApiError::bad_request)?;
        if self.validation == FieldValidation::Strict && !decoded.unknown_fields.is_empty() {
            return Err(super::patch::strict_error(&decoded.unknown_fields));
        }
        if let Ok(mut u) = self.unknown.lock() {
            *u = decoded.unknown_fields;
        }
        let mut object = decoded.object;
        self.store.strategies.scheme.apply_defaults(&mut object);
        Ok(object)
    }

    fn apply_error(&self, e: ApplyError) -> ApiError {
        match e {
            ApplyError::Conflicts(conflicts) => {
                let causes = conflicts
                    .causes()
                    .into_iter()
                    .map(|(field, message)| StatusCause {
                        reason: "FieldManagerConflict".into(),
                        message,
                        field,
                    })
                    .collect();
                ApiError::apply_conflict(causes, conflicts.to_string())
            }
            // Upstream answers 500 here (kubernetes/kubernetes#139253); the
            // request is at fault, so this answers 400 with its message.
            ApplyError::Invalid(errors) => {
                let meta = |k: &str| {
                    self.config
                        .pointer(&format!("/metadata/{k}"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let (g, v, k) = gvk_of(&self.config);
                ApiError::bad_request(format!(
                    "failed to create typed patch object ({}/{}; {g}/{v}, Kind={k}): {errors}",
                    meta("namespace"),
                    meta("name"),
                ))
            }
            other => ApiError::new(500, StatusReason::InternalError, other.to_string()),
        }
    }

    /// The object must be the URL's: same name, and the URL's namespace
    /// (filled in when missing, cleared for cluster-scoped resources).
    fn check_name_and_namespace(&self, obj: &mut Value) -> Result<(), ApiError> {
        let obj_name = object_meta::name(obj);
        if obj_name != self.name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({obj_name}) does not match the name on the URL ({})",
                self.name
            )));
        }
        let expected = if self.store.info.namespaced {
            self.namespace.as_str()
        } else {
            ""
        };
        let actual = object_meta::namespace(obj).unwrap_or("").to_owned();
        if actual == expected || actual.is_empty() || expected.is_empty() {
            let meta = object_meta::metadata_mut(obj);
            if expected.is_empty() {
                meta.shift_remove("namespace");
            } else {
                meta.insert("namespace".into(), Value::String(expected.to_owned()));
            }
            return Ok(());
        }
        Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ))
    }
}

/// (group, version, kind) of an object's apiVersion and kind.
fn gvk_of(obj: &Value) -> (&str, &str, &str) {
    let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    let (group, version) = text("apiVersion")
        .rsplit_once('/')
        .unwrap_or(("", text("apiVersion")));
    (group, version, text("kind"))
}

#[cfg(test)]
mod tests;
