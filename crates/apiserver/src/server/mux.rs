//! One server's request dispatch (upstream's director + go-restful
//! container + NonGoRestfulMux): resource requests for the group versions
//! this server serves go to the REST handler, discovery and registered paths
//! are answered here, and everything else goes to the delegate.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::request_info::{RequestInfo, RequestInfoResolver};
use axum::body::Body;
use http::{Request, Response};
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

use super::discovery;
use super::dynamic::DynamicGroups;
use super::paths::Paths;
use super::{
    CompletedConfig, GroupVersionComputed, GroupVersionConnecters, GroupVersionStores,
    GroupVersionVirtuals, Handler,
};
use crate::endpoints::computed_read;
use crate::endpoints::connect::{self, ConnectResource};
use crate::endpoints::handlers::{self, HandlerConfig, ResourceRequest};
use crate::endpoints::virtual_create::{self, VirtualResource};
use crate::endpoints::warning::Warnings;
use crate::registry::store::Store;

pub use crate::endpoints::response::not_found;

pub struct Mux {
    groups: HashMap<(String, String), GroupVersionStores>,
    virtuals: HashMap<(String, String), GroupVersionVirtuals>,
    connecters: HashMap<(String, String), GroupVersionConnecters>,
    computed: HashMap<(String, String), GroupVersionComputed>,
    dynamic: DynamicGroups,
    paths: Paths,
    delegate: Handler,
    config: CompletedConfig,
    handler_config: HandlerConfig,
}

impl Mux {
    pub fn new(
        groups: HashMap<(String, String), GroupVersionStores>,
        virtuals: HashMap<(String, String), GroupVersionVirtuals>,
        dynamic: DynamicGroups,
        paths: Paths,
        delegate: Handler,
        config: CompletedConfig,
    ) -> Self {
        let handler_config = HandlerConfig {
            min_request_timeout: config.min_request_timeout.max(Duration::from_secs(1)),
            metrics: config.metrics.clone(),
            watch_list: config.watch_list,
            response_compression: config.response_compression,
        };
        Mux {
            groups,
            virtuals,
            connecters: HashMap::new(),
            computed: HashMap::new(),
            dynamic,
            paths,
            delegate,
            config,
            handler_config,
        }
    }

    /// Serves these connect subresources (`pods/log`, `nodes/proxy`, …).
    pub fn with_connecters(
        mut self,
        connecters: HashMap<(String, String), GroupVersionConnecters>,
    ) -> Self {
        self.connecters = connecters;
        self
    }

    /// Serves these computed read-only resources (`componentstatuses`).
    pub fn with_computed(
        mut self,
        computed: HashMap<(String, String), GroupVersionComputed>,
    ) -> Self {
        self.computed = computed;
        self
    }

    pub fn into_handler(self) -> Handler {
        let mux = Arc::new(self);
        BoxCloneSyncService::new(tower::service_fn(move |req: Request<Body>| {
            let mux = mux.clone();
            async move { Ok::<_, Infallible>(mux.serve(req).await) }
        }))
    }

    fn serves_group(&self, group: &str) -> bool {
        self.groups.keys().any(|(g, _)| g == group) || self.dynamic.serves_group(group)
    }

    fn serves(&self, group: &str, version: &str) -> bool {
        self.groups
            .contains_key(&(group.to_owned(), version.to_owned()))
            || self.dynamic.serves(group, version)
    }

    async fn serve(&self, req: Request<Body>) -> Response<Body> {
        let info = match req.extensions().get::<Arc<RequestInfo>>() {
            Some(info) => info.clone(),
            None => match RequestInfoResolver::default().resolve(
                req.method().as_str(),
                req.uri().path(),
                req.uri().query().unwrap_or(""),
            ) {
                Ok(info) => Arc::new(info),
                Err(_) => return not_found(),
            },
        };
        if info.is_resource_request {
            let key = (info.api_group.clone(), info.api_version.clone());
            if let Some(c) = self.connecter(&key, &info) {
                let (parts, body) = req.into_parts();
                return connect::serve(c, info.clone(), parts, body).await;
            }
            let computed = self.computed.get(&key).and_then(|c| c.get(&info.resource));
            if let Some(c) = computed.filter(|_| info.subresource.is_empty()) {
                if c.warning.is_some() {
                    self.note_deprecated(&info);
                }
                let (parts, _) = req.into_parts();
                return computed_read::serve(c, &info, parts).await;
            }
            if let Some(v) = self.virtual_resource(&key, &info) {
                let (parts, body) = req.into_parts();
                return virtual_create::serve(v, &info, parts, body).await;
            }
            if let Some(stores) = self.groups.get(&key) {
                return self
                    .serve_resource(stores.get(&info.resource), &info, req)
                    .await;
            }
            if self.dynamic.serves(&key.0, &key.1) {
                let found = self.dynamic.resource(&key.0, &key.1, &info.resource);
                let warning = found.as_ref().and_then(|r| r.warning.clone());
                let mut resp = self
                    .serve_resource(found.as_ref().map(|r| &r.store), &info, req)
                    .await;
                if let Some(message) = warning {
                    let mut warnings = Warnings::default();
                    warnings.add(message);
                    warnings.apply(resp.headers_mut());
                }
                return resp;
            }
        } else if let Some(resp) = self.serve_path(&req) {
            return resp;
        } else if let Some(handler) = self.paths.find(req.uri().path()) {
            return handler(req).await;
        }
        match self.delegate.clone().oneshot(req).await {
            Ok(resp) => resp,
            Err(never) => match never {},
        }
    }

    /// The connect subresource a request addresses, if any.
    fn connecter(&self, key: &(String, String), info: &RequestInfo) -> Option<&ConnectResource> {
        if info.subresource.is_empty() {
            return None;
        }
        let connecters = self.connecters.get(key)?;
        connecters
            .get(&format!("{}/{}", info.resource, info.subresource))
            .map(AsRef::as_ref)
    }

    /// The computed resource a request addresses: `resource`, or
    /// `resource/subresource` for a subresource served that way.
    fn virtual_resource(
        &self,
        key: &(String, String),
        info: &RequestInfo,
    ) -> Option<&Arc<VirtualResource>> {
        let virtuals = self.virtuals.get(key)?;
        if info.subresource.is_empty() {
            virtuals.get(&info.resource)
        } else {
            virtuals.get(&format!("{}/{}", info.resource, info.subresource))
        }
    }

    async fn serve_resource(
        &self,
        store: Option<&Arc<Store>>,
        info: &RequestInfo,
        req: Request<Body>,
    ) -> Response<Body> {
        let Some(store) = store else {
            return not_found();
        };
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        let request = ResourceRequest {
            verb: info.verb.clone(),
            namespace: non_empty(&info.namespace),
            name: non_empty(&info.name),
            subresource: non_empty(&info.subresource),
        };
        let (parts, body) = req.into_parts();
        let mut resp =
            handlers::serve(store.clone(), request, parts, body, &self.handler_config).await;
        if let Some(message) = store.strategies.deprecation {
            self.note_deprecated(info);
            let mut warnings = Warnings::default();
            warnings.add(message);
            warnings.apply(resp.headers_mut());
        }
        resp
    }

    fn note_deprecated(&self, info: &RequestInfo) {
        self.config.metrics.requested_deprecated_api(
            &info.api_group,
            &info.api_version,
            &info.resource,
            &info.subresource,
        );
    }

    /// Discovery documents for the groups this server serves.
    fn serve_path(&self, req: &Request<Body>) -> Option<Response<Body>> {
        let path = req.uri().path().trim_end_matches('/');
        let registry = &self.config.discovery;
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        let aggregated = discovery::aggregated_encoding(req.headers());
        let doc = match segments.as_slice() {
            ["api"] if self.serves_group("") => match aggregated {
                Some(encoding) => {
                    let doc = registry.aggregated(true);
                    return Some(discovery::aggregated_response(
                        req.headers(),
                        &doc,
                        encoding,
                    ));
                }
                None => registry.api_versions(&self.config.external_address),
            },
            ["apis"] => match aggregated {
                Some(encoding) => {
                    let doc = registry.aggregated(false);
                    return Some(discovery::aggregated_response(
                        req.headers(),
                        &doc,
                        encoding,
                    ));
                }
                None => registry.api_group_list(),
            },
            ["api", version] if self.serves("", version) => {
                discovery::resource_list(&registry.group_version("", version)?)
            }
            ["apis", group] if self.serves_group(group) => registry.api_group(group)?,
            ["apis", group, version] if self.serves(group, version) => {
                discovery::resource_list(&registry.group_version(group, version)?)
            }
            _ => return None,
        };
        Some(discovery::document_response(req.headers(), &doc))
    }
}
