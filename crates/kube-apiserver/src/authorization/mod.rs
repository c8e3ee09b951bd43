//! kube-apiserver's own authorization modes (upstream's
//! `plugin/pkg/auth/authorizer`): the Node authorizer with its
//! relationship checks, and RBAC with its bootstrap policy (and the nodes'
//! static rules). The webhook authorizer and the `--authorization-config`
//! file are in `apiserver` (`plugin::pkg::authorizer::webhook`,
//! `apis::apiserver::authorization`).

pub mod node;
pub mod node_graph;
pub mod rbac;
