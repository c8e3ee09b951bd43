//! PrepareRun and Run (upstream's `preparedGenericAPIServer`): health
//! endpoints, `/version`, `/metrics` and the path index are installed, the
//! handler chain wraps the server, then it serves TLS until shutdown, which it carries out
//! in upstream's order: /readyz fails and the pre-shutdown hooks run at
//! once, serving continues for `--shutdown-delay-duration`, then, both
//! done, in-flight requests drain: with the listener closed, or, with
//! `--shutdown-send-retry-after`, still listening and answering new
//! requests 429 until the non-long-running ones in flight have finished.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::Router;
use client_go::CancellationToken;
use http::{Request, Response, StatusCode};
use serde_json::json;
use tokio::net::TcpListener;

use super::handler_chain::build_handler_chain;
use super::healthz::{self, FnCheck, HealthCheck};
use super::lifecycle_signals::LifecycleSignals;
use super::routes::debugsocket::DebugSocket;
use super::routes::profiling;
use super::{
    DelegationTarget, GenericApiServer, PostStartHook, PostStartHookContext, PreShutdownHook,
};
use crate::endpoints::negotiation::Encoding;
use crate::endpoints::response;
use crate::serving::{self, ServeOptions};

pub struct PreparedServer {
    router: Router,
    post_start_hooks: Vec<PostStartHook>,
    pre_shutdown_hooks: Vec<PreShutdownHook>,
    signals: LifecycleSignals,
    config: super::CompletedConfig,
    /// `--debug-socket-path`, served while the server runs.
    debug_socket: Option<DebugSocket>,
}

impl GenericApiServer {
    /// Installs the health endpoints, `/version`, `/metrics`, the profiling
    /// endpoints (`--profiling`) and `/`, and wraps the server in the
    /// handler chain.
    pub fn prepare_run(mut self) -> PreparedServer {
        let signals = LifecycleSignals::default();
        let hooks = self.post_start_hooks.clone();
        let hook_checks: Vec<Arc<dyn HealthCheck>> = hooks.iter().map(|h| h.check()).collect();
        let mut readyz_checks = vec![healthz::ping(), log_check()];
        readyz_checks.extend(self.health_checks.iter().cloned());
        readyz_checks.extend(hook_checks.iter().cloned());
        let healthz_checks: Vec<_> = readyz_checks
            .iter()
            .filter(|c| !c.readyz_only())
            .cloned()
            .collect();
        let livez_checks = healthz_checks
            .iter()
            .filter(|c| c.livez())
            .cloned()
            .collect();
        readyz_checks.push(shutdown_check(signals.shutdown_initiated.clone()));
        for (endpoint, checks) in [
            ("healthz", healthz_checks),
            ("livez", livez_checks),
            ("readyz", readyz_checks),
        ] {
            self.install_health(endpoint, Arc::new(checks));
        }
        let version = self.config.version.clone();
        self.handle_restful_path(
            "/version",
            Arc::new(move |_req| {
                let body = response::encode(&version, Encoding::Json, true);
                Box::pin(async move { response::respond(StatusCode::OK, body, Encoding::Json) })
            }),
        );
        let metrics = self.config.metrics.clone();
        self.handle_path(
            "/metrics",
            Arc::new(move |_req| Box::pin(super::metrics_route::serve(metrics.clone()))),
        );
        if self.config.enable_profiling {
            profiling::install(&mut self);
        }
        self.install_index();
        let handler = self.unprotected_handler();
        let router = build_handler_chain(handler, &self.config, &signals);
        PreparedServer {
            router,
            post_start_hooks: self.post_start_hooks.clone(),
            pre_shutdown_hooks: self.pre_shutdown_hooks.clone(),
            signals,
            debug_socket: self
                .config
                .debug_socket_path
                .as_deref()
                .map(|path| DebugSocket::new(path).install_profiling()),
            config: self.config.clone(),
        }
    }

    fn install_health(&mut self, endpoint: &'static str, checks: Arc<Vec<Arc<dyn HealthCheck>>>) {
        let serve = move |sub: Option<String>| {
            let checks = checks.clone();
            move |req: Request<Body>| {
                let checks = checks.clone();
                let sub = sub.clone();
                let query = req.uri().query().map(str::to_owned);
                Box::pin(async move {
                    healthz::serve(endpoint, &checks, sub.as_deref(), query.as_deref()).await
                }) as futures::future::BoxFuture<'static, Response<Body>>
            }
        };
        self.handle_path(&format!("/{endpoint}"), Arc::new(serve(None)));
        let names: Vec<String> = self
            .health_checks
            .iter()
            .map(|c| c.name().to_owned())
            .chain(["ping".to_owned(), "log".to_owned(), "shutdown".to_owned()])
            .chain(
                self.post_start_hooks
                    .iter()
                    .map(|h| format!("poststarthook/{}", h.name)),
            )
            .collect();
        for name in names {
            self.handle_path(
                &format!("/{endpoint}/{name}"),
                Arc::new(serve(Some(name.clone()))),
            );
        }
    }

    /// `/`: the index of every path this server and its delegates serve.
    fn install_index(&mut self) {
        let paths = self.listed_paths();
        let doc = json!({ "paths": paths });
        self.handle_path(
            "/",
            Arc::new(move |_req| {
                let body = response::encode(&doc, Encoding::Json, true);
                Box::pin(async move { response::respond(StatusCode::OK, body, Encoding::Json) })
            }),
        );
    }
}

fn log_check() -> Arc<dyn HealthCheck> {
    FnCheck::new("log", || Box::pin(async { Ok(()) }))
}

fn shutdown_check(flag: Arc<AtomicBool>) -> Arc<dyn HealthCheck> {
    FnCheck::new("shutdown", move || {
        let down = flag.load(Ordering::SeqCst);
        Box::pin(async move {
            if down {
                Err("process is shutting down".to_string())
            } else {
                Ok(())
            }
        })
    })
}

impl PreparedServer {
    /// The whole handler, chain included (for tests and embedding).
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// Serves on `listener` until `shutdown` resolves, then shuts down
    /// gracefully. Connections still open when `options.shutdown_timeout`
    /// (2 s with `--shutdown-send-retry-after`, as upstream's) ends are
    /// cut and logged, as upstream's server does.
    pub async fn run(
        self,
        listener: TcpListener,
        tls: impl Into<serving::ServerTls>,
        mut options: ServeOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        let context = PostStartHookContext {
            stop: CancellationToken::new(),
        };
        for hook in &self.post_start_hooks {
            hook.spawn(context.clone());
        }
        let debug_socket = self.debug_socket.map(|socket| tokio::spawn(socket.run()));
        let send_retry_after = self.config.shutdown_send_retry_after;
        if send_retry_after {
            options.shutdown_timeout = RETRY_AFTER_SHUTDOWN_TIMEOUT;
        }
        let drain = Shutdown {
            signals: self.signals.clone(),
            delay: self.config.shutdown_delay,
            pre_shutdown_hooks: self.pre_shutdown_hooks.clone(),
            stop: context.stop,
            send_retry_after,
        }
        .after(shutdown);
        let served = serving::serve(listener, tls, self.router, drain, &options).await;
        if let Some(task) = debug_socket {
            task.abort();
        }
        if let Err(e) = served {
            tracing::warn!(error = %e, "graceful shutdown cut connections");
        }
    }
}

/// What happens once shutdown is asked for, before in-flight requests
/// drain, in upstream's order (`RunWithContext`'s lifecycle signals): /readyz
/// fails (`ShutdownInitiated`) while the pre-shutdown hooks run
/// (`PreShutdownHooksStopped` once done) and the shutdown delay passes
/// (`AfterShutdownDelayDuration`); when both are over, new requests are
/// refused and the post-start hooks' stop token is cancelled
/// (`NotAcceptingNewRequest`, which ends the hooks' context). With
/// `send_retry_after` the listener stays open (new requests get 429) until
/// the in-flight requests drained (`InFlightRequestsDrained`).
struct Shutdown {
    signals: LifecycleSignals,
    delay: Duration,
    pre_shutdown_hooks: Vec<PreShutdownHook>,
    stop: CancellationToken,
    send_retry_after: bool,
}

/// Upstream's HTTP server shutdown timeout with `--shutdown-send-retry-after`
/// (time for a GOAWAY's answer once the requests have drained).
const RETRY_AFTER_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

impl Shutdown {
    async fn after(self, shutdown: impl Future<Output = ()>) {
        let started = Instant::now();
        shutdown.await;
        tracing::info!(uptime = ?started.elapsed(), "shutdown requested; /readyz now fails");
        let signals = self.signals;
        signals.shutdown_initiated.store(true, Ordering::SeqCst);
        let hooks = async {
            for hook in self.pre_shutdown_hooks {
                if let Err(e) = (hook.run)().await {
                    tracing::warn!(hook = %hook.name, error = %e, "pre-shutdown hook failed");
                }
            }
        };
        tokio::join!(tokio::time::sleep(self.delay), hooks);
        signals
            .not_accepting_new_request
            .store(true, Ordering::SeqCst);
        self.stop.cancel();
        if self.send_retry_after {
            tracing::info!("answering new requests 429 until those in flight drain");
            signals.in_flight.drained().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn hooks_run_at_once_and_the_stop_token_is_cancelled_after_them_and_the_delay() {
        let (signals, stop) = (LifecycleSignals::default(), CancellationToken::new());
        let readyz_fails = signals.shutdown_initiated.clone();
        let seen_by_hook = Arc::new(AtomicBool::new(true));
        let hook_ran = Arc::new(AtomicBool::new(false));
        let (hook_stop, hook_seen, ran) = (stop.clone(), seen_by_hook.clone(), hook_ran.clone());
        let hook = PreShutdownHook {
            name: "probe".to_owned(),
            run: Arc::new(move || {
                hook_seen.store(hook_stop.is_cancelled(), Ordering::SeqCst);
                ran.store(true, Ordering::SeqCst);
                Box::pin(async { Ok(()) })
            }),
        };
        let (asked, shutdown) = tokio::sync::oneshot::channel::<()>();
        let sequence = tokio::spawn(
            Shutdown {
                signals: signals.clone(),
                delay: Duration::from_secs(5),
                pre_shutdown_hooks: vec![hook],
                stop: stop.clone(),
                send_retry_after: false,
            }
            .after(async move {
                let _ = shutdown.await;
            }),
        );
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!readyz_fails.load(Ordering::SeqCst) && !stop.is_cancelled());
        asked.send(()).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(readyz_fails.load(Ordering::SeqCst));
        assert!(
            hook_ran.load(Ordering::SeqCst),
            "the hook waited for the delay"
        );
        assert!(!stop.is_cancelled(), "cancelled before the shutdown delay");
        sequence.await.unwrap();
        assert!(stop.is_cancelled());
        assert!(
            !seen_by_hook.load(Ordering::SeqCst),
            "cancelled before the hook ran"
        );
    }
}
