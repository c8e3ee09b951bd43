//! Utilities of the generic API server (upstream's
//! `k8s.io/apiserver/pkg/util`).

pub mod webhook;
