//! Upstream's `k8s.io/client-go/util`: the work queue.

pub mod workqueue;
