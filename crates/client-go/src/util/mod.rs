//! Upstream's `k8s.io/client-go/util`: JSONPath and the work queue.

pub mod jsonpath;
pub mod workqueue;
