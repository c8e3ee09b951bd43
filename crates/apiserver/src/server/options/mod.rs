//! Loaders of the generic server's configuration files (upstream's
//! `k8s.io/apiserver/pkg/server/options`).

pub mod encryptionconfig;
pub mod tracing;
