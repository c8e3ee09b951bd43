//! RBAC's Kubernetes-specific pieces (upstream's
//! `plugin/pkg/auth/authorizer/rbac`): the bootstrap policy.

pub mod bootstrappolicy;
