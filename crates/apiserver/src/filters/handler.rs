//! The handler every filter wraps (Go's `net/http.Handler`, which each of
//! upstream's `WithX` filters takes and returns): [`Next`], the rest of the
//! chain below a filter, built once and shared, so passing it to a request
//! costs one reference-count increment, whatever the depth of the chain.
//! (axum's `from_fn` layers clone the whole boxed chain below them on every
//! call, which made a request's cost quadratic in the number of filters.)

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::State;
use futures::future::{BoxFuture, Map};
use futures::FutureExt;
use http::{Request, Response};
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

/// A handler as a boxed tower service (the server's `Handler`).
pub type BoxHandler = BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>;

/// A response on its way.
pub type ResponseFuture = BoxFuture<'static, Response<Body>>;

/// One link of the chain: serves a request through `&self`, so the link is
/// shared rather than copied per request.
trait Link: Send + Sync + 'static {
    fn serve(&self, req: Request<Body>) -> ResponseFuture;
}

/// The rest of the chain: a handler, possibly wrapped in filters.
#[derive(Clone)]
pub struct Next(Arc<dyn Link>);

impl Next {
    /// The handler at the bottom of a chain (any tower service, boxed).
    pub fn new(handler: BoxHandler) -> Self {
        Next(Arc::new(Endpoint(handler)))
    }

    /// Passes `req` on down the chain.
    pub fn run(self, req: Request<Body>) -> ResponseFuture {
        self.0.serve(req)
    }

    /// This chain wrapped in `filter`, called with a clone of `state`, the
    /// request and this chain, as axum's `from_fn_with_state` calls it.
    pub fn layer<T, F, Fut>(self, state: T, filter: F) -> Next
    where
        T: Clone + Send + Sync + 'static,
        F: Fn(State<T>, Request<Body>, Next) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        Next(Arc::new(Filter {
            state,
            filter,
            next: self,
        }))
    }

    /// This chain wrapped in a `filter` without state.
    pub fn layer_fn<F, Fut>(self, filter: F) -> Next
    where
        F: Fn(Request<Body>, Next) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        self.layer((), move |State(()), req, next| filter(req, next))
    }
}

/// The handler at the bottom: a tower service, cloned per request as tower
/// requires (one box; the API handler's own clone is one `Arc` increment).
struct Endpoint(BoxHandler);

impl Link for Endpoint {
    fn serve(&self, req: Request<Body>) -> ResponseFuture {
        self.0
            .clone()
            .oneshot(req)
            .map(|result| match result {
                Ok(resp) => resp,
                Err(never) => match never {},
            })
            .boxed()
    }
}

/// A filter around the rest of the chain.
struct Filter<T, F> {
    state: T,
    filter: F,
    next: Next,
}

impl<T, F, Fut> Link for Filter<T, F>
where
    T: Clone + Send + Sync + 'static,
    F: Fn(State<T>, Request<Body>, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Body>> + Send + 'static,
{
    fn serve(&self, req: Request<Body>) -> ResponseFuture {
        (self.filter)(State(self.state.clone()), req, self.next.clone()).boxed()
    }
}

/// The chain as a tower service, for the server's router and for tests.
impl Service<Request<Body>> for Next {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Map<ResponseFuture, fn(Response<Body>) -> Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.0.serve(req).map(Ok)
    }
}
