//! The handler chain (upstream's `DefaultBuildHandlerChain` in
//! `k8s.io/apiserver/pkg/server/config.go`): the API handler wrapped in the
//! filters of [`crate::filters`], one per line, in upstream's order, built
//! once into a shared [`Next`] and served by an axum `Router` (which, at the
//! top, sets `Content-Length` and empties the body of HEAD responses).

use std::sync::Arc;

use axum::Router;

use super::lifecycle_signals::LifecycleSignals;
use super::{CompletedConfig, Handler};
use crate::filters::handler::Next;
use crate::filters::{
    audit, authentication, authorization, cache_control, cors, filterlatency, hsts, httplog,
    impersonation, max_in_flight, metrics, panic_recovery, priority_and_fairness, request_info,
    timeout, traces, waitgroup, with_retry_after,
};

/// Wraps the API handler in the filters, listed here from the outermost
/// (first to see a request) to the innermost, as upstream's
/// `DefaultBuildHandlerChain`: panic recovery → request info → audit ID →
/// HTTP logging → retry-after while shutting down (`--shutdown-send-retry-after`) → HSTS →
/// cache control → in-flight count → metrics → max in flight (when priority and fairness is
/// off) → timeout → CORS → authentication → tracing → audit → impersonation →
/// priority and fairness → authorization → (admission, in the REST handler) → handler,
/// with upstream's `filterlatency` tracking around authentication, audit,
/// impersonation, priority and fairness and authorization.
pub fn build_handler_chain(
    handler: Handler,
    config: &CompletedConfig,
    signals: &LifecycleSignals,
) -> Router {
    // Upstream's filterlatency tracking around a tracked filter: started
    // just outside it, completed just inside.
    let tracked = |next: Next, name: &'static str, wrap: &dyn Fn(Next) -> Next| {
        let inner = next.layer(config.metrics.clone(), filterlatency::completed);
        wrap(inner).layer(filterlatency::Tracked::new(name), filterlatency::started)
    };
    // Each `layer` wraps what is built so far, so the list reads inside out.
    let next = tracked(Next::new(handler), "authorization", &|next| {
        next.layer(config.authorization.clone(), authorization::filter)
    });
    // Priority and fairness needs the (impersonated) user, so it sits just
    // outside authorization; the max-in-flight budgets stand in when it is
    // off.
    let (next, limits) = match &config.flow_control {
        Some(control) => {
            let apf = priority_and_fairness::PriorityAndFairness {
                control: control.clone(),
                metrics: config.metrics.clone(),
            };
            let next = tracked(next, "priorityandfairness", &|next| {
                next.layer(apf.clone(), priority_and_fairness::filter)
            });
            (next, None)
        }
        None => (
            next,
            Some(Arc::new(max_in_flight::Limits::new(
                config.max_requests_inflight,
                config.max_mutating_requests_inflight,
            ))),
        ),
    };
    let next = tracked(next, "impersonation", &|next| {
        next.layer(config.authorization.clone(), impersonation::filter)
    });
    let next = tracked(next, "audit", &|next| {
        next.layer(config.audit.clone(), audit::filter)
    })
    .layer_fn(traces::filter);
    let authn = (config.authentication.clone(), config.metrics.clone());
    let next = tracked(next, "authentication", &|next| {
        next.layer(authn.clone(), authentication::filter)
    })
    .layer(config.cors.clone(), cors::filter)
    .layer(config.request_timeout, timeout::filter);
    let next = match limits {
        Some(limits) => next.layer(limits, max_in_flight::filter),
        None => next,
    };
    let next = next
        .layer(config.metrics.clone(), metrics::filter)
        .layer(signals.in_flight.clone(), waitgroup::filter)
        .layer_fn(cache_control::filter)
        .layer(config.hsts.clone(), hsts::filter);
    let next = if config.shutdown_send_retry_after {
        next.layer(
            signals.not_accepting_new_request.clone(),
            with_retry_after::filter,
        )
    } else {
        next
    };
    let next = next
        .layer_fn(httplog::filter)
        .layer(config.audit.clone(), audit::init)
        .layer(
            Arc::new(apimachinery::request_info::RequestInfoResolver::default()),
            request_info::filter,
        )
        .layer_fn(panic_recovery::filter);
    Router::new().fallback_service(next)
}
