//! Authorizer plugins (upstream's
//! `k8s.io/apiserver/plugin/pkg/authorizer`).

pub mod webhook;
