//! Resources computed on every read and stored nowhere (upstream's REST
//! storages that only implement `Getter` and `Lister`, such as
//! `componentstatuses`): get and list run a handler; every other verb is
//! refused as upstream refuses verbs a storage does not implement.

use std::sync::Arc;

use apimachinery::fields::FieldSelector;
use apimachinery::labels::Selector;
use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use futures::future::BoxFuture;
use http::request::Parts;
use http::{Response, StatusCode};
use serde_json::{json, Value};

use super::negotiation::{self, Encoding, Negotiated, Shape};
use super::query::Query;
use super::response;
use crate::registry::rest::TableConvertor;
use crate::registry::ResourceInfo;

/// Computes every object of the resource.
pub type ListHandler = Arc<dyn Fn() -> BoxFuture<'static, Vec<Value>> + Send + Sync>;

/// Computes one object by name.
pub type GetHandler =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<Value, ApiError>> + Send + Sync>;

pub struct ComputedResource {
    pub info: ResourceInfo,
    /// Printer columns of the Table output.
    pub table: Arc<dyn TableConvertor>,
    pub get: GetHandler,
    pub list: ListHandler,
    /// A `Warning` sent with every answer (deprecated resources).
    pub warning: Option<&'static str>,
}

pub async fn serve(
    resource: &ComputedResource,
    request: &RequestInfo,
    parts: Parts,
) -> Response<Body> {
    let info = &resource.info;
    let query = Query::parse(parts.uri.query());
    let protobuf_ok = protobuf_codec::supports(&info.api_version(), &info.kind);
    let neg = match negotiation::negotiate(&parts.headers, query.get("pretty"), true, protobuf_ok) {
        Ok(n) => n,
        Err(e) => return response::error(&e, Encoding::Json),
    };
    let result = match request.verb.as_str() {
        "get" => (resource.get)(request.name.clone())
            .await
            .map(|obj| one(resource, obj, &neg)),
        "list" => list(resource, &query, &neg).await,
        verb => Err(ApiError::method_not_supported(
            &info.group,
            &info.resource,
            verb,
        )),
    };
    let mut resp = match result {
        Ok(body) => response::respond(StatusCode::OK, body, neg.encoding),
        Err(e) => response::error(&e, neg.encoding),
    };
    if let Some(message) = resource.warning {
        let mut warnings = super::warning::Warnings::default();
        warnings.add(message);
        warnings.apply(resp.headers_mut());
    }
    resp
}

fn with_type_meta(info: &ResourceInfo, mut obj: Value) -> Value {
    obj["apiVersion"] = json!(info.api_version());
    obj["kind"] = json!(info.kind);
    obj
}

fn one(resource: &ComputedResource, obj: Value, neg: &Negotiated) -> bytes::Bytes {
    let obj = with_type_meta(&resource.info, obj);
    match neg.shape {
        Shape::Table(include) => {
            let table = response::table(
                &[Arc::new(obj.into())],
                "",
                None,
                include,
                &resource.info,
                resource.table.as_ref(),
            );
            response::encode(&table, neg.encoding, neg.pretty)
        }
        _ => response::encode(&obj, neg.encoding, neg.pretty),
    }
}

/// Upstream filters computed lists by the request's selectors too, on the
/// objects' labels and `metadata.name`.
async fn list(
    resource: &ComputedResource,
    query: &Query,
    neg: &Negotiated,
) -> Result<bytes::Bytes, ApiError> {
    let labels = Selector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let info = &resource.info;
    let items: Vec<storage::Object> = (resource.list)()
        .await
        .into_iter()
        .filter(|obj| selected(obj, &labels, &fields))
        .map(|obj| Arc::new(with_type_meta(info, obj).into()))
        .collect();
    let body = match neg.shape {
        Shape::Table(include) => {
            let table = response::table(&items, "", None, include, info, resource.table.as_ref());
            response::encode(&table, neg.encoding, neg.pretty)
        }
        _ => response::encode(
            &json!({
                "kind": info.list_kind,
                "apiVersion": info.api_version(),
                "metadata": {},
                "items": items,
            }),
            neg.encoding,
            neg.pretty,
        ),
    };
    Ok(body)
}

fn selected(obj: &Value, labels: &Selector, fields: &FieldSelector) -> bool {
    let label_set: std::collections::BTreeMap<String, String> = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let field_set =
        std::collections::BTreeMap::from([("metadata.name".to_owned(), name.to_owned())]);
    labels.matches(&label_set) && fields.matches(&field_set)
}
