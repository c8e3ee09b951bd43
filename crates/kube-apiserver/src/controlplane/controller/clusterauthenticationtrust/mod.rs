//! The cluster authentication trust controller (upstream's
//! `pkg/controlplane/controller/clusterauthenticationtrust`): keeps
//! `kube-system/extension-apiserver-authentication` holding this server's
//! client CA and front-proxy settings, combined with what other servers
//! published there (`info`). It reads the configmap from its own informer
//! of `kube-system`'s configmaps (as upstream's: one namespace, so the
//! server's start never waits on a list of every configmap) and has one
//! key on a rate-limited work queue, added when the configmap is added or
//! deleted, when a CA bundle is reloaded, and every minute.

mod info;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::authentication::x509::{any_reloaded, ClientCa};
use apiserver::registry::store::{InNamespace, Store, Target, WriteOptions};
use apiserver::registry::DeleteOptions;
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};

pub use info::ClusterAuthenticationInfo;

const NAMESPACE: &str = "kube-system";
const NAME: &str = "extension-apiserver-authentication";
/// Upstream's recheck period, in case a change notification is missed.
const RESYNC: Duration = Duration::from_secs(60);
/// The resync period of upstream's informer of `kube-system`'s configmaps.
const INFORMER_RESYNC: Duration = Duration::from_secs(12 * 3600);

/// The front proxy's settings from the `--requestheader-*` flags.
#[derive(Debug, Clone, Default)]
pub struct RequestHeaderLists {
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_header_prefixes: Vec<String>,
    pub allowed_names: Vec<String>,
}

/// What this server requires to be published: its CA bundles, kept
/// current from their files, and the front proxy's header lists.
#[derive(Clone)]
pub struct RequiredInfo {
    pub client_ca: Option<ClientCa>,
    pub request_header_ca: Option<ClientCa>,
    pub lists: RequestHeaderLists,
    /// The RemoteRequestHeaderUID feature.
    pub uid_headers: bool,
}

impl RequiredInfo {
    fn bundles(&self) -> impl Iterator<Item = &ClientCa> {
        self.client_ca.iter().chain(&self.request_header_ca)
    }

    /// The current content of the bundles.
    fn now(&self) -> Result<ClusterAuthenticationInfo, String> {
        let certs = |ca: &Option<ClientCa>| match ca {
            Some(ca) => info::parse_certs(&ca.pem()),
            None => Ok(Vec::new()),
        };
        let lists = self.lists.clone();
        Ok(ClusterAuthenticationInfo {
            client_ca: certs(&self.client_ca)?,
            request_header_ca: certs(&self.request_header_ca)?,
            username_headers: lists.username_headers,
            uid_headers: lists.uid_headers,
            group_headers: lists.group_headers,
            extra_header_prefixes: lists.extra_header_prefixes,
            allowed_names: lists.allowed_names,
        })
    }
}

/// The controller's state: what to publish, where, and the cache to
/// compare with.
pub struct Controller {
    required: RequiredInfo,
    configmaps: Arc<Store>,
    namespaces: Arc<Store>,
    lister: Lister,
}

fn data_of(cm: &Value) -> BTreeMap<String, String> {
    cm.get("data")
        .and_then(Value::as_object)
        .map(|data| {
            data.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

impl Controller {
    pub fn new(
        required: RequiredInfo,
        configmaps: Arc<Store>,
        namespaces: Arc<Store>,
        informer: &SharedInformer,
    ) -> Self {
        Controller {
            required,
            configmaps,
            namespaces,
            lister: informer.lister(),
        }
    }

    /// Upstream's `syncConfigMap`: writes the combined information unless
    /// the configmap holds it already.
    pub async fn sync(&self) -> Result<(), String> {
        let original = self.lister.get(Some(NAMESPACE), NAME);
        let original_data = original.as_deref().map(|o| data_of(o)).unwrap_or_default();
        let uid = self.required.uid_headers;
        let existing = ClusterAuthenticationInfo::from_data(&original_data, uid)?;
        let now = chrono::Utc::now().timestamp();
        let data = existing.combined(&self.required.now()?, now).data(uid);
        if data == original_data {
            return Ok(());
        }
        tracing::info!("writing updated authentication info to {NAMESPACE} configmaps/{NAME}");
        self.create_namespace_if_needed()
            .await
            .map_err(|e| e.message)?;
        let mut cm = match original {
            Some(cm) => cm.to_value(),
            None => json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE}}),
        };
        cm["data"] = json!(data);
        self.write(cm).await.map_err(|e| e.message)
    }

    async fn create_namespace_if_needed(&self) -> Result<(), ApiError> {
        if self
            .namespaces
            .get(None, NAMESPACE, Default::default())
            .await
            .is_ok()
        {
            return Ok(());
        }
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
        match self.namespaces.create(ns, &WriteOptions::default()).await {
            Ok(_) | Err(ApiError { code: 409, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Upstream's `writeConfigMap`: an update of the cached object (a
    /// conflict when it changed since), a create when it is gone, and a
    /// delete when it grew too large, to be written afresh.
    async fn write(&self, cm: Value) -> Result<(), ApiError> {
        let body = Arc::new(cm.clone());
        let mutate = Arc::new(move |current: Option<&Value>| match current {
            Some(_) => Ok((*body).clone()),
            None => Err(ApiError::not_found("", "configmaps", NAME)),
        });
        let opts = WriteOptions::default();
        let updated = self
            .configmaps
            .update(Some(NAMESPACE), NAME, Target::Main, mutate, &opts)
            .await;
        match updated {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => {
                let mut cm = cm;
                if let Some(meta) = cm["metadata"].as_object_mut() {
                    meta.remove("resourceVersion");
                }
                self.configmaps.create(cm, &opts).await.map(|_| ())
            }
            Err(e) if e.code == 413 || (e.code == 422 && e.message.contains("Too long")) => {
                let opts = DeleteOptions::default();
                self.configmaps.delete(Some(NAMESPACE), NAME, &opts).await?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Upstream's `Run(ctx, 1)`: one worker, the key added by the
    /// configmap's informer, by CA reloads and every [`RESYNC`], until `stop`.
    pub async fn run(self, informer: Arc<SharedInformer>, stop: CancellationToken) {
        let queue = RateLimitingQueue::<()>::with_default_limiter();
        let (added, deleted) = (queue.clone(), queue.clone());
        let is_ours = |cm: &Value| {
            let meta = &cm["metadata"];
            meta["namespace"] == NAMESPACE && meta["name"] == NAME
        };
        let handler = ResourceEventHandlerFuncs {
            add: Some(Box::new(move |cm| {
                if is_ours(cm) {
                    added.add(());
                }
            })),
            update: None,
            delete: Some(Box::new(move |cm| {
                if is_ours(cm) {
                    deleted.add(());
                }
            })),
        };
        informer.add_event_handler_until(handler, &stop);
        informer.wait_for_sync().await;
        let mut reloads: Vec<_> = self.required.bundles().map(ClientCa::subscribe).collect();
        queue.add_every((), RESYNC, stop.clone());
        let (reloaded, until) = (queue.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = until.cancelled() => return,
                    _ = any_reloaded(&mut reloads) => reloaded.add(()),
                }
            }
        });
        let controller = Arc::new(self);
        run_workers(queue, 1, stop, move |()| {
            let controller = controller.clone();
            async move { controller.sync().await }
        })
        .await;
    }
}

/// Adds the `start-cluster-authentication-info-controller` hook: once the
/// ConfigMap informer has synced the configmap is written (so it is there
/// when the server is ready), then the controller runs until the server
/// stops. Nothing when there is nothing to publish.
pub fn install(server: &mut apiserver::server::GenericApiServer, required: RequiredInfo) {
    let (Some(configmaps), Some(namespaces)) = (
        server.store("", "v1", "configmaps"),
        server.store("", "v1", "namespaces"),
    ) else {
        return;
    };
    if required.bundles().next().is_none() {
        return;
    }
    let source = InNamespace::new(configmaps.clone(), NAMESPACE);
    let informer = SharedInformer::new(Arc::new(source), Some(INFORMER_RESYNC));
    server.add_post_start_hook(
        "start-cluster-authentication-info-controller",
        Arc::new(move |ctx| {
            let controller = Controller::new(
                required.clone(),
                configmaps.clone(),
                namespaces.clone(),
                &informer,
            );
            let informer = informer.clone();
            informer.start(&ctx.stop);
            Box::pin(async move {
                informer.wait_for_sync().await;
                if let Err(e) = controller.sync().await {
                    tracing::warn!(error = %e, "publishing {NAMESPACE}/{NAME}");
                }
                tokio::spawn(controller.run(informer, ctx.stop));
                Ok(())
            })
        }),
    );
}
