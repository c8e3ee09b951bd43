//! Upstream's `k8s.io/client-go/util/workqueue`: a [`Queue`] of keys that
//! holds each key once and never hands one key to two workers at a time,
//! with delayed adds; [`RateLimitingQueue`] adds a key again after the
//! wait its [`RateLimiter`] says (per-key exponential backoff and an
//! overall token bucket: [`default_controller_rate_limiter`]);
//! [`run_worker`] is a controller's `processNextWorkItem` loop and
//! [`run_workers`] the rest of its `Run`.

mod default_rate_limiters;
mod queue;
mod rate_limiting_queue;
mod worker;

pub use default_rate_limiters::{
    default_controller_rate_limiter, BucketRateLimiter, ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter, RateLimiter,
};
pub use queue::Queue;
pub use rate_limiting_queue::RateLimitingQueue;
pub use worker::{run_worker, run_workers};
