//! The subresources that reach past this server (upstream's pod
//! `LogREST`, `ExecREST`, `AttachREST`, `PortForwardREST` and `ProxyREST`,
//! and the node and service `ProxyREST`s): `pods/log` streams a container's
//! log from its kubelet; `pods/exec`, `pods/attach` and `pods/portforward`
//! upgrade the connection and relay it to the kubelet; `pods/proxy`,
//! `nodes/proxy` and `services/proxy` forward any request to the pod, the
//! kubelet or a service endpoint. Each validates the request and answers
//! upstream's Status errors before connecting anywhere.

pub mod client;
mod log;
mod proxy;
mod streams;

use std::future::Future;
use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use apimachinery::status::ApiError;
use apiserver::admission::{Attributes, GroupVersionKind, Operation, RequestContext};
use apiserver::authentication::user::UserInfo;
use apiserver::endpoints::connect::{ConnectHandler, ConnectRequest, ConnectResource};
use apiserver::filters::authorization::Authorization;
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;
use axum::body::Body;
use http::{Method, Response};
use serde_json::Value;
use storage::Object;

use client::KubeletClient;

/// What the handlers share.
pub struct Context {
    pub pods: Arc<Store>,
    pub nodes: Arc<Store>,
    pub services: Option<Arc<Store>>,
    pub endpoints: Option<Arc<Store>>,
    pub client: KubeletClient,
    pub authorization: Arc<Authorization>,
    /// `AuthorizePodWebsocketUpgradeCreatePermission`: a GET to exec,
    /// attach or port-forward also needs `create`.
    pub websocket_needs_create: bool,
}

/// Methods of the upgrading subresources: websocket clients send GET,
/// SPDY clients POST.
const UPGRADE_METHODS: &[Method] = &[Method::GET, Method::POST];

/// Methods a proxy subresource forwards.
const PROXY_METHODS: &[Method] = &[
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
];

fn connecter<F, Fut>(
    ctx: &Arc<Context>,
    path: &str,
    kind: &str,
    methods: &'static [Method],
    serve: F,
) -> ConnectResource
where
    F: Fn(Arc<Context>, ConnectRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<Body>, ApiError>> + Send + 'static,
{
    let ctx = ctx.clone();
    let handler: ConnectHandler = Arc::new(move |req| Box::pin(serve(ctx.clone(), req)));
    ConnectResource {
        path: path.to_owned(),
        kind: kind.to_owned(),
        methods,
        handler,
    }
}

/// Serves the subresources when the core group serves pods and nodes.
pub fn install(server: &mut GenericApiServer, client: KubeletClient, websocket_needs_create: bool) {
    let (Some(pods), Some(nodes)) = (
        server.store("", "v1", "pods"),
        server.store("", "v1", "nodes"),
    ) else {
        return;
    };
    let ctx = Arc::new(Context {
        pods,
        nodes,
        services: server.store("", "v1", "services"),
        endpoints: server.store("", "v1", "endpoints"),
        client,
        authorization: server.config().authorization.clone(),
        websocket_needs_create,
    });
    let get_only: &'static [Method] = &[Method::GET];
    let resources = [
        connecter(&ctx, "pods/log", "Pod", get_only, log::serve),
        connecter(
            &ctx,
            "pods/exec",
            "PodExecOptions",
            UPGRADE_METHODS,
            |c, r| streams::serve(c, r, streams::Kind::Exec),
        ),
        connecter(
            &ctx,
            "pods/attach",
            "PodAttachOptions",
            UPGRADE_METHODS,
            |c, r| streams::serve(c, r, streams::Kind::Attach),
        ),
        connecter(
            &ctx,
            "pods/portforward",
            "PodPortForwardOptions",
            UPGRADE_METHODS,
            |c, r| streams::serve(c, r, streams::Kind::PortForward),
        ),
        connecter(
            &ctx,
            "pods/proxy",
            "PodProxyOptions",
            PROXY_METHODS,
            proxy::pod,
        ),
        connecter(
            &ctx,
            "nodes/proxy",
            "NodeProxyOptions",
            PROXY_METHODS,
            proxy::node,
        ),
    ];
    for resource in resources {
        server.install_subresource_connect("", "v1", resource);
    }
    if ctx.services.is_some() && ctx.endpoints.is_some() {
        let services = connecter(
            &ctx,
            "services/proxy",
            "ServiceProxyOptions",
            PROXY_METHODS,
            proxy::service,
        );
        server.install_subresource_connect("", "v1", services);
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The pod a request names (the request's info, not the request: its
/// body is not `Sync`, so the request is not held across awaits).
async fn get_pod(ctx: &Context, info: &RequestInfo) -> Result<Object, ApiError> {
    let namespace = Some(info.namespace.as_str()).filter(|ns| !ns.is_empty());
    ctx.pods
        .get(namespace, &info.name, Default::default())
        .await
}

fn container_names(pod: &Value) -> impl Iterator<Item = &str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        })
        .map(|c| text(c, "/name"))
}

/// The container a request addresses (upstream's `validateContainer`):
/// the named one, which must exist, or the pod's only container.
fn validate_container(container: &str, pod: &Value) -> Result<String, ApiError> {
    let pod_name = text(pod, "/metadata/name");
    if !container.is_empty() {
        if container_names(pod).any(|name| name == container) {
            return Ok(container.to_owned());
        }
        return Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {pod_name}"
        )));
    }
    let main = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    match main {
        [only] => Ok(text(only, "/name").to_owned()),
        [] => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod_name}"
        ))),
        _ => {
            let names: Vec<&str> = container_names(pod).collect();
            Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                names.join(" ")
            )))
        }
    }
}

/// Runs the admission chain on a CONNECT of `info`'s subresource with its
/// options object (upstream admits connect requests before connecting;
/// webhooks may match `CONNECT` on `pods/exec` and the like).
async fn admit_connect(
    store: &Store,
    info: &RequestInfo,
    user: Arc<UserInfo>,
    kind: &str,
    mut options: Value,
) -> Result<(), ApiError> {
    let Some(chain) = store.admission() else {
        return Ok(());
    };
    options["kind"] = Value::String(kind.to_owned());
    options["apiVersion"] = Value::String("v1".to_owned());
    let namespace = Some(info.namespace.as_str()).filter(|ns| !ns.is_empty());
    let mut attrs = Attributes::new(
        &store.info,
        Operation::Connect,
        Some(options),
        None,
        &info.subresource,
        namespace,
        &info.name,
        false,
        RequestContext::new(user),
    );
    attrs.kind = GroupVersionKind {
        group: String::new(),
        version: "v1".to_owned(),
        kind: kind.to_owned(),
    };
    let context = attrs.request.clone();
    context
        .scope(async {
            chain.admit(&mut attrs).await?;
            chain.validate(&attrs).await
        })
        .await
}

/// Upstream's conversion of a boolean query parameter: absent is false,
/// and any value but `false` or `0` is true.
fn query_bool(req: &ConnectRequest, key: &str) -> bool {
    req.query().bool(key)
}

/// The first value of a query parameter, "" when absent.
fn query_string(req: &ConnectRequest, key: &str) -> String {
    req.query().first(key).unwrap_or("").to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(containers: &[&str]) -> Value {
        let list: Vec<Value> = containers.iter().map(|c| json!({"name": c})).collect();
        json!({"metadata": {"name": "web"}, "spec": {
            "initContainers": [{"name": "setup"}],
            "containers": list,
            "ephemeralContainers": [{"name": "debugger"}]}})
    }

    #[test]
    fn the_only_container_is_the_default() {
        assert_eq!(validate_container("", &pod(&["app"])).unwrap(), "app");
        assert_eq!(
            validate_container("setup", &pod(&["app"])).unwrap(),
            "setup"
        );
        assert_eq!(
            validate_container("debugger", &pod(&["app"])).unwrap(),
            "debugger"
        );
    }

    #[test]
    fn several_containers_need_a_name() {
        let err = validate_container("", &pod(&["app", "sidecar"])).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "a container name must be specified for pod web, choose one of: [setup app sidecar debugger]"
        );
        let err = validate_container("", &pod(&[])).unwrap_err();
        assert_eq!(
            err.message,
            "a container name must be specified for pod web"
        );
        let err = validate_container("nope", &pod(&["app"])).unwrap_err();
        assert_eq!(err.message, "container nope is not valid for pod web");
    }
}
