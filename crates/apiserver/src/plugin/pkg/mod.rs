//! Upstream's `k8s.io/apiserver/plugin/pkg`.

pub mod authenticator;
pub mod authorizer;
