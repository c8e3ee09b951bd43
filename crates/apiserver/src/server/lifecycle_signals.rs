//! The shutdown states the handler chain and health checks observe
//! (upstream's `lifecycleSignals` in `pkg/server/lifecycle_signals.go`):
//! `ShutdownInitiated` fails `/readyz`, `NotAcceptingNewRequest` turns on
//! the 429s of `--shutdown-send-retry-after`, and the in-flight count of
//! non-long-running requests tells when they have drained
//! (`InFlightRequestsDrained`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::filters::waitgroup::InFlight;

#[derive(Debug, Clone, Default)]
pub struct LifecycleSignals {
    /// Shutdown was asked for: `/readyz` fails.
    pub shutdown_initiated: Arc<AtomicBool>,
    /// The shutdown delay passed and the pre-shutdown hooks ran.
    pub not_accepting_new_request: Arc<AtomicBool>,
    /// Non-long-running requests being handled.
    pub in_flight: Arc<InFlight>,
}
