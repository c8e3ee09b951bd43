//! `--debug-socket-path`: the profiling endpoints on a unix socket, with no
//! handler chain (no authentication, no authorization): whoever can open
//! the socket file may profile the process (upstream's `routes.DebugSocket`,
//! `k8s.io/apiserver/pkg/server/routes/debugsocket.go`). It serves whether
//! or not `--profiling` is on, as upstream's does.

use std::path::{Path, PathBuf};

use axum::extract::Request;
use axum::routing::{any, get};
use axum::Router;
use tokio::net::UnixListener;

use super::pprof;

/// The socket's path and what it serves.
pub struct DebugSocket {
    path: PathBuf,
    router: Router,
}

impl DebugSocket {
    pub fn new(path: &Path) -> Self {
        DebugSocket {
            path: path.to_owned(),
            router: Router::new(),
        }
    }

    /// Adds the profiling endpoints, `/debug/pprof/cmdline` included.
    pub fn install_profiling(mut self) -> Self {
        self.router = self
            .router
            .route(pprof::ROOT, any(pprof::redirect_to_index))
            .route(
                &format!("{}{{*name}}", pprof::INDEX),
                any(|req: Request| pprof::index(req, pprof::SOCKET_PROFILES)),
            )
            .route(
                pprof::INDEX,
                any(|req: Request| pprof::index(req, pprof::SOCKET_PROFILES)),
            )
            .route(pprof::CMDLINE, get(pprof::cmdline))
            .route(pprof::PROFILE, any(pprof::profile))
            .route(pprof::SYMBOL, any(pprof::symbol));
        self
    }

    /// Serves HTTP/1.1 on the socket until the task is dropped; a file left
    /// at the path (a previous run's socket) is removed first. Failures are
    /// logged, not fatal, as upstream's.
    pub async fn run(self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::error!(path = %self.path.display(), error = %e, "debug socket: failed to remove the old socket");
                return;
            }
        }
        let listener = match UnixListener::bind(&self.path) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(path = %self.path.display(), error = %e, "debug socket: listen error");
                return;
            }
        };
        if let Err(e) = axum::serve(listener, self.router).await {
            tracing::error!(path = %self.path.display(), error = %e, "debug socket stopped");
        }
    }
}
