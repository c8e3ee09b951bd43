//! kube-apiserver's own authorization modes (upstream's
//! `plugin/pkg/auth/authorizer` and the authorization webhook): the Node
//! authorizer with its relationship checks, RBAC's bootstrap policy (with
//! the nodes' static rules), the SubjectAccessReview webhook, and the
//! `--authorization-config` file.

pub mod config;
pub mod node;
pub mod node_graph;
pub mod rbac;
pub mod webhook;
