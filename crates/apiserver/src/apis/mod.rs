//! Configuration file types of the generic API server (upstream's
//! `k8s.io/apiserver/pkg/apis`).

pub mod apiserver;
