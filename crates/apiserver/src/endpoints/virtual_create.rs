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
use crate::authentication::user::UserInfo;
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
            let encoding = negotiation::body_encoding(&parts.headers)?;
            let decoded = super::body::decode(encoding, &bytes).map_err(|e| {
                ApiError::bad_request(format!(
                    "{} in version \"{}\" cannot be handled as a {}: {e}",
                    info.kind, info.version, info.kind
                ))
            })?;
            if !decoded.is_object() {
                return Err(ApiError::bad_request("the request body is not an object"));
            }
            let mut decoded = decoded;
            match_namespace(&mut decoded, info.namespaced, &request.namespace)?;
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

/// The object's namespace as upstream's create handler settles it: a
/// namespaced object without one takes the request's, one naming another
/// namespace is refused, a cluster-scoped object has none.
fn match_namespace(obj: &mut Value, namespaced: bool, request_ns: &str) -> Result<(), ApiError> {
    let body_ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if body_ns == request_ns {
        return Ok(());
    }
    if namespaced && !body_ns.is_empty() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let meta = crate::registry::object_meta::metadata_mut(obj);
    if namespaced {
        meta.insert("namespace".into(), Value::String(request_ns.to_owned()));
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_object_namespace_is_settled_as_upstream() {
        let mut local = json!({"metadata": {}});
        assert!(match_namespace(&mut local, true, "team").is_ok());
        assert_eq!(local["metadata"]["namespace"], "team");
        let mut other = json!({"metadata": {"namespace": "other"}});
        let err = match_namespace(&mut other, true, "team").unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "the namespace of the provided object does not match the namespace sent on the request"
        );
        let mut cluster = json!({"metadata": {"namespace": "team"}});
        assert!(match_namespace(&mut cluster, false, "").is_ok());
        assert_eq!(cluster["metadata"], json!({}));
    }
}
