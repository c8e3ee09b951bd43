//! Post-start and pre-shutdown hooks (upstream's `server/hooks.go`): named
//! tasks run after the listener is up (each with a `poststarthook/<name>`
//! health check that passes once it has finished) or before shutdown. A
//! post-start hook is given a [`PostStartHookContext`] whose stop token is
//! cancelled when the server stops taking requests, so what it starts
//! (informers, controllers) stops with the server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use client_go::CancellationToken;
use futures::future::BoxFuture;

use super::healthz::{FnCheck, HealthCheck};

pub type HookFn = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// What a post-start hook is given (upstream's `PostStartHookContext`).
#[derive(Clone)]
pub struct PostStartHookContext {
    /// Cancelled once the server stops taking requests (after the shutdown
    /// delay and the pre-shutdown hooks), as upstream's hook context.
    pub stop: CancellationToken,
}

pub type PostStartHookFn =
    Arc<dyn Fn(PostStartHookContext) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

#[derive(Clone)]
pub struct PostStartHook {
    pub name: String,
    run: PostStartHookFn,
    done: Arc<AtomicBool>,
}

impl PostStartHook {
    pub fn new(name: impl Into<String>, run: PostStartHookFn) -> Self {
        PostStartHook {
            name: name.into(),
            run,
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The `poststarthook/<name>` check: ok once the hook has finished.
    pub fn check(&self) -> Arc<dyn HealthCheck> {
        let done = self.done.clone();
        FnCheck::new(format!("poststarthook/{}", self.name), move || {
            let finished = done.load(Ordering::SeqCst);
            Box::pin(async move {
                if finished {
                    Ok(())
                } else {
                    Err("not finished".to_string())
                }
            })
        })
    }

    /// Runs the hook in the background; a failing hook is fatal, as upstream.
    pub fn spawn(&self, context: PostStartHookContext) {
        let hook = self.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            match (hook.run)(context).await {
                Ok(()) => {
                    tracing::debug!(hook = %hook.name, took = ?started.elapsed(), "post-start hook done");
                    hook.done.store(true, Ordering::SeqCst)
                }
                Err(e) => {
                    tracing::error!(hook = %hook.name, error = %e, "post-start hook failed");
                    std::process::exit(1);
                }
            }
        });
    }
}

#[derive(Clone)]
pub struct PreShutdownHook {
    pub name: String,
    pub run: HookFn,
}
