//! The handler chain's filters (upstream's `pkg/endpoints/filters` and
//! `pkg/server/filters`), one small middleware per file, assembled in
//! upstream's order by
//! [`build_handler_chain`](crate::server::handler_chain::build_handler_chain).

pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod cache_control;
pub mod cors;
pub mod filterlatency;
pub mod handler;
pub mod hsts;
pub mod httplog;
pub mod impersonation;
pub mod max_in_flight;
pub mod metrics;
pub mod panic_recovery;
pub mod priority_and_fairness;
pub mod request_info;
pub mod timeout;
pub mod traces;
pub mod waitgroup;
pub mod with_retry_after;
