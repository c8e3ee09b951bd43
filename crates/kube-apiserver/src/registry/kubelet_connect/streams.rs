//! `pods/exec`, `pods/attach` and `pods/portforward` (upstream's
//! `ExecREST`, `AttachREST` and `PortForwardREST`): the options of the
//! query become the kubelet's (`input`, `output`, `error`, `tty`,
//! `command`, `port`), and the client's upgrade request (SPDY/3.1 or
//! websocket) is relayed to `/<exec|attach>/<ns>/<pod>/<container>` or
//! `/portForward/<ns>/<pod>` on the pod's kubelet.

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use apiserver::authentication::user::UserInfo;
use apiserver::authorization::authorizer::Decision;
use apiserver::endpoints::connect::{encode_query, ConnectRequest};
use apiserver::endpoints::proxy::{self, Location};
use apiserver::filters::authorization::{attributes, forbidden};
use axum::body::Body;
use http::Response;
use serde_json::{json, Value};

use super::{query_bool, query_string, text, validate_container, Context};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Exec,
    Attach,
    PortForward,
}

/// The kubelet's query for exec and attach (upstream's `streamParams`).
fn stream_query(req: &ConnectRequest, kind: Kind) -> String {
    let flags = [
        ("stdin", "input"),
        ("stdout", "output"),
        ("stderr", "error"),
        ("tty", "tty"),
    ];
    let commands = if kind == Kind::Exec {
        req.query_values("command")
    } else {
        Vec::new()
    };
    let set = flags
        .into_iter()
        .filter(|(ours, _)| query_bool(req, ours))
        .map(|(_, kubelets)| (kubelets, "1"));
    encode_query(set.chain(commands.iter().map(|c| ("command", c.as_str()))))
}

/// The kubelet's query for port-forward: the requested ports, joined.
fn port_query(req: &ConnectRequest) -> Result<String, ApiError> {
    let ports = req
        .query_values("ports")
        .iter()
        .map(|p| {
            p.parse::<i32>().map(|n| n.to_string()).map_err(|_| {
                ApiError::bad_request(format!("strconv.ParseInt: parsing {p:?}: invalid syntax"))
            })
        })
        .collect::<Result<Vec<String>, ApiError>>()?;
    if ports.is_empty() {
        return Ok(String::new());
    }
    Ok(encode_query([("port", ports.join(",").as_str())]))
}

/// The options object admission sees (PodExecOptions, …).
fn options(req: &ConnectRequest, kind: Kind) -> (&'static str, Value) {
    let ports = || -> Vec<i64> {
        let values = req.query_values("ports");
        values.iter().filter_map(|p| p.parse().ok()).collect()
    };
    let streams = || {
        json!({"stdin": query_bool(req, "stdin"), "stdout": query_bool(req, "stdout"),
            "stderr": query_bool(req, "stderr"), "tty": query_bool(req, "tty"),
            "container": query_string(req, "container")})
    };
    match kind {
        Kind::Exec => {
            let mut options = streams();
            options["command"] = json!(req.query_values("command"));
            ("PodExecOptions", options)
        }
        Kind::Attach => ("PodAttachOptions", streams()),
        Kind::PortForward => ("PodPortForwardOptions", json!({"ports": ports()})),
    }
}

/// Upstream authorizes a websocket's GET to these subresources as the
/// `create` a SPDY client's POST is (`AuthorizePodWebsocketUpgradeCreatePermission`).
async fn ensure_create_allowed(
    ctx: &Context,
    info: &RequestInfo,
    user: &UserInfo,
) -> Result<(), ApiError> {
    if !ctx.websocket_needs_create || info.verb == "create" {
        return Ok(());
    }
    let info = RequestInfo {
        verb: "create".to_owned(),
        ..info.clone()
    };
    match ctx.authorization.decide(&attributes(user, &info)).await {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) | Decision::NoOpinion(reason) => {
            Err(forbidden(user, &info, &reason))
        }
    }
}

/// Serves one exec, attach or port-forward request.
pub(super) async fn serve(
    ctx: Arc<Context>,
    req: ConnectRequest,
    kind: Kind,
) -> Result<Response<Body>, ApiError> {
    let (info, user) = (req.info.clone(), req.user.clone());
    let (options_kind, options) = options(&req, kind);
    super::admit_connect(&ctx.pods, &info, user.clone(), options_kind, options).await?;
    ensure_create_allowed(&ctx, &info, &user).await?;
    let pod = super::get_pod(&ctx, &info).await?;
    let (namespace, name) = (
        text(&pod, "/metadata/namespace"),
        text(&pod, "/metadata/name"),
    );
    let (path, query) = match kind {
        Kind::Exec | Kind::Attach => {
            let container = validate_container(&query_string(&req, "container"), &pod)?;
            let verb = if kind == Kind::Exec { "exec" } else { "attach" };
            let path = format!("/{verb}/{namespace}/{name}/{container}");
            (path, stream_query(&req, kind))
        }
        Kind::PortForward => (
            format!("/portForward/{namespace}/{name}"),
            port_query(&req)?,
        ),
    };
    let node = text(&pod, "/spec/nodeName");
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let info = ctx.client.node_connection(&ctx.nodes, node).await?;
    let location = Location {
        https: true,
        host: info.host,
        port: info.port,
        path,
        query: Some(query),
    };
    proxy::forward(&ctx.client.kubelet, &location, req.parts, req.body, true).await
}

#[cfg(test)]
mod tests {
    use apimachinery::request_info::RequestInfoResolver;

    use super::*;

    fn request(sub: &str, query: &str) -> ConnectRequest {
        let path = format!("/api/v1/namespaces/ns/pods/web/{sub}");
        let info = RequestInfoResolver::default()
            .resolve("POST", &path, query)
            .unwrap();
        let (parts, body) = http::Request::post(format!("{path}?{query}"))
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
    fn exec_options_become_the_kubelets() {
        let req = request(
            "exec",
            "command=sh&command=-c&command=echo%20hi&stdin=true&stdout=true&stderr=false&tty=1&container=app",
        );
        assert_eq!(
            stream_query(&req, Kind::Exec),
            "input=1&output=1&tty=1&command=sh&command=-c&command=echo+hi"
        );
        let req = request("attach", "stdout=true&command=ignored");
        assert_eq!(stream_query(&req, Kind::Attach), "output=1");
    }

    #[test]
    fn ports_are_joined_for_the_kubelet() {
        let req = request("portforward", "ports=8080&ports=443");
        assert_eq!(port_query(&req).unwrap(), "port=8080%2C443");
        assert_eq!(port_query(&request("portforward", "")).unwrap(), "");
        let err = port_query(&request("portforward", "ports=http")).unwrap_err();
        assert_eq!(err.code, 400);
    }
}
