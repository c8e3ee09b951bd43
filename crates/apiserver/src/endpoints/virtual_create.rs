//! Resources that are computed, not stored (upstream's "creater-only" REST
//! storage such as SelfSubjectAccessReview or TokenReview, and "named
//! creaters" on a subresource such as `serviceaccounts/<name>/token`): a
//! POST runs a handler with the request's user and answers 201 with its
//! result, with the warnings the handler added to the request's context.

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use futures::future::BoxFuture;
use http::request::Parts;
use http::{Response, StatusCode};
use serde_json::Value;

use super::negotiation::{self, Encoding};
use super::query::Query;
use super::response;
use super::warning::Warnings;
use crate::admission::RequestContext;
use crate::audit::AuditContext;
use crate::filters::authentication::UserInfo;
use crate::registry::ResourceInfo;

/// What a create handler is given.
pub struct CreateRequest {
    /// The decoded body.
    pub body: Value,
    pub user: Arc<UserInfo>,
    pub namespace: Option<String>,
    /// The object named in the path (for a subresource, its parent).
    pub name: Option<String>,
}

/// Computes the answer of one request.
pub type CreateHandler =
    Arc<dyn Fn(CreateRequest) -> BoxFuture<'static, Result<Value, ApiError>> + Send + Sync>;

pub struct VirtualResource {
    pub info: ResourceInfo,
    pub create: CreateHandler,
}

pub async fn serve(
    resource: &VirtualResource,
    request: &RequestInfo,
    parts: Parts,
    body: Body,
) -> Response<Body> {
    let info = &resource.info;
    let verb = request.verb.as_str();
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let protobuf_ok = protobuf_codec::supports(&info.api_version(), &info.kind);
    let query = Query::parse(parts.uri.query());
    let neg = match negotiation::negotiate(&parts.headers, query.get("pretty"), false, protobuf_ok)
    {
        Ok(n) => n,
        Err(e) => return response::error(&e, Encoding::Json),
    };
    let user = parts
        .extensions
        .get::<Arc<UserInfo>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(UserInfo::anonymous()));
    // Handlers add warnings (and audit annotations) through the context,
    // as upstream's do through the request's.
    let context =
        RequestContext::audited(user, parts.extensions.get::<Arc<AuditContext>>().cloned());
    let result = context
        .scope(async {
            if verb != "create" {
                return Err(ApiError::method_not_supported(
                    &info.group,
                    &info.resource,
                    verb,
                ));
            }
            let bytes = super::handlers::read_body(body).await?;
            let decoded: Value = match negotiation::body_encoding(&parts.headers)? {
                Encoding::Json => serde_json::from_slice(&bytes).map_err(|e| e.to_string()),
                Encoding::Yaml => serde_yaml::from_slice(&bytes).map_err(|e| e.to_string()),
                Encoding::Protobuf => protobuf_codec::decode(&bytes).map_err(|e| e.to_string()),
                Encoding::Cbor => kube_cbor::decode(&bytes).map_err(|e| e.to_string()),
            }
            .map_err(|e| {
                ApiError::bad_request(format!(
                    "{} in version \"{}\" cannot be handled as a {}: {e}",
                    info.kind, info.version, info.kind
                ))
            })?;
            if !decoded.is_object() {
                return Err(ApiError::bad_request("the request body is not an object"));
            }
            let mut out = (resource.create)(CreateRequest {
                body: decoded,
                user: context.user.clone(),
                namespace: non_empty(&request.namespace),
                name: non_empty(&request.name),
            })
            .await?;
            // A handler may answer with a Status (upstream's named creaters
            // such as bindings and evictions do).
            if out.get("kind").and_then(Value::as_str) != Some("Status") {
                out["apiVersion"] = Value::String(info.api_version());
                out["kind"] = Value::String(info.kind.clone());
            }
            Ok(out)
        })
        .await;
    let mut resp = match result {
        Ok(out) => response::respond(
            StatusCode::CREATED,
            response::encode(&out, neg.encoding, neg.pretty),
            neg.encoding,
        ),
        Err(e) => response::error(&e, neg.encoding),
    };
    let mut warnings = Warnings::default();
    for message in context.take_warnings() {
        warnings.add(message);
    }
    warnings.apply(resp.headers_mut());
    resp
}
