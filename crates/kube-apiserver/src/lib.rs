//! `kube-apiserver`: the Kubernetes API server as a library, so that the
//! binary (`main.rs`) stays a one-line call of [`app::command::run`], as
//! upstream's `cmd/kube-apiserver/apiserver.go` is.
//!
//! What is Kubernetes-specific lives here: the built-in resources and their
//! strategies (`registry`), their admission plugins, the RBAC and Node
//! authorizers, the bootstrap controllers and the server chain (`app`,
//! `controlplane`). The generic machinery is in the `apiserver` crate.

pub mod admission;
pub mod api;
pub mod app;
pub mod authenticator;
pub mod authorization;
pub mod controller;
pub mod controller_manager;
pub mod controlplane;
pub mod options;
pub mod pki;
pub mod registry;
