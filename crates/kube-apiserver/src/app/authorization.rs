//! The authorizer chain of kube-apiserver (upstream's
//! `BuiltInAuthorizationOptions.ToAuthorizationConfig` and the authorizer
//! factory): from `--authorization-mode` with the `--authorization-webhook-*`
//! flags, or from the `--authorization-config` file (reloaded when it
//! changes, see [`reload`]); and, once the stores exist, binding the Node
//! authorizer to their shared informers.

mod reload;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::admission::initializer::Stores;
use apiserver::apis::apiserver::authorization::{AuthorizerEntry, ConfigFileError, Connection};
use apiserver::filters::authorization::{Authorization, AuthorizationMode, NamedAuthorizer};
use apiserver::metrics::Metrics;
use apiserver::plugin::pkg::authorizer::webhook::{
    FailurePolicy, WebhookAuthorizer, WebhookSettings,
};
use apiserver::server::GenericApiServer;
use apiserver::util::webhook::Endpoint;
use async_trait::async_trait;
use client_go::informers::SharedInformerFactory;

use crate::authorization::node::{self, NodeAuthorizer};
use crate::authorization::node_graph::{Graph, Kind, Objects};
use crate::authorization::rbac::RbacAuthorizer;
use crate::options::CompletedOptions;
use storage::Object;

/// The call timeout of the `--authorization-webhook-*` webhook.
const LEGACY_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[derive(Debug, thiserror::Error)]
pub enum AuthorizationError {
    #[error("authorization mode {0:?} is not supported yet by this server (built: AlwaysAllow, AlwaysDeny, RBAC, Node, Webhook)")]
    UnsupportedMode(String),
    #[error("--authorization-config: {0}")]
    Config(#[from] ConfigFileError),
    #[error("authorization webhook {name}: {problem}")]
    Webhook { name: String, problem: String },
    #[error("authorizer type {0} is not allowed if it was not enabled at initial server startup")]
    NotAtStartup(String),
}

/// The configured modes, in order.
pub fn modes(opts: &CompletedOptions) -> Result<Vec<AuthorizationMode>, AuthorizationError> {
    let flags = &opts.options.flags;
    let config_file = flags.string("authorization-config").unwrap_or_default();
    let service_account_reads = node::service_account_reads(&opts.feature_gates);
    if !config_file.is_empty() {
        let path = PathBuf::from(config_file);
        let reloadable = reload::ReloadableAuthorizer::load(path, service_account_reads)?;
        return Ok(vec![AuthorizationMode::Named(NamedAuthorizer::new(
            reload::NAME,
            Arc::new(reloadable),
        ))]);
    }
    opts.authorization_modes
        .iter()
        .map(|mode| match mode.as_str() {
            "Webhook" => legacy_webhook(opts),
            "Node" => Ok(node_mode(Arc::new(NodeAuthorizer::new(
                service_account_reads,
            )))),
            other => simple_mode(other),
        })
        .collect()
}

/// A mode that needs no settings.
fn simple_mode(mode: &str) -> Result<AuthorizationMode, AuthorizationError> {
    Ok(match mode {
        "AlwaysAllow" => AuthorizationMode::AlwaysAllow,
        "AlwaysDeny" => AuthorizationMode::AlwaysDeny,
        "RBAC" => rbac_mode(Arc::new(RbacAuthorizer::new())),
        other => return Err(AuthorizationError::UnsupportedMode(other.to_owned())),
    })
}

fn rbac_mode(authorizer: Arc<RbacAuthorizer>) -> AuthorizationMode {
    AuthorizationMode::Named(NamedAuthorizer::new("RBAC", authorizer))
}

fn node_mode(authorizer: Arc<NodeAuthorizer>) -> AuthorizationMode {
    AuthorizationMode::Named(NamedAuthorizer::new("node", authorizer))
}

/// `--authorization-mode=Webhook` with the `--authorization-webhook-*` flags.
fn legacy_webhook(opts: &CompletedOptions) -> Result<AuthorizationMode, AuthorizationError> {
    let flags = &opts.options.flags;
    let problem = |problem: String| AuthorizationError::Webhook {
        name: "webhook".into(),
        problem,
    };
    let file = flags
        .string("authorization-webhook-config-file")
        .map_err(|e| problem(e.to_string()))?;
    let endpoint = Endpoint::load(Path::new(&file)).map_err(|e| problem(e.to_string()))?;
    let version = flags
        .string("authorization-webhook-version")
        .map_err(|e| problem(e.to_string()))?;
    if version != "v1" && version != "v1beta1" {
        return Err(problem(format!(
            "unsupported webhook authorizer version {version:?}, supported versions are \"v1\", \"v1beta1\""
        )));
    }
    let ttl = |flag: &str| {
        flags
            .duration(flag)
            .map(|d| d.to_std())
            .map(|d| (!d.is_zero()).then_some(d))
            .map_err(|e| problem(e.to_string()))
    };
    let settings = WebhookSettings {
        name: "webhook".into(),
        version,
        timeout: LEGACY_WEBHOOK_TIMEOUT,
        authorized_ttl: ttl("authorization-webhook-cache-authorized-ttl")?,
        unauthorized_ttl: ttl("authorization-webhook-cache-unauthorized-ttl")?,
        failure_policy: FailurePolicy::NoOpinion,
        match_conditions: Vec::new(),
    };
    let webhook = WebhookAuthorizer::new(endpoint, settings);
    Ok(AuthorizationMode::Named(NamedAuthorizer::new(
        "webhook",
        Arc::new(webhook),
    )))
}

/// The authorizers of `--authorization-config` that outlive reloads: RBAC
/// and Node, when the file the server started with has them.
#[derive(Default)]
struct Shared {
    rbac: Option<Arc<RbacAuthorizer>>,
    node: Option<Arc<NodeAuthorizer>>,
}

impl Shared {
    fn for_entries(entries: &[AuthorizerEntry], service_account_reads: bool) -> Self {
        let has = |kind: &str| entries.iter().any(|e| e.kind == kind);
        Shared {
            rbac: has("RBAC").then(|| Arc::new(RbacAuthorizer::new())),
            node: has("Node").then(|| Arc::new(NodeAuthorizer::new(service_account_reads))),
        }
    }
}

/// One authorizer of the `--authorization-config` file.
fn entry_mode(
    entry: AuthorizerEntry,
    shared: &Shared,
) -> Result<AuthorizationMode, AuthorizationError> {
    let not_at_startup = || AuthorizationError::NotAtStartup(entry.kind.clone());
    let Some(webhook) = entry.webhook else {
        return match entry.kind.as_str() {
            "RBAC" => Ok(rbac_mode(shared.rbac.clone().ok_or_else(not_at_startup)?)),
            "Node" => Ok(node_mode(shared.node.clone().ok_or_else(not_at_startup)?)),
            other => simple_mode(other),
        };
    };
    let problem = |problem: String| AuthorizationError::Webhook {
        name: entry.name.clone(),
        problem,
    };
    let endpoint = match &webhook.connection {
        Connection::KubeConfigFile(path) => {
            Endpoint::load(path).map_err(|e| problem(e.to_string()))?
        }
        Connection::InClusterConfig => in_cluster(&webhook.version).map_err(problem)?,
    };
    let settings = WebhookSettings {
        name: entry.name.clone(),
        version: webhook.version,
        timeout: webhook.timeout,
        authorized_ttl: webhook.authorized_ttl,
        unauthorized_ttl: webhook.unauthorized_ttl,
        failure_policy: webhook.failure_policy,
        match_conditions: webhook.match_conditions,
    };
    let authorizer = Arc::new(WebhookAuthorizer::new(endpoint, settings));
    Ok(AuthorizationMode::Named(NamedAuthorizer::new(
        entry.name, authorizer,
    )))
}

/// The cluster this server runs in, reached with its pod's service account
/// (client-go's `InClusterConfig`).
fn in_cluster(version: &str) -> Result<Endpoint, String> {
    let (Ok(host), Ok(port)) = (
        std::env::var("KUBERNETES_SERVICE_HOST"),
        std::env::var("KUBERNETES_SERVICE_PORT"),
    ) else {
        return Err("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined".into());
    };
    let token = std::fs::read_to_string(Path::new(SERVICE_ACCOUNT_DIR).join("token"))
        .map_err(|e| e.to_string())?;
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let kubeconfig = serde_yaml::to_value(serde_json::json!({
        "clusters": [{"name": "in-cluster", "cluster": {
            "server": format!("https://{host}:{port}/apis/authorization.k8s.io/{version}/subjectaccessreviews"),
            "certificate-authority": format!("{SERVICE_ACCOUNT_DIR}/ca.crt"),
        }}],
        "users": [{"name": "in-cluster", "user": {"token": token.trim()}}],
    }))
    .map_err(|e| e.to_string())?;
    Endpoint::from_config(&kubeconfig, Path::new("/"))
}

/// The resources the Node authorizer reads: from the shared informers'
/// listers (upstream's graph populator follows the same informers), from
/// the watch caches until they sync.
struct NodeObjects(Stores);

#[async_trait]
impl Objects for NodeObjects {
    async fn pods(&self, namespace: &str) -> Result<Vec<Object>, ApiError> {
        self.0.list("", "pods", Some(namespace)).await
    }

    async fn persistent_volumes(&self) -> Result<Vec<Object>, ApiError> {
        self.0.list("", "persistentvolumes", None).await
    }

    async fn get(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Object>, ApiError> {
        let (group, resource, namespace) = match kind {
            Kind::Pod => ("", "pods", Some(namespace)),
            Kind::PersistentVolume => ("", "persistentvolumes", None),
            Kind::VolumeAttachment => ("storage.k8s.io", "volumeattachments", None),
            Kind::ResourceSlice => ("resource.k8s.io", "resourceslices", None),
            _ => return Ok(None),
        };
        self.0.get(group, resource, namespace, name).await
    }
}

/// The RBAC authorizer, when configured by flags or in the
/// `--authorization-config` file the server started with.
pub fn rbac(authorization: &Authorization) -> Option<Arc<RbacAuthorizer>> {
    authorization.named::<RbacAuthorizer>().or_else(|| {
        authorization
            .named::<reload::ReloadableAuthorizer>()?
            .rbac()
    })
}

/// Binds the Node authorizer, when configured, to the server's shared
/// `informers`, and starts reloading `--authorization-config` once the
/// server runs.
pub fn install(
    kube: &mut GenericApiServer,
    authorization: &Authorization,
    metrics: &Arc<Metrics>,
    informers: &Arc<SharedInformerFactory>,
) {
    let reloadable = authorization.named::<reload::ReloadableAuthorizer>();
    if let Some(reloadable) = reloadable.clone() {
        let metrics = metrics.clone();
        kube.add_post_start_hook(
            "start-authorization-config-reloader",
            Arc::new(move |_ctx| {
                let (reloadable, metrics) = (reloadable.clone(), metrics.clone());
                Box::pin(async move {
                    tokio::spawn(reloadable.run(metrics));
                    Ok(())
                })
            }),
        );
    }
    let node = authorization
        .named::<NodeAuthorizer>()
        .or_else(|| reloadable?.node());
    let Some(node) = node else {
        return;
    };
    let (Some(pods), Some(persistent_volumes)) = (
        kube.store("", "v1", "pods"),
        kube.store("", "v1", "persistentvolumes"),
    ) else {
        return;
    };
    let optional = [
        kube.store("storage.k8s.io", "v1", "volumeattachments"),
        kube.store("resource.k8s.io", "v1", "resourceslices"),
    ];
    let stores = [pods, persistent_volumes]
        .into_iter()
        .chain(optional.into_iter().flatten());
    let objects = NodeObjects(Stores::new(stores).with_informers(informers.clone()));
    node.bind(Graph::new(Arc::new(objects)));
}
