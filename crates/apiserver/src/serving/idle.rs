//! Per-connection activity tracking for upstream's `IdleTimeout` (90s): a
//! connection with no request in flight for that long is closed gracefully.
//! A request counts as in flight from its headers until its response body has
//! been fully sent or dropped, so long-running watches keep a connection busy.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Instant;

/// In-flight requests of one connection and when it last became idle.
#[derive(Debug)]
pub(super) struct Activity {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    in_flight: usize,
    idle_since: Instant,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: Instant::now(),
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Marks a request as started; it ends when the guard is dropped.
    pub fn begin(self: &Arc<Self>) -> RequestGuard {
        self.state().in_flight += 1;
        RequestGuard(self.clone())
    }

    /// Resolves once the connection has had nothing in flight for `timeout`.
    pub async fn idle_for(&self, timeout: Duration) {
        loop {
            let wait = {
                let state = self.state();
                if state.in_flight > 0 {
                    timeout
                } else {
                    let idle = state.idle_since.elapsed();
                    if idle >= timeout {
                        return;
                    }
                    timeout - idle
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// Keeps its request counted as in flight while alive.
#[derive(Debug)]
pub(super) struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
        }
    }
}

/// A response body that holds its request's [`RequestGuard`] until it is
/// dropped (after the last frame was sent, or on reset).
pub(super) struct TrackedBody<B> {
    inner: B,
    _guard: RequestGuard,
}

impl<B> TrackedBody<B> {
    pub fn new(inner: B, guard: RequestGuard) -> Self {
        Self {
            inner,
            _guard: guard,
        }
    }
}

impl<B: Body + Unpin> Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_only_counts_time_without_requests() {
        let activity = Activity::new();
        let timeout = Duration::from_secs(90);
        let guard = activity.begin();
        tokio::time::sleep(Duration::from_secs(200)).await;
        // Busy the whole time: not idle yet.
        let idle = tokio::time::timeout(Duration::from_secs(60), activity.idle_for(timeout));
        assert!(idle.await.is_err());
        drop(guard);
        let started = Instant::now();
        activity.idle_for(timeout).await;
        assert_eq!(started.elapsed(), timeout);
    }
}
