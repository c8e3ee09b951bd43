//! The handler chain (upstream's `DefaultBuildHandlerChain` in
//! `k8s.io/apiserver/pkg/server/config.go`): the API handler wrapped in the
//! filters of [`crate::filters`], one per line, in upstream's order.

use std::sync::Arc;

use axum::middleware::from_fn_with_state;
use axum::Router;

use super::lifecycle_signals::LifecycleSignals;
use super::CompletedConfig;
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
    handler: Router,
    config: &CompletedConfig,
    signals: &LifecycleSignals,
) -> Router {
    // Upstream's filterlatency tracking around the tracked filters: started
    // just outside each, completed just inside.
    let started = |name: &'static str| from_fn_with_state(name, filterlatency::started);
    let completed = || from_fn_with_state(config.metrics.clone(), filterlatency::completed);
    let handler = handler
        .layer(completed())
        .layer(from_fn_with_state(
            config.authorization.clone(),
            authorization::filter,
        ))
        .layer(started("authorization"));
    // Priority and fairness needs the (impersonated) user, so it sits just
    // outside authorization; the max-in-flight budgets stand in when it is
    // off.
    let (handler, limits) = match &config.flow_control {
        Some(control) => (
            handler
                .layer(completed())
                .layer(from_fn_with_state(
                    priority_and_fairness::PriorityAndFairness {
                        control: control.clone(),
                        metrics: config.metrics.clone(),
                    },
                    priority_and_fairness::filter,
                ))
                .layer(started("priorityandfairness")),
            None,
        ),
        None => (
            handler,
            Some(Arc::new(max_in_flight::Limits::new(
                config.max_requests_inflight,
                config.max_mutating_requests_inflight,
            ))),
        ),
    };
    // axum applies the last `layer` outermost, so the list reads inside out.
    let handler = handler
        .layer(completed())
        .layer(from_fn_with_state(
            config.authorization.clone(),
            impersonation::filter,
        ))
        .layer(started("impersonation"))
        .layer(completed())
        .layer(from_fn_with_state(config.audit.clone(), audit::filter))
        .layer(started("audit"))
        .layer(axum::middleware::from_fn(traces::filter))
        .layer(completed())
        .layer(from_fn_with_state(
            (config.authentication.clone(), config.metrics.clone()),
            authentication::filter,
        ))
        .layer(started("authentication"))
        .layer(from_fn_with_state(config.cors.clone(), cors::filter))
        .layer(from_fn_with_state(config.request_timeout, timeout::filter));
    let handler = match limits {
        Some(limits) => handler.layer(from_fn_with_state(limits, max_in_flight::filter)),
        None => handler,
    };
    let handler = handler
        .layer(from_fn_with_state(config.metrics.clone(), metrics::filter))
        .layer(from_fn_with_state(
            signals.in_flight.clone(),
            waitgroup::filter,
        ))
        .layer(axum::middleware::from_fn(cache_control::filter))
        .layer(from_fn_with_state(config.hsts.clone(), hsts::filter));
    let handler = if config.shutdown_send_retry_after {
        handler.layer(from_fn_with_state(
            signals.not_accepting_new_request.clone(),
            with_retry_after::filter,
        ))
    } else {
        handler
    };
    handler
        .layer(axum::middleware::from_fn(httplog::filter))
        .layer(from_fn_with_state(config.audit.clone(), audit::init))
        .layer(from_fn_with_state(
            Arc::new(apimachinery::request_info::RequestInfoResolver::default()),
            request_info::filter,
        ))
        .layer(axum::middleware::from_fn(panic_recovery::filter))
}
