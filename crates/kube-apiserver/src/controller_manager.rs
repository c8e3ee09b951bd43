//! kube-controller-manager's leader election (upstream's
//! `cmd/kube-controller-manager/app`, `leaderElectAndRun`): the controllers
//! upstream runs in kube-controller-manager run here, but only in the one
//! API server that holds the `kube-system/kube-controller-manager` Lease,
//! with kube-controller-manager's identity (`<hostname>_<uuid>`) and
//! timings (lease 15 s, renew deadline 10 s, retry 2 s). A real
//! kube-controller-manager beside the servers competes for the same Lease,
//! so only one of them runs controllers at a time. Elected here, by
//! upstream's controller names: garbage-collector, resourcequota,
//! namespace, serviceaccount, serviceaccount-token, clusterrole-aggregation
//! and root-ca-certificate-publisher. Each registers its informer handlers
//! until its term's token (`add_event_handler_until`), so the shared
//! informers keep no handler of an ended term and no controller acts twice.
//!
//! Upstream's kube-controller-manager exits when it loses the Lease; an
//! API server cannot, so here the controllers of the lost term are stopped
//! (their tokens cancelled) and the server campaigns again. On shutdown
//! (a pre-shutdown hook, run as soon as it begins, as upstream runs them)
//! the controllers are stopped and then the Lease released, so another
//! server takes over at its next try rather than after the lease runs out.
//!
//! On the embedded store no other server can share the data, so there is
//! nothing to elect: every term starts at once and lasts until shutdown,
//! as kube-controller-manager with `--leader-elect=false`.

use std::future::Future;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use apiserver::server::GenericApiServer;
use client_go::tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock, DEFAULT_RENEW_DEADLINE,
};
use client_go::CancellationToken;
use futures::FutureExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

/// Where kube-controller-manager's Lease lives (its
/// `--leader-elect-resource-namespace` and `-name` defaults).
pub const LEASE_NAMESPACE: &str = "kube-system";
pub const LEASE_NAME: &str = "kube-controller-manager";

/// A time this server leads: its token is cancelled when it ends, and it
/// knows the controllers it runs, to wait for them.
#[derive(Clone)]
struct Term {
    token: CancellationToken,
    controllers: TaskTracker,
}

/// Runs controllers in the terms this server leads.
#[derive(Clone)]
pub struct ControllerManager {
    /// The Lease to hold, or None to lead alone.
    lock: Option<Arc<LeaseLock>>,
    term: Arc<watch::Sender<Option<Term>>>,
    /// Cancelled on shutdown.
    stop: CancellationToken,
    campaign: Arc<Once>,
    campaigning: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl ControllerManager {
    /// Elects over `server`'s Leases when `shared` (several servers may
    /// use the storage), else leads alone; stops on `server`'s shutdown.
    pub fn install(server: &mut GenericApiServer, shared: bool) -> Self {
        let leases = server.store("coordination.k8s.io", "v1", "leases");
        let lock = leases.filter(|_| shared).map(|leases| {
            Arc::new(LeaseLock::new(
                LEASE_NAMESPACE,
                LEASE_NAME,
                identity(),
                leases,
            ))
        });
        let manager = ControllerManager {
            lock,
            term: Arc::new(watch::Sender::new(None)),
            stop: CancellationToken::new(),
            campaign: Arc::new(Once::new()),
            campaigning: Arc::default(),
        };
        let stopping = manager.clone();
        server.add_pre_shutdown_hook(
            "stop-kube-controller-manager",
            Arc::new(move || stopping.shut_down().boxed()),
        );
        manager
    }

    /// Stops the controllers, then gives the Lease up.
    fn shut_down(&self) -> impl Future<Output = Result<(), String>> + use<> {
        self.stop.cancel();
        let campaigning = self
            .campaigning
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        async move {
            if let Some(task) = campaigning {
                // The controllers' wait and the release are each bounded so.
                let limit = DEFAULT_RENEW_DEADLINE * 2 + Duration::from_secs(1);
                let _ = tokio::time::timeout(limit, task).await;
            }
            Ok(())
        }
    }

    /// Runs `controller` with each term's token, from its start to its
    /// end, until shutdown; the first call starts the campaign.
    pub fn spawn<F, Fut>(&self, controller: F)
    where
        F: Fn(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.campaign.call_once(|| self.start_campaign());
        let mut terms = self.term.subscribe();
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let next = terms.wait_for(|t| t.as_ref().is_some_and(|t| !t.token.is_cancelled()));
                let term = tokio::select! {
                    term = next => match term {
                        Ok(term) => term.clone(),
                        Err(_) => return,
                    },
                    _ = stop.cancelled() => return,
                };
                let Some(term) = term else { continue };
                let _ = term.controllers.spawn(controller(term.token.clone())).await;
                term.token.cancelled().await;
            }
        });
    }

    fn start_campaign(&self) {
        let stop = self.stop.clone();
        let Some(lock) = self.lock.clone() else {
            tokio::spawn(self.begin(stop.child_token()));
            return;
        };
        let (started, stopped) = (self.clone(), self.clone());
        let stopping = stop.clone();
        let callbacks = LeaderCallbacks {
            on_started_leading: Arc::new(move |token| started.begin(token).boxed()),
            on_stopped_leading: Arc::new(move || {
                if !stopping.is_cancelled() {
                    tracing::error!(lock = %stopped.describe(), "leaderelection lost");
                }
                stopped.term.send_replace(None);
            }),
            on_new_leader: None,
        };
        let mut config = LeaderElectionConfig::new(lock, callbacks);
        config.release_on_cancel = true;
        let elector = LeaderElector::new(config).expect("upstream's timings are valid");
        let task = tokio::spawn(async move {
            while !stop.is_cancelled() {
                elector.run(stop.clone()).await;
            }
        });
        *self.campaigning.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
    }

    fn describe(&self) -> String {
        self.lock.as_ref().map(|l| l.describe()).unwrap_or_default()
    }

    /// Starts a term; resolves once it has ended and its controllers have
    /// stopped.
    fn begin(&self, token: CancellationToken) -> impl Future<Output = ()> + use<> {
        let term = Term {
            token: token.clone(),
            controllers: TaskTracker::new(),
        };
        self.term.send_replace(Some(term.clone()));
        async move {
            token.cancelled().await;
            term.controllers.close();
            term.controllers.wait().await;
        }
    }
}

/// kube-controller-manager's lock identity: the host name (as Go's
/// `os.Hostname` reads it on Linux) and a fresh UUID, so that two
/// processes on one host never share it.
fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}_{}", uuid::Uuid::new_v4())
}
