//! The in-flight count of non-long-running requests (upstream's
//! `WithWaitGroup` in `pkg/server/filters/waitgroup.go` over its
//! `SafeWaitGroup`): graceful shutdown waits for it to reach zero
//! (`InFlightRequestsDrained`) before it stops listening when
//! `--shutdown-send-retry-after` is set. Long-running requests (watches,
//! proxies) and the requests exempt from the shutdown 429s are not counted,
//! as upstream's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use http::{Request, Response};
use tokio::sync::Notify;

use super::handler::Next;
use super::max_in_flight::is_long_running_request;
use super::with_retry_after::is_exempt;

/// Requests being handled; [`InFlight::drained`] waits for none.
#[derive(Debug, Default)]
pub struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// One counted request; dropping it ends the request.
struct Counted(Arc<InFlight>);

impl Drop for Counted {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl InFlight {
    fn enter(self: &Arc<Self>) -> Counted {
        self.count.fetch_add(1, Ordering::SeqCst);
        Counted(self.clone())
    }

    /// Resolves once no counted request is in flight.
    pub async fn drained(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

pub async fn filter(
    State(in_flight): State<Arc<InFlight>>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let long_running = is_long_running_request(&req);
    if long_running || is_exempt(&req) {
        return next.run(req).await;
    }
    let _counted = in_flight.enter();
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn drained_waits_for_every_counted_request() {
        let in_flight = Arc::new(InFlight::default());
        in_flight.drained().await;
        let (first, second) = (in_flight.enter(), in_flight.enter());
        let waiting = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.drained().await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "drained with one still in flight");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("drained once none is in flight")
            .unwrap();
    }
}
