//! Subresources that connect somewhere else rather than read or write an
//! object (upstream's `rest.Connecter` and streaming getters: `pods/log`,
//! `pods/exec`, `nodes/proxy`, …): the handler is given the whole request
//! and answers it, possibly streaming a body or upgrading the connection.

use std::sync::Arc;

use apimachinery::query_params::QueryParams;
use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use axum::body::Body;
use futures::future::BoxFuture;
use http::request::Parts;
use http::{Method, Response};

use super::negotiation::Encoding;
use super::response;
use crate::authentication::user::UserInfo;

/// What a connect handler is given.
pub struct ConnectRequest {
    /// The request head; its extensions keep the connection's upgrade.
    pub parts: Parts,
    pub body: Body,
    pub info: Arc<RequestInfo>,
    pub user: Arc<UserInfo>,
}

impl ConnectRequest {
    /// The namespace of the parent object ("" when cluster-scoped).
    pub fn namespace(&self) -> &str {
        &self.info.namespace
    }

    /// The parent object's name as given in the path.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// The path below the subresource (`pods/p/proxy/<path>`), or the
    /// `path` query parameter when the URL has none (upstream's
    /// `NewConnectOptions` with a subpath key); `None` when neither is set.
    pub fn subpath(&self) -> Option<String> {
        // parts: resource, name, subresource, then the subpath.
        if self.info.parts.len() > 3 {
            let mut path = self.info.parts[3..].join("/");
            if self.parts.uri.path().ends_with('/') {
                path.push('/');
            }
            return Some(path);
        }
        self.query().first("path").map(str::to_owned)
    }

    /// The query parameters, read as upstream's parameter codec reads them
    /// (see [`QueryParams`]).
    pub fn query(&self) -> QueryParams {
        QueryParams::parse(self.parts.uri.query().unwrap_or(""))
    }

    /// Every value of a query parameter, in order.
    pub fn query_values(&self, key: &str) -> Vec<String> {
        let query = self.query();
        query.all(key).into_iter().map(str::to_owned).collect()
    }
}

/// `key=value&…` with form encoding, for the query of a backend request.
pub fn encode_query<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (key, value) in pairs {
        query.append_pair(key, value);
    }
    query.finish()
}

/// Answers one connect request; errors become Status responses.
pub type ConnectHandler = Arc<
    dyn Fn(ConnectRequest) -> BoxFuture<'static, Result<Response<Body>, ApiError>> + Send + Sync,
>;

/// One connect subresource of a served resource.
pub struct ConnectResource {
    /// `<resource>/<subresource>`.
    pub path: String,
    /// The kind discovery lists for it (upstream's `New()` of the REST).
    pub kind: String,
    /// The HTTP methods it answers (upstream's `ConnectMethods`); the
    /// discovery verbs follow from them.
    pub methods: &'static [Method],
    pub handler: ConnectHandler,
}

impl ConnectResource {
    /// The discovery verbs of the methods, sorted as upstream lists them.
    pub fn verbs(&self) -> Vec<String> {
        let mut verbs: Vec<String> = self
            .methods
            .iter()
            .filter_map(|m| match *m {
                Method::GET => Some("get"),
                Method::POST => Some("create"),
                Method::PUT => Some("update"),
                Method::PATCH => Some("patch"),
                Method::DELETE => Some("delete"),
                _ => None,
            })
            .map(str::to_owned)
            .collect();
        verbs.sort();
        verbs.dedup();
        verbs
    }
}

/// Serves one request to a connect subresource.
pub async fn serve(
    resource: &ConnectResource,
    info: Arc<RequestInfo>,
    parts: Parts,
    body: Body,
) -> Response<Body> {
    if !resource.methods.contains(&parts.method) {
        let (group, resource_name) = (&info.api_group, &info.resource);
        let err = ApiError::method_not_supported(group, resource_name, parts.method.as_str());
        return response::error(&err, Encoding::Json);
    }
    let user = parts
        .extensions
        .get::<Arc<UserInfo>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(UserInfo::anonymous()));
    let request = ConnectRequest {
        parts,
        body,
        info,
        user,
    };
    match (resource.handler)(request).await {
        Ok(resp) => resp,
        Err(e) => response::error(&e, Encoding::Json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::request_info::RequestInfoResolver;

    fn request(method: &str, uri: &str) -> ConnectRequest {
        let info = RequestInfoResolver::default()
            .resolve(
                method,
                uri.split('?').next().unwrap_or(uri),
                uri.split_once('?').map_or("", |(_, q)| q),
            )
            .unwrap();
        let (parts, body) = http::Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap()
            .into_parts();
        ConnectRequest {
            parts,
            body,
            info: Arc::new(info),
            user: Arc::new(UserInfo::anonymous()),
        }
    }

    #[test]
    fn the_subpath_comes_from_the_url_or_the_path_parameter() {
        let r = request("GET", "/api/v1/nodes/n1/proxy/stats/summary/");
        assert_eq!(r.subpath().as_deref(), Some("stats/summary/"));
        assert_eq!(r.name(), "n1");
        let r = request("GET", "/api/v1/namespaces/ns/pods/p/proxy?path=%2Fmetrics");
        assert_eq!(r.subpath().as_deref(), Some("/metrics"));
        assert_eq!(r.namespace(), "ns");
        let r = request(
            "GET",
            "/api/v1/namespaces/ns/pods/p/exec?command=ls&command=-l",
        );
        assert_eq!(r.subpath(), None);
        assert_eq!(r.query_values("command"), ["ls", "-l"]);
        assert_eq!(
            encode_query([("command", "echo hi"), ("port", "1,2")]),
            "command=echo+hi&port=1%2C2"
        );
    }

    #[test]
    fn verbs_follow_the_methods() {
        let handler: ConnectHandler = Arc::new(|_| Box::pin(async { Ok(Response::default()) }));
        let resource = ConnectResource {
            path: "pods/proxy".into(),
            kind: "PodProxyOptions".into(),
            methods: &[
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
                Method::HEAD,
                Method::OPTIONS,
            ],
            handler,
        };
        assert_eq!(
            resource.verbs(),
            ["create", "delete", "get", "patch", "update"]
        );
    }
}
