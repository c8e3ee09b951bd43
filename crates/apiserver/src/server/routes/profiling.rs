//! `/debug/pprof/` on a server's non-resource mux, installed when
//! `--profiling` is on (upstream's `routes.Profiling`,
//! `k8s.io/apiserver/pkg/server/routes/profiling.go`). The paths are
//! unlisted, and reached through the whole handler chain: authentication,
//! then authorization of the non-resource URL `/debug/pprof/*`.
//!
//! `--contention-profiling` (upstream: Go's block profile rate) has no
//! counterpart in a Rust process: `/debug/pprof/block` and `mutex` answer
//! Go's empty profiles with or without it.

use std::sync::Arc;

use super::{pprof, PathRecorder};

/// Installs the profiling endpoints of the secure port: the index (with
/// the empty block and mutex profiles below it; every other name below
/// `/debug/pprof/` not served otherwise is answered "Unknown profile", as
/// upstream's index handler does), the CPU profile and symbol lookup. `/debug/pprof/cmdline` is only on the debug socket, as upstream.
pub fn install(mux: &mut impl PathRecorder) {
    mux.unlisted_handle(
        pprof::ROOT,
        Arc::new(|_req| Box::pin(pprof::redirect_to_index())),
    );
    mux.unlisted_handle_prefix(
        pprof::INDEX,
        Arc::new(|req| Box::pin(pprof::index(req, pprof::SECURE_PORT_PROFILES))),
    );
    mux.unlisted_handle(
        pprof::PROFILE,
        Arc::new(|req| Box::pin(pprof::profile(req))),
    );
    mux.unlisted_handle(pprof::SYMBOL, Arc::new(|req| Box::pin(pprof::symbol(req))));
}
