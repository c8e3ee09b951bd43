//! The aggregator server (upstream's `pkg/apiserver`, the `APIAggregator`):
//! built on the server it delegates to, it sends the requests of remote
//! APIServices to their Services ([`handler_proxy`]), answers the
//! discovery of remote groups ([`handler_discovery`]), keeps its routes in
//! step with the APIServices ([`apiservice_controller`]) and runs the
//! availability controllers.

pub mod apiservice_controller;
pub mod handler_discovery;
pub mod handler_proxy;

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use apiserver::server::{
    DelegationTarget, DiscoveryRegistry, GenericApiServer, Handler, HealthCheck, PostStartHook,
    PostStartHookContext, PostStartHookFn, PreShutdownHook,
};
use axum::body::Body;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::SharedInformer;
use client_go::transport::ClientAuth;
use client_go::CancellationToken;
use http::Request;
use tower::util::BoxCloneSyncService;
use tower::ServiceExt;

use crate::controllers::openapi::{self, aggregator::Specs};
use crate::controllers::status::{local, remote};
use crate::resolvers::{self, ServiceResolver};
use handler_proxy::{ProxyHandler, ProxyTable};

/// What the aggregator is configured with besides the generic server.
pub struct AggregatorConfig {
    /// The proxy client certificate (`--proxy-client-cert-file`,
    /// `--proxy-client-key-file`), presented to aggregated API servers.
    pub proxy_client: Option<ClientAuth>,
    /// `--enable-aggregator-routing`: endpoints rather than cluster IPs.
    pub enable_aggregator_routing: bool,
    /// `--aggregator-reject-forwarding-redirect`: backends' redirects are
    /// answered 502 rather than passed to clients.
    pub reject_forwarding_redirects: bool,
    /// The `RemoteRequestHeaderUID` feature (beta, on by default since
    /// 1.33): the user's UID is sent in `X-Remote-Uid`.
    pub remote_request_header_uid: bool,
}

/// The proxy client certificate (`cert`, PEM) and its key (`key`), read
/// as upstream's aggregator reads `--proxy-client-cert-file` and
/// `--proxy-client-key-file`.
pub fn proxy_client_auth(cert: &Path, key: &Path) -> Result<ClientAuth, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|x| format!("{}: {x}", p.display()));
    let certs: Vec<_> = rustls_pemfile::certs(&mut read(cert)?.as_slice())
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate", cert.display()));
    }
    let private = rustls_pemfile::private_key(&mut read(key)?.as_slice())
        .ok()
        .flatten()
        .ok_or_else(|| format!("{}: no PEM private key", key.display()))?;
    Ok((certs, private))
}

/// The aggregation state shared by the proxy and the controllers.
pub struct Aggregation {
    proxy: ProxyHandler,
    discovery: DiscoveryRegistry,
    client: Option<Arc<ClientAuth>>,
    services: Arc<SharedInformer>,
    endpoint_slices: Arc<SharedInformer>,
    openapi: Specs,
}

impl Aggregation {
    /// Reads Services and EndpointSlices through the shared `informers`;
    /// None when the delegate serves neither.
    pub fn new(
        config: AggregatorConfig,
        discovery: DiscoveryRegistry,
        informers: &SharedInformerFactory,
    ) -> Option<Self> {
        let services = informers.informer_for("", "services")?;
        let endpoint_slices = informers.informer_for("discovery.k8s.io", "endpointslices")?;
        endpoint_slices.add_index(resolvers::BY_SERVICE, resolvers::by_service());
        let resolver = ServiceResolver {
            services: services.lister(),
            endpoint_slices: endpoint_slices.lister(),
            endpoint_routing: config.enable_aggregator_routing,
        };
        Some(Aggregation {
            proxy: ProxyHandler {
                table: ProxyTable::default(),
                resolver,
                reject_forwarding_redirects: config.reject_forwarding_redirects,
                remote_uid: config.remote_request_header_uid,
            },
            discovery,
            client: config.proxy_client.map(Arc::new),
            services,
            endpoint_slices,
            openapi: Specs::default(),
        })
    }

    /// The remote APIServices' OpenAPI documents, to join the chain's
    /// (`SpecSource`).
    pub fn openapi_specs(&self) -> Specs {
        self.openapi.clone()
    }

    /// `inner` with the remote APIServices' requests taken out: what the
    /// aggregator server is built on.
    pub fn delegate<'a>(&self, inner: &'a dyn DelegationTarget) -> ProxyingDelegate<'a> {
        ProxyingDelegate {
            inner,
            proxy: self.proxy.clone(),
            discovery: self.discovery.clone(),
        }
    }

    /// Starts, once the server runs, the routes' controller and the
    /// availability controllers of `aggregator`'s APIServices. The remote
    /// controller's APIService informer is its own: it resyncs every
    /// [`remote::RESYNC`], as the handler upstream adds with that period.
    fn install(self, aggregator: &mut GenericApiServer, informers: &SharedInformerFactory) {
        let Some(api_services) = aggregator.store("apiregistration.k8s.io", "v1", "apiservices")
        else {
            return;
        };
        let metrics = local::install(aggregator, informers);
        if let Some(shared) = informers.informer_for("apiregistration.k8s.io", "apiservices") {
            let specs = openapi::Controller {
                handlers: self.proxy.handlers(),
                specs: self.openapi.clone(),
            };
            aggregator.add_post_start_hook(
                "apiservice-openapi-controller",
                hook(move |stop| {
                    tokio::spawn(specs.clone().run(shared.clone(), stop));
                }),
            );
        }
        let informer = SharedInformer::new(api_services.clone(), Some(remote::RESYNC));
        let started = informer.clone();
        aggregator.add_post_start_hook(
            "start-kube-aggregator-informers",
            hook(move |stop| started.start(&stop)),
        );
        let routes = apiservice_controller::Controller {
            table: self.proxy.table.clone(),
            discovery: self.discovery.clone(),
            client: self.client.clone(),
        };
        let routes_informer = informer.clone();
        let routes = std::sync::Mutex::new(Some(routes));
        aggregator.add_post_start_hook(
            "apiservice-registration-controller",
            hook(move |stop| {
                if let Some(c) = routes.lock().ok().and_then(|mut r| r.take()) {
                    tokio::spawn(c.run(routes_informer.clone(), stop));
                }
            }),
        );
        let manager = handler_discovery::Manager {
            handlers: self.proxy.handlers(),
            registry: self.discovery.clone(),
        };
        let followed = informers.informer_for("apiregistration.k8s.io", "apiservices");
        if let Some(followed) = followed {
            aggregator.add_post_start_hook(
                "apiservice-discovery-controller",
                hook(move |stop| {
                    tokio::spawn(manager.clone().run(followed.clone(), stop));
                }),
            );
        }
        let available = remote::Controller {
            api_services,
            resolver: self.proxy.resolver.clone(),
            client: self.client.clone(),
            metrics,
        };
        let (services, slices) = (self.services.clone(), self.endpoint_slices.clone());
        aggregator.add_post_start_hook(
            "apiservice-status-remote-available-controller",
            hook(move |stop| {
                let run =
                    available
                        .clone()
                        .run(informer.clone(), services.clone(), slices.clone(), stop);
                tokio::spawn(run);
            }),
        );
    }
}

/// Starts the aggregator's controllers on `aggregator` once it runs: the
/// discovery order follows the APIServices' priorities; with `aggregation`
/// the proxy's routes and the remote APIServices' discovery, OpenAPI and
/// availability, without it the local APIServices' availability alone.
pub fn install_controllers(
    aggregation: Option<Aggregation>,
    aggregator: &mut GenericApiServer,
    informers: &SharedInformerFactory,
) {
    if let Some(api_services) = informers.informer_for("apiregistration.k8s.io", "apiservices") {
        let discovery = aggregator.config().discovery.clone();
        handler_discovery::follow_priorities(&api_services, &discovery);
    }
    match aggregation {
        Some(a) => a.install(aggregator, informers),
        None => {
            local::install(aggregator, informers);
        }
    }
}

/// A post-start hook that starts something, to run until the server
/// stops, and succeeds.
fn hook(start: impl Fn(CancellationToken) + Send + Sync + 'static) -> PostStartHookFn {
    Arc::new(move |ctx: PostStartHookContext| {
        start(ctx.stop);
        Box::pin(async { Ok(()) })
    })
}

/// The server behind the aggregator, with the remote APIServices' requests
/// and groups answered first.
pub struct ProxyingDelegate<'a> {
    inner: &'a dyn DelegationTarget,
    proxy: ProxyHandler,
    discovery: DiscoveryRegistry,
}

impl DelegationTarget for ProxyingDelegate<'_> {
    fn unprotected_handler(&self) -> Handler {
        let inner = self.inner.unprotected_handler();
        let (proxy, discovery) = (self.proxy.clone(), self.discovery.clone());
        BoxCloneSyncService::new(tower::service_fn(move |req: Request<Body>| {
            let (inner, proxy, discovery) = (inner.clone(), proxy.clone(), discovery.clone());
            async move {
                let group = req
                    .uri()
                    .path()
                    .trim_end_matches('/')
                    .strip_prefix("/apis/");
                if group.is_some_and(|g| proxy.table.serves_group(g)) {
                    if let Some(resp) = handler_discovery::serve_group(&discovery, &req) {
                        return Ok::<_, Infallible>(resp);
                    }
                }
                match proxy.serve(req).await {
                    Ok(resp) => Ok(resp),
                    Err(req) => inner.oneshot(req).await,
                }
            }
        }))
    }

    fn post_start_hooks(&self) -> Vec<PostStartHook> {
        self.inner.post_start_hooks()
    }

    fn pre_shutdown_hooks(&self) -> Vec<PreShutdownHook> {
        self.inner.pre_shutdown_hooks()
    }

    fn health_checks(&self) -> Vec<Arc<dyn HealthCheck>> {
        self.inner.health_checks()
    }

    fn listed_paths(&self) -> Vec<String> {
        self.inner.listed_paths()
    }
}
