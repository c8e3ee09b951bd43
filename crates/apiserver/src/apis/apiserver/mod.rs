//! The `apiserver.config.k8s.io` configuration files (upstream's
//! `k8s.io/apiserver/pkg/apis/apiserver` and its `validation`):
//! `AuthenticationConfiguration`, `AuthorizationConfiguration` and
//! `TracingConfiguration`, each
//! decoded strictly, validated with upstream's field paths and messages,
//! and compiled into what the authenticators and authorizers run.

pub mod authentication;
pub mod authorization;
pub mod tracing;
