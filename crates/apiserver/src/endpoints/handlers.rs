//! The one REST handler for every resource (upstream's
//! `endpoints/handlers`): it reads the request, calls the generic registry
//! store, and writes the answer. Resources differ only by their strategies.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::{ApiError, Status, StatusDetails};
use axum::body::Body;
use bytes::Bytes;
use http::{request::Parts, Method, Response, StatusCode};
use serde_json::Value;
use storage::{offload, GetOptions, ListOptions};

use super::negotiation::{self, Encoding, Negotiated, Shape};
use super::query::{FieldValidation, ListParams, Query};
use super::response;
use super::selection;
use super::trace_util;
use super::warning::Warnings;
use super::watch;
use super::writers;
use crate::admission::RequestContext;
use crate::audit::AuditContext;
use crate::authentication::user::UserInfo;
use crate::registry::rest::table::IncludeObject;
use crate::registry::store::{DeleteOutcome, Store, Target, WriteOptions};
use crate::registry::DeleteOptions;

/// Upstream's limit on request bodies (3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// What the URL addressed, resolved by the request-info step.
#[derive(Debug, Clone)]
pub struct ResourceRequest {
    pub verb: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Settings of the REST handler that come from the server's configuration.
#[derive(Debug, Clone)]
pub struct HandlerConfig {
    /// `--min-request-timeout`: watches last between this and twice this.
    pub min_request_timeout: Duration,
    /// Where watch events are counted.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Whether the WatchList gate allows `sendInitialEvents`.
    pub watch_list: bool,
    /// The APIResponseCompression gate: large responses are gzipped.
    pub response_compression: bool,
}

pub async fn serve(
    store: Arc<Store>,
    req: ResourceRequest,
    parts: Parts,
    body: Body,
    config: &HandlerConfig,
) -> Response<Body> {
    // The body is read before anything can fail, so that an early error
    // answer never leaves an HTTP/1.1 client still sending.
    let body = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(e) => return response::error(&e, Encoding::Json),
    };
    let query = Query::parse(parts.uri.query());
    let table_ok = matches!(req.verb.as_str(), "get" | "list");
    let protobuf_ok = protobuf_codec::supports(&store.info.api_version(), &store.info.kind);
    let neg =
        match negotiation::negotiate(&parts.headers, query.get("pretty"), table_ok, protobuf_ok) {
            Ok(neg) => with_include_object(neg, &query),
            Err(e) => return response::error(&e, Encoding::Json),
        };
    let mut warnings = Warnings::default();
    // Admission plugins see the request's user and add warnings through it.
    let request = RequestContext::audited(
        parts
            .extensions
            .get::<Arc<UserInfo>>()
            .cloned()
            .unwrap_or_else(|| Arc::new(UserInfo::anonymous())),
        parts.extensions.get::<Arc<AuditContext>>().cloned(),
    );
    let group_version = store.info.api_version();
    let handled = async {
        let dispatched = dispatch(
            &store,
            &req,
            &parts,
            body,
            &query,
            &neg,
            &mut warnings,
            config,
        );
        let resp = dispatched
            .await
            .unwrap_or_else(|e| response::error(&e, neg.encoding));
        let compress = config.response_compression;
        writers::serialize_object(resp, &parts, &neg, &group_version, compress).await
    };
    let mut resp = match trace_util::span_name(&req.verb) {
        Some(name) => {
            let fields = || trace_util::trace_fields(&parts);
            request
                .scope(component_base::tracing::in_span(name, fields, handled))
                .await
        }
        None => request.scope(handled).await,
    };
    for message in request.take_warnings() {
        warnings.add(message);
    }
    warnings.apply(resp.headers_mut());
    resp
}

fn with_include_object(mut neg: Negotiated, query: &Query) -> Negotiated {
    if let (Shape::Table(_), Some(v)) = (neg.shape, query.get("includeObject")) {
        if let Some(include) = IncludeObject::parse(v) {
            neg.shape = Shape::Table(include);
        }
    }
    neg
}

#[allow(clippy::too_many_arguments)]
async fn dispatch(
    store: &Arc<Store>,
    req: &ResourceRequest,
    parts: &Parts,
    body: Bytes,
    query: &Query,
    neg: &Negotiated,
    warnings: &mut Warnings,
    config: &HandlerConfig,
) -> Result<Response<Body>, ApiError> {
    if !routed(req) {
        return Err(method_not_allowed());
    }
    let target = match req.subresource.as_deref() {
        None => Target::Main,
        Some("status") if store.info.has_status => Target::Status,
        Some("scale") if store.info.has_scale => {
            let scale = super::scale::ScaleRequest {
                verb: &req.verb,
                namespace: req.namespace.as_deref(),
                name: req.name.as_deref().unwrap_or(""),
                headers: &parts.headers,
            };
            return super::scale::serve(store, scale, body, query, neg).await;
        }
        Some(sub) => match store
            .strategies
            .update
            .update_subresources()
            .iter()
            .find(|s| s.name == sub)
        {
            Some(s) => Target::Subresource(s.name),
            None => return Err(not_found_subresource(store, req)),
        },
    };
    if !store.info.supports(&req.verb) {
        return Err(ApiError::method_not_supported(
            &store.info.group,
            &store.info.resource,
            &req.verb,
        ));
    }
    let ns = req.namespace.as_deref();
    let name = req.name.as_deref().unwrap_or("");
    match req.verb.as_str() {
        "get" => get(store, ns, name, query, neg).await,
        "list" => list(store, ns, query, neg).await,
        "watch" => {
            let params = query.list_options()?;
            if params.send_initial_events.is_some() && !config.watch_list {
                return Err(watch::watch_list_disabled());
            }
            let at = (ns, req.name.as_deref());
            watch::serve(store, at, params, neg, config, parts).await
        }
        "create" => create(store, ns, &parts.headers, body, query, neg, warnings).await,
        "update" => {
            update(
                store,
                ns,
                name,
                target,
                &parts.headers,
                body,
                query,
                neg,
                warnings,
            )
            .await
        }
        "patch" => {
            super::patch::serve(store, ns, name, target, &parts.headers, body, query, neg).await
        }
        "delete" => {
            let body = options_body(&parts.headers, body)?;
            delete(store, ns, name, &parts.method, body, query, neg).await
        }
        "deletecollection" => {
            let body = options_body(&parts.headers, body)?;
            delete_collection(store, ns, body, query, neg).await
        }
        other => Err(ApiError::method_not_supported(
            &store.info.group,
            &store.info.resource,
            other,
        )),
    }
}

fn method_not_allowed() -> ApiError {
    ApiError::new(
        405,
        apimachinery::status::StatusReason::MethodNotAllowed,
        "the server does not allow this method on the requested resource",
    )
}

async fn get(
    store: &Store,
    ns: Option<&str>,
    name: &str,
    query: &Query,
    neg: &Negotiated,
) -> Result<Response<Body>, ApiError> {
    let opts = GetOptions {
        version: query.get_version()?,
        ..Default::default()
    };
    let obj = store.get(ns, name, opts).await?;
    Ok(response::object(
        StatusCode::OK,
        &obj,
        neg,
        &store.info,
        store.strategies.table.as_ref(),
    ))
}

/// Whether upstream serves this verb at this path: item verbs need a name,
/// create and deletecollection must not have one, subresources take
/// get/update/patch.
fn routed(req: &ResourceRequest) -> bool {
    let named = req.name.is_some();
    match (req.verb.as_str(), req.subresource.is_some()) {
        ("get" | "update" | "patch", _) => named,
        ("delete", false) => named,
        ("create" | "deletecollection", false) => !named,
        // A list or watch may name one object through its field selector.
        ("list" | "watch", false) => true,
        // Other subresources (token, eviction, …) answer 404 until built.
        ("create", true) => true,
        _ => false,
    }
}

fn not_found_subresource(store: &Store, req: &ResourceRequest) -> ApiError {
    ApiError::not_found(
        &store.info.group,
        &format!(
            "{}/{}",
            store.info.resource,
            req.subresource.as_deref().unwrap_or("")
        ),
        req.name.as_deref().unwrap_or(""),
    )
}

pub async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    // Most requests (GETs, LISTs, WATCHes) end with their headers: nothing
    // to poll the connection for.
    if axum::body::HttpBody::is_end_stream(&body) {
        return Ok(Bytes::new());
    }
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::request_entity_too_large("limit is 3145728"))
}

async fn list(
    store: &Store,
    ns: Option<&str>,
    query: &Query,
    neg: &Negotiated,
) -> Result<Response<Body>, ApiError> {
    let params = query.list_options()?;
    let opts = list_options(store, &params)?;
    let list = store.list(ns, opts).await?;
    // Encoding thousands of objects holds a core for milliseconds to
    // seconds: off the async workers, so a storm of large LISTs cannot keep
    // them from health checks, watches and small requests.
    let (info, strategies, neg) = (store.info.clone(), store.strategies.clone(), *neg);
    Ok(offload::run_for(list.items.len(), move || {
        response::list(list, &neg, &info, &strategies)
    })
    .await)
}

pub fn list_options(store: &Store, params: &ListParams) -> Result<ListOptions, ApiError> {
    Ok(ListOptions {
        version: params.version,
        predicate: selection::predicate(store, &params.label_selector, &params.field_selector)?,
        limit: params.limit,
        continue_token: params.continue_token.clone(),
        recursive: true,
    })
}

/// Decodes a request body into an object of the store's type: the
/// encoding, apiVersion/kind, and unknown fields per `fieldValidation`.
pub fn decode_body(
    store: &Store,
    headers: &http::HeaderMap,
    bytes: &[u8],
    validation: FieldValidation,
    warnings: &mut Warnings,
) -> Result<Value, ApiError> {
    let protobuf_ok = protobuf_codec::supports(&store.info.api_version(), &store.info.kind);
    let encoding = negotiation::body_encoding_for(headers, protobuf_ok)?;
    let value =
        super::body::decode(encoding, bytes).map_err(|e| match e.unrecognized_detail() {
            Some(detail) => unrecognized(store, &detail, bytes),
            None => decode_error(store, e),
        })?;
    let value = check_type(store, value)?;
    let decoded = store
        .strategies
        .scheme
        .decode(value)
        .map_err(|e| decode_error(store, e))?;
    if !decoded.unknown_fields.is_empty() {
        match validation {
            FieldValidation::Ignore => {}
            FieldValidation::Warn => {
                for field in &decoded.unknown_fields {
                    warnings.add(format!("unknown field \"{field}\""));
                }
            }
            FieldValidation::Strict => {
                return Err(super::patch::strict_error(&decoded.unknown_fields));
            }
        }
    }
    Ok(decoded.object)
}

fn decode_error(store: &Store, e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {e}",
        store.info.kind, store.info.version, store.info.kind
    ))
}

/// Upstream's answer to a body whose kind cannot even be determined (CBOR
/// it cannot read, or a serializer's own limit): the message names the
/// expected type and summarizes the body.
fn unrecognized(store: &Store, detail: &str, bytes: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): {detail} ({})",
        store.info.kind,
        super::body::summarize(bytes)
    ))
}

/// The body must be an object of the URL's kind; a missing apiVersion or
/// kind is filled in, as upstream's decoder defaults them from the URL.
fn check_type(store: &Store, mut value: Value) -> Result<Value, ApiError> {
    let Some(map) = value.as_object_mut() else {
        return Err(decode_error(store, "the request body is not an object"));
    };
    let want_version = store.info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(want_version));
        }
        Some(v) if v == want_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want_version})"
            )))
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(store.info.kind.clone()));
        }
        Some(k) if k == store.info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                store.info.kind
            )))
        }
    }
    Ok(value)
}

/// The namespace of a namespaced object must match the URL's; an empty one
/// takes the URL's.
fn check_namespace(store: &Store, ns: Option<&str>, obj: &mut Value) -> Result<(), ApiError> {
    if !store.info.namespaced {
        return Ok(());
    }
    let meta = crate::registry::object_meta::metadata_mut(obj);
    let url_ns = ns.unwrap_or("");
    match meta.get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            meta.insert("namespace".into(), Value::String(url_ns.to_owned()));
            Ok(())
        }
        Some(body_ns) if body_ns == url_ns => Ok(()),
        Some(_) => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
}

async fn create(
    store: &Store,
    ns: Option<&str>,
    headers: &http::HeaderMap,
    bytes: Bytes,
    query: &Query,
    neg: &Negotiated,
    warnings: &mut Warnings,
) -> Result<Response<Body>, ApiError> {
    super::apply::check_write_options(query, "CreateOptions")?;
    let opts = WriteOptions {
        dry_run: query.dry_run()?,
    };
    let mut obj = decode_body(store, headers, &bytes, query.field_validation()?, warnings)?;
    check_namespace(store, ns, &mut obj)?;
    store.strategies.scheme.apply_defaults(&mut obj);
    let manager = super::apply::manager_name(query, headers);
    super::apply::Tracker::for_store(store, Target::Main, manager).update(None, &mut obj);
    let created = store.create(obj, &opts).await?;
    Ok(response::object(
        StatusCode::CREATED,
        &created,
        neg,
        &store.info,
        store.strategies.table.as_ref(),
    ))
}

#[allow(clippy::too_many_arguments)]
async fn update(
    store: &Store,
    ns: Option<&str>,
    name: &str,
    target: Target,
    headers: &http::HeaderMap,
    bytes: Bytes,
    query: &Query,
    neg: &Negotiated,
    warnings: &mut Warnings,
) -> Result<Response<Body>, ApiError> {
    super::apply::check_write_options(query, "UpdateOptions")?;
    let opts = WriteOptions {
        dry_run: query.dry_run()?,
    };
    let mut obj = decode_body(store, headers, &bytes, query.field_validation()?, warnings)?;
    check_namespace(store, ns, &mut obj)?;
    let body_name = crate::registry::object_meta::name(&obj);
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    store.strategies.scheme.apply_defaults(&mut obj);
    let obj = Arc::new(obj);
    let manager = super::apply::manager_name(query, headers);
    let tracker = super::apply::Tracker::for_store(store, target, manager);
    let mutate = Arc::new(move |current: Option<&Value>| {
        let mut new = (*obj).clone();
        tracker.update(current, &mut new);
        Ok(new)
    });
    let (stored, created) = store.update(ns, name, target, mutate, &opts).await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(response::object(
        code,
        &stored,
        neg,
        &store.info,
        store.strategies.table.as_ref(),
    ))
}

/// A DeleteOptions body sent in CBOR (as clients that prefer CBOR send
/// it) is read in its JSON form.
fn options_body(headers: &http::HeaderMap, body: Bytes) -> Result<Bytes, ApiError> {
    if body.is_empty() || !matches!(negotiation::body_encoding(headers), Ok(Encoding::Cbor)) {
        return Ok(body);
    }
    let invalid = |e: String| ApiError::bad_request(format!("invalid DeleteOptions: {e}"));
    let value = super::body::decode(Encoding::Cbor, &body).map_err(|e| invalid(e.to_string()))?;
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .map_err(|e| invalid(e.to_string()))
}

/// The DeleteOptions of a request: its body, or its query parameters.
fn delete_options(bytes: &[u8], query: &Query) -> Result<DeleteOptions, ApiError> {
    DeleteOptions::from_request(bytes, query.params())
}

async fn delete(
    store: &Store,
    ns: Option<&str>,
    name: &str,
    _method: &Method,
    bytes: Bytes,
    query: &Query,
    neg: &Negotiated,
) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(&bytes, query)?;
    let outcome = store.delete(ns, name, &opts).await?;
    let neg = Negotiated {
        shape: Shape::Object,
        ..*neg
    };
    // Upstream answers 202 for an object kept for later deletion only when
    // the client asked for cascading with `orphanDependents: false`.
    let pending = if opts.orphan_dependents == Some(false) {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok(match outcome {
        DeleteOutcome::Pending(obj) => response::object(
            pending,
            &obj,
            &neg,
            &store.info,
            store.strategies.table.as_ref(),
        ),
        DeleteOutcome::Deleted(obj) if store.strategies.return_deleted_object => response::object(
            StatusCode::OK,
            &obj,
            &neg,
            &store.info,
            store.strategies.table.as_ref(),
        ),
        DeleteOutcome::Deleted(obj) => {
            let status = Status::success(Some(StatusDetails {
                name: name.to_owned(),
                group: store.info.group.clone(),
                kind: store.info.resource.clone(),
                uid: crate::registry::object_meta::uid(&obj)
                    .unwrap_or_default()
                    .to_owned(),
                ..Default::default()
            }));
            response::respond(
                StatusCode::OK,
                response::encode(&status, neg.encoding, neg.pretty),
                neg.encoding,
            )
        }
    })
}

async fn delete_collection(
    store: &Store,
    ns: Option<&str>,
    bytes: Bytes,
    query: &Query,
    neg: &Negotiated,
) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(&bytes, query)?;
    let params = query.list_options()?;
    let list_opts = list_options(store, &params)?;
    let deleted = store.delete_collection(ns, list_opts, &opts).await?;
    let list = storage::ListResult {
        items: deleted,
        ..Default::default()
    };
    let neg = Negotiated {
        shape: Shape::Object,
        ..*neg
    };
    // Off the async workers, as a list's encoding (see `list`).
    let (info, strategies) = (store.info.clone(), store.strategies.clone());
    Ok(offload::run_for(list.items.len(), move || {
        response::list(list, &neg, &info, &strategies)
    })
    .await)
}
