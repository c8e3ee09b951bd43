//! The proxy to aggregated API servers (upstream's
//! `pkg/apiserver/handler_proxy.go`): a request for the group version of an
//! APIService backed by a Service is sent to that Service, over TLS checked
//! against the APIService's `caBundle` with the server name
//! `<service>.<namespace>.svc` (or not checked with `insecureSkipTLSVerify`),
//! presenting the aggregator's proxy client certificate, with the user in
//! `X-Remote-User`, `X-Remote-Group` and `X-Remote-Extra-*` and never the
//! user's own credentials. Watches and other streams pass through as they
//! come; upgrades (exec, attach, port-forward) are relayed.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use apiserver::authentication::user::UserInfo;
use apiserver::endpoints::proxy::{self, Location, Transport};
use axum::body::Body;
use client_go::transport::ClientAuth;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use serde_json::Value;

use crate::controllers::openapi::downloader::{Handler, Handlers};
use crate::controllers::status::remote::transport_for;
use crate::resolvers::ServiceResolver;

/// Where the requests of one remote APIService go.
pub struct ProxyTarget {
    /// The APIService's name.
    pub name: String,
    pub namespace: String,
    pub service: String,
    pub port: i64,
    /// The APIService's `Available` condition is True.
    pub available: bool,
    /// The connection settings, or why they could not be built.
    pub transport: Result<Transport, String>,
}

impl ProxyTarget {
    /// The target of an APIService with `spec.service`, else None.
    pub fn of(api_service: &Value, client: Option<&ClientAuth>) -> Option<ProxyTarget> {
        let service = api_service["spec"]["service"].as_object()?;
        let text = |key: &str| service.get(key).and_then(Value::as_str).unwrap_or("");
        let available = api_service["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            });
        Some(ProxyTarget {
            name: api_service["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            namespace: text("namespace").to_owned(),
            service: text("name").to_owned(),
            port: service.get("port").and_then(Value::as_i64).unwrap_or(443),
            available,
            transport: transport_for(api_service, client),
        })
    }
}

/// The remote APIServices by group and version; cloning shares the table.
#[derive(Clone, Default)]
pub struct ProxyTable(Arc<RwLock<Routes>>);

/// Targets by group and version.
type Routes = HashMap<(String, String), Arc<ProxyTarget>>;

impl ProxyTable {
    /// Routes `group/version` to `target`, or (None) no longer.
    pub fn set(&self, group: &str, version: &str, target: Option<ProxyTarget>) {
        let Ok(mut table) = self.0.write() else {
            return;
        };
        let key = (group.to_owned(), version.to_owned());
        match target {
            Some(t) => table.insert(key, Arc::new(t)),
            None => table.remove(&key),
        };
    }

    /// Forgets every route of the APIService `name`.
    pub fn remove_named(&self, name: &str) -> Vec<(String, String)> {
        let Ok(mut table) = self.0.write() else {
            return Vec::new();
        };
        let gone: Vec<_> = table
            .iter()
            .filter(|(_, t)| t.name == name)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &gone {
            table.remove(key);
        }
        gone
    }

    pub fn get(&self, group: &str, version: &str) -> Option<Arc<ProxyTarget>> {
        let table = self.0.read().ok()?;
        table.get(&(group.to_owned(), version.to_owned())).cloned()
    }

    pub fn serves_group(&self, group: &str) -> bool {
        self.0
            .read()
            .is_ok_and(|t| t.keys().any(|(g, _)| g == group))
    }
}

/// The group and version of `/apis/<group>/<version>[/...]`.
pub fn group_version(path: &str) -> Option<(&str, &str)> {
    let mut parts = path.strip_prefix("/apis/")?.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some((group, version))
}

/// Go's `http.Error`: a plain-text answer.
pub fn text_error(code: StatusCode, message: &str) -> Response<Body> {
    let mut resp = Response::new(Body::from(format!("{message}\n")));
    *resp.status_mut() = code;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Whether a byte may stand unescaped in a header key (an RFC 7230 token
/// character other than `%`).
fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b)
}

/// client-go's `headerKeyEscape`: extra keys percent-encoded.
fn escape_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if is_key_byte(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// client-go's `SetAuthProxyHeaders`: the user's own `X-Remote-User`,
/// `X-Remote-Uid`, `X-Remote-Group` and `X-Remote-Extra-*` headers dropped,
/// then the authenticated user's; the UID only when `uid` (the
/// `RemoteRequestHeaderUID` feature) and the user has one.
pub fn set_auth_proxy_headers(headers: &mut HeaderMap, user: &UserInfo, uid: bool) {
    let stale: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            matches!(k, "x-remote-user" | "x-remote-uid" | "x-remote-group")
                || k.starts_with("x-remote-extra-")
        })
        .cloned()
        .collect();
    for name in stale {
        headers.remove(name);
    }
    if let Ok(name) = HeaderValue::from_str(&user.name) {
        headers.insert("x-remote-user", name);
    }
    if uid && !user.uid.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&user.uid) {
            headers.insert("x-remote-uid", value);
        }
    }
    for group in &user.groups {
        if let Ok(group) = HeaderValue::from_str(group) {
            headers.append("x-remote-group", group);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) =
            HeaderName::from_bytes(format!("x-remote-extra-{}", escape_key(key)).as_bytes())
        else {
            continue;
        };
        for value in values {
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.append(name.clone(), value);
            }
        }
    }
}

/// Proxies the requests of remote APIServices.
#[derive(Clone)]
pub struct ProxyHandler {
    pub table: ProxyTable,
    pub resolver: ServiceResolver,
    /// `--aggregator-reject-forwarding-redirect`.
    pub reject_forwarding_redirects: bool,
    /// The `RemoteRequestHeaderUID` feature: the user's UID in `X-Remote-Uid`.
    pub remote_uid: bool,
}

/// What replaces a backend's redirect (upstream's upgrade-aware proxy).
const REDIRECT_REJECTED: &str =
    "the backend attempted to redirect this request, which is not permitted";

/// A 3xx answer with a `Location` becomes a 502.
fn reject_redirect(resp: Response<Body>) -> Response<Body> {
    if !resp.status().is_redirection() || !resp.headers().contains_key(header::LOCATION) {
        return resp;
    }
    let mut rejected = Response::new(Body::from(REDIRECT_REJECTED));
    *rejected.status_mut() = StatusCode::BAD_GATEWAY;
    rejected.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    rejected
}

impl ProxyHandler {
    /// Serves a request of a remote APIService's group version; hands any
    /// other back.
    pub async fn serve(&self, req: Request<Body>) -> Result<Response<Body>, Request<Body>> {
        let Some(target) = group_version(req.uri().path()).and_then(|(g, v)| self.table.get(g, v))
        else {
            return Err(req);
        };
        Ok(self.proxy(&target, req).await)
    }

    /// The handlers of the routed APIServices, for the controllers that
    /// read their servers (OpenAPI, discovery).
    pub fn handlers(&self) -> Handlers {
        let this = self.clone();
        Arc::new(move |group: &str, version: &str| {
            let target = this.table.get(group, version)?;
            let proxy = this.clone();
            let handler: Handler = Arc::new(move |req| {
                let (proxy, target) = (proxy.clone(), target.clone());
                Box::pin(async move { proxy.proxy(&target, req).await })
            });
            Some(handler)
        })
    }

    /// Sends `req` to `target` (503 while it is unavailable).
    async fn proxy(&self, target: &ProxyTarget, req: Request<Body>) -> Response<Body> {
        if !target.available {
            return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
        let transport = match &target.transport {
            Ok(t) => t,
            Err(e) => return text_error(StatusCode::INTERNAL_SERVER_ERROR, e),
        };
        let Some(user) = req.extensions().get::<Arc<UserInfo>>().cloned() else {
            return text_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
        };
        let endpoint = match self
            .resolver
            .resolve(&target.namespace, &target.service, target.port)
        {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(namespace = %target.namespace, name = %target.service, error = %e, "error resolving");
                return text_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
            }
        };
        let location = Location {
            https: true,
            host: endpoint.host,
            port: endpoint.port,
            path: req.uri().path().to_owned(),
            query: req.uri().query().map(str::to_owned),
        };
        let (mut parts, body) = req.into_parts();
        set_auth_proxy_headers(&mut parts.headers, &user, self.remote_uid);
        match proxy::forward(transport, &location, parts, body, false).await {
            Ok(resp) if self.reject_forwarding_redirects => reject_redirect(resp),
            Ok(resp) => resp,
            Err(e) => text_error(StatusCode::SERVICE_UNAVAILABLE, &e.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[test]
    fn redirects_with_a_location_are_rejected() {
        let redirect = Response::builder()
            .status(302)
            .header("location", "https://elsewhere/")
            .body(Body::empty())
            .unwrap();
        assert_eq!(reject_redirect(redirect).status(), StatusCode::BAD_GATEWAY);
        let plain = Response::builder().status(304).body(Body::empty()).unwrap();
        assert_eq!(reject_redirect(plain).status(), StatusCode::NOT_MODIFIED);
    }

    #[test]
    fn group_versions_are_read_from_api_paths() {
        assert_eq!(group_version("/apis/m.io/v1"), Some(("m.io", "v1")));
        assert_eq!(group_version("/apis/m.io/v1/ns/x"), Some(("m.io", "v1")));
        assert_eq!(group_version("/apis/m.io"), None);
        assert_eq!(group_version("/api/v1"), None);
    }

    #[test]
    fn the_user_replaces_any_remote_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("x-remote-user", HeaderValue::from_static("mallory"));
        headers.insert("x-remote-extra-evil", HeaderValue::from_static("1"));
        headers.insert("x-remote-uid", HeaderValue::from_static("forged"));
        headers.insert("x-remote-other", HeaderValue::from_static("kept"));
        let user = UserInfo {
            name: "alice".into(),
            uid: "1234".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: BTreeMap::from([("example.com/a b".into(), vec!["x".into()])]),
        };
        let mut without_uid = headers.clone();
        set_auth_proxy_headers(&mut without_uid, &user, false);
        assert!(without_uid.get("x-remote-uid").is_none());
        set_auth_proxy_headers(&mut headers, &user, true);
        assert_eq!(headers["x-remote-user"], "alice");
        assert_eq!(headers["x-remote-uid"], "1234");
        assert_eq!(headers["x-remote-other"], "kept");
        let groups: Vec<_> = headers.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, ["dev", "system:authenticated"]);
        assert!(headers.get("x-remote-extra-evil").is_none());
        assert_eq!(headers["x-remote-extra-example.com%2Fa%20b"], "x");
    }

    #[test]
    fn only_service_backed_api_services_are_targets() {
        let local = json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps"}});
        assert!(ProxyTarget::of(&local, None).is_none());
        let remote = json!({"metadata": {"name": "v1.m.io"}, "spec": {"group": "m.io",
            "service": {"namespace": "ns", "name": "api", "port": 8443},
            "caBundle": "not base64!"},
            "status": {"conditions": [{"type": "Available", "status": "True"}]}});
        let target = ProxyTarget::of(&remote, None).expect("a target");
        assert!(target.available);
        assert_eq!((target.service.as_str(), target.port), ("api", 8443));
        assert!(target.transport.is_err(), "a caBundle that is not base64");
    }
}
