//! The generic API server (upstream's `GenericAPIServer`): the API groups
//! it serves, its non-resource paths, hooks and health checks, and the
//! delegate it hands every other request to. Servers are chained by
//! delegation: each one's unprotected handler falls through to its
//! delegate's, ending in a 404.

pub mod config;
pub mod discovery;
pub mod dynamic;
pub mod handler_chain;
pub mod healthz;
pub mod hooks;
mod lifecycle_signals;
mod metrics_route;
mod mux;
pub mod options;
mod paths;
pub mod routes;
mod run;
mod storage_readiness;

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use client_go::informers::SharedInformerFactory;
use http::{Request, Response};
use tower::util::BoxCloneSyncService;

pub use config::{CompletedConfig, Config};
pub use discovery::{DiscoveryRegistry, GroupVersionDiscovery, Priority, SubresourceDiscovery};
pub use dynamic::{DynamicGroups, DynamicResource, DynamicVersion};
pub use healthz::{readyz_only, FnCheck, HealthCheck};
pub use hooks::{HookFn, PostStartHook, PostStartHookContext, PostStartHookFn, PreShutdownHook};
pub use run::PreparedServer;
pub use storage_readiness::STORAGE_READINESS_HOOK;

use crate::endpoints::computed_read::ComputedResource;
use crate::endpoints::connect::ConnectResource;
use crate::endpoints::virtual_create::VirtualResource;
use crate::registry::store::Store;
use crate::registry::ResourceInfo;

/// An HTTP handler: the unit servers are chained by.
pub type Handler = BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

/// A handler of one non-resource path.
pub type PathHandler = routes::RouteHandler;

/// What a server hands to the server built in front of it (upstream's
/// `DelegationTarget`).
pub trait DelegationTarget: Send + Sync {
    /// Serves requests without the handler chain (the front server's chain
    /// has already run).
    fn unprotected_handler(&self) -> Handler;
    fn post_start_hooks(&self) -> Vec<PostStartHook>;
    fn pre_shutdown_hooks(&self) -> Vec<PreShutdownHook>;
    fn health_checks(&self) -> Vec<Arc<dyn HealthCheck>>;
    /// The paths the `/` index lists (upstream's `ListedPaths`).
    fn listed_paths(&self) -> Vec<String>;
}

/// The end of the chain: every request is a 404 Status.
pub struct NotFoundDelegate;

impl DelegationTarget for NotFoundDelegate {
    fn unprotected_handler(&self) -> Handler {
        BoxCloneSyncService::new(tower::service_fn(|_req: Request<Body>| async {
            Ok::<_, Infallible>(mux::not_found())
        }))
    }
    fn post_start_hooks(&self) -> Vec<PostStartHook> {
        Vec::new()
    }
    fn pre_shutdown_hooks(&self) -> Vec<PreShutdownHook> {
        Vec::new()
    }
    fn health_checks(&self) -> Vec<Arc<dyn HealthCheck>> {
        Vec::new()
    }
    fn listed_paths(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Resources of one group version, by plural name.
pub type GroupVersionStores = BTreeMap<String, Arc<Store>>;

/// Computed (not stored) resources of one group version, by plural name.
pub type GroupVersionVirtuals = BTreeMap<String, Arc<VirtualResource>>;

/// Connect subresources of one group version, by `resource/subresource`.
pub type GroupVersionConnecters = BTreeMap<String, Arc<ConnectResource>>;

/// Read-only computed resources of one group version, by plural name.
pub type GroupVersionComputed = BTreeMap<String, Arc<ComputedResource>>;

pub struct GenericApiServer {
    pub name: String,
    config: CompletedConfig,
    /// (group, version) → resources; the core group is "".
    groups: HashMap<(String, String), GroupVersionStores>,
    virtuals: HashMap<(String, String), GroupVersionVirtuals>,
    /// Stores serving a resource at a second version over the storage of
    /// its preferred one (left out of [`GenericApiServer::stores`]).
    converted: Vec<Arc<Store>>,
    connecters: HashMap<(String, String), GroupVersionConnecters>,
    computed: HashMap<(String, String), GroupVersionComputed>,
    /// Group versions added and removed at run time.
    dynamic: DynamicGroups,
    paths: paths::Paths,
    delegate: Handler,
    /// What the delegate lists in the `/` index (it is complete when this
    /// server is built on it).
    delegate_paths: Vec<String>,
    post_start_hooks: Vec<PostStartHook>,
    pre_shutdown_hooks: Vec<PreShutdownHook>,
    health_checks: Vec<Arc<dyn HealthCheck>>,
}

impl CompletedConfig {
    /// Builds a server that hands what it does not serve to `delegate`.
    pub fn new_server(&self, name: &str, delegate: &dyn DelegationTarget) -> GenericApiServer {
        GenericApiServer {
            name: name.to_owned(),
            config: self.clone(),
            groups: HashMap::new(),
            virtuals: HashMap::new(),
            converted: Vec::new(),
            connecters: HashMap::new(),
            computed: HashMap::new(),
            dynamic: DynamicGroups::new(self.discovery.clone()),
            paths: paths::Paths::default(),
            delegate: delegate.unprotected_handler(),
            delegate_paths: delegate.listed_paths(),
            post_start_hooks: delegate.post_start_hooks(),
            pre_shutdown_hooks: delegate.pre_shutdown_hooks(),
            health_checks: self.health_checks_with(delegate.health_checks()),
        }
    }

    /// The configuration's checks, then those of the delegate the
    /// configuration does not have by name (each server of a chain shares
    /// the storage checks; upstream keeps one of each).
    fn health_checks_with(
        &self,
        delegated: Vec<Arc<dyn HealthCheck>>,
    ) -> Vec<Arc<dyn HealthCheck>> {
        let mut checks = self.health_checks.clone();
        for check in delegated {
            if !checks.iter().any(|c| c.name() == check.name()) {
                checks.push(check);
            }
        }
        checks
    }
}

impl GenericApiServer {
    pub fn config(&self) -> &CompletedConfig {
        &self.config
    }

    /// Serves the resources of one group version (the core group is "")
    /// and publishes them in discovery. Versions of a group installed first
    /// are preferred.
    pub fn install_group_version(
        &mut self,
        group: &str,
        version: &str,
        stores: Vec<Arc<Store>>,
        virtuals: Vec<VirtualResource>,
    ) {
        let mut resources: Vec<ResourceInfo> = stores.iter().map(|s| s.info.clone()).collect();
        resources.extend(virtuals.iter().map(|v| v.info.clone()));
        resources.sort_by(|a, b| a.resource.cmp(&b.resource));
        let subresources =
            stores
                .iter()
                .flat_map(|s| {
                    s.strategies.update.update_subresources().iter().map(|sub| {
                        SubresourceDiscovery {
                            path: format!("{}/{}", s.info.resource, sub.name),
                            group: s.info.group.clone(),
                            version: s.info.version.clone(),
                            kind: s.info.kind.clone(),
                            verbs: sub.verbs.iter().map(|v| v.to_string()).collect(),
                        }
                    })
                })
                .collect();
        self.config.discovery.add(GroupVersionDiscovery {
            group: group.to_owned(),
            version: version.to_owned(),
            resources,
            subresources,
            stale: false,
        });
        let key = (group.to_owned(), version.to_owned());
        let map = stores
            .into_iter()
            .map(|s| (s.info.resource.clone(), s))
            .collect();
        self.groups.insert(key.clone(), map);
        let virtuals = virtuals
            .into_iter()
            .map(|v| (v.info.resource.clone(), Arc::new(v)));
        self.virtuals.entry(key).or_default().extend(virtuals);
    }

    /// Serves POST on `<resource>/<name>/<subresource>` of a group version
    /// (upstream's named creater, e.g. `serviceaccounts/token`) with a
    /// computed resource, and lists it in discovery with the kind of
    /// `resource`'s info.
    pub fn install_subresource_create(
        &mut self,
        group: &str,
        version: &str,
        path: &str,
        resource: VirtualResource,
    ) {
        let info = &resource.info;
        let sub = SubresourceDiscovery {
            path: path.to_owned(),
            group: info.group.clone(),
            version: info.version.clone(),
            kind: info.kind.clone(),
            verbs: vec!["create".to_owned()],
        };
        self.config.discovery.add_subresource(group, version, sub);
        self.virtuals
            .entry((group.to_owned(), version.to_owned()))
            .or_default()
            .insert(path.to_owned(), Arc::new(resource));
    }

    /// Serves a connect subresource (`pods/log`, `pods/exec`, `nodes/proxy`,
    /// …) of a group version already installed and lists it in discovery.
    pub fn install_subresource_connect(
        &mut self,
        group: &str,
        version: &str,
        resource: ConnectResource,
    ) {
        let sub = SubresourceDiscovery {
            path: resource.path.clone(),
            group: group.to_owned(),
            version: version.to_owned(),
            kind: resource.kind.clone(),
            verbs: resource.verbs(),
        };
        self.config.discovery.add_subresource(group, version, sub);
        self.connecters
            .entry((group.to_owned(), version.to_owned()))
            .or_default()
            .insert(resource.path.clone(), Arc::new(resource));
    }

    /// Serves a computed, create-only resource in a group version already
    /// installed (e.g. the core group's `bindings`) and lists it there.
    pub fn install_virtual_resource(
        &mut self,
        group: &str,
        version: &str,
        resource: VirtualResource,
    ) {
        self.config
            .discovery
            .add_resource(group, version, resource.info.clone());
        self.virtuals
            .entry((group.to_owned(), version.to_owned()))
            .or_default()
            .insert(resource.info.resource.clone(), Arc::new(resource));
    }

    /// Serves a computed, read-only resource (get and list) in a group
    /// version already installed (e.g. the core group's
    /// `componentstatuses`) and lists it there.
    pub fn install_computed_resource(
        &mut self,
        group: &str,
        version: &str,
        resource: ComputedResource,
    ) {
        self.config
            .discovery
            .add_resource(group, version, resource.info.clone());
        self.computed
            .entry((group.to_owned(), version.to_owned()))
            .or_default()
            .insert(resource.info.resource.clone(), Arc::new(resource));
    }

    /// The group versions this server serves at run time: changes to the
    /// returned handle take effect at once, in routing and discovery.
    pub fn dynamic_groups(&self) -> DynamicGroups {
        self.dynamic.clone()
    }

    /// Serves one non-resource path (exact match).
    pub fn handle_path(&mut self, path: &str, handler: PathHandler) {
        self.paths.handle(path, handler);
    }

    /// Serves one non-resource path as upstream's go-restful web services
    /// are routed: with trailing slashes too (those forms are not listed).
    pub fn handle_restful_path(&mut self, path: &str, handler: PathHandler) {
        self.paths.handle_restful(path, handler);
    }

    /// Serves every non-resource path starting with `prefix` that no exact
    /// path claims (documents that come and go at run time).
    pub fn handle_prefix(&mut self, prefix: &str, handler: PathHandler) {
        self.paths.handle_prefix(prefix, handler);
    }

    pub fn add_post_start_hook(&mut self, name: &str, run: PostStartHookFn) {
        self.post_start_hooks.push(PostStartHook::new(name, run));
    }

    /// Runs `informers` from when the server starts until it stops: the
    /// `generic-apiserver-start-informers` hook upstream adds for a
    /// config's `SharedInformerFactory`.
    pub fn start_informers(&mut self, informers: Arc<SharedInformerFactory>) {
        self.add_post_start_hook(
            "generic-apiserver-start-informers",
            Arc::new(move |ctx| {
                informers.start(&ctx.stop);
                Box::pin(async { Ok(()) })
            }),
        );
    }

    pub fn add_pre_shutdown_hook(&mut self, name: &str, run: HookFn) {
        self.pre_shutdown_hooks.push(PreShutdownHook {
            name: name.to_owned(),
            run,
        });
    }

    pub fn add_health_check(&mut self, check: Arc<dyn HealthCheck>) {
        self.health_checks.push(check);
    }

    /// Every resource this server stores, once: a resource also served at
    /// a converted version appears with its preferred version's store, so
    /// controllers see each object once.
    pub fn stores(&self) -> Vec<Arc<Store>> {
        self.all_stores()
            .into_iter()
            .filter(|s| !self.converted.iter().any(|c| Arc::ptr_eq(c, s)))
            .collect()
    }

    /// Every store this server serves, converted versions included (each
    /// is admitted on its own).
    pub fn all_stores(&self) -> Vec<Arc<Store>> {
        self.groups
            .values()
            .flat_map(|g| g.values().cloned())
            .collect()
    }

    /// Serves resources at another version over the storage of their
    /// preferred version (`autoscaling/v1` HorizontalPodAutoscalers over
    /// v2's), as [`Self::install_group_version`] does.
    pub fn install_converted_version(
        &mut self,
        group: &str,
        version: &str,
        stores: Vec<Arc<Store>>,
    ) {
        self.converted.extend(stores.iter().cloned());
        self.install_group_version(group, version, stores, Vec::new());
    }

    /// The store serving a resource, for hooks and controllers.
    pub fn store(&self, group: &str, version: &str, resource: &str) -> Option<Arc<Store>> {
        self.groups
            .get(&(group.to_owned(), version.to_owned()))?
            .get(resource)
            .cloned()
    }
}

impl routes::PathRecorder for GenericApiServer {
    fn unlisted_handle(&mut self, path: &str, handler: PathHandler) {
        self.paths.handle_unlisted(path, handler);
    }

    fn unlisted_handle_prefix(&mut self, prefix: &str, handler: PathHandler) {
        self.paths.handle_prefix(prefix, handler);
    }
}

impl DelegationTarget for GenericApiServer {
    fn unprotected_handler(&self) -> Handler {
        let mux = mux::Mux::new(
            self.groups.clone(),
            self.virtuals.clone(),
            self.dynamic.clone(),
            self.paths.clone(),
            self.delegate.clone(),
            self.config.clone(),
        )
        .with_connecters(self.connecters.clone())
        .with_computed(self.computed.clone());
        mux.into_handler()
    }

    fn post_start_hooks(&self) -> Vec<PostStartHook> {
        self.post_start_hooks.clone()
    }

    fn pre_shutdown_hooks(&self) -> Vec<PreShutdownHook> {
        self.pre_shutdown_hooks.clone()
    }

    fn health_checks(&self) -> Vec<Arc<dyn HealthCheck>> {
        self.health_checks.clone()
    }

    /// This server's paths and group versions, and those of its delegates.
    fn listed_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.paths.listed().cloned().collect();
        paths.extend(["/api".to_owned(), "/apis".to_owned()]);
        for (group, version) in self.groups.keys() {
            if group.is_empty() {
                paths.push(format!("/api/{version}"));
            } else {
                paths.push(format!("/apis/{group}"));
                paths.push(format!("/apis/{group}/{version}"));
            }
        }
        paths.extend(self.delegate_paths.iter().cloned());
        paths.sort();
        paths.dedup();
        paths
    }
}
