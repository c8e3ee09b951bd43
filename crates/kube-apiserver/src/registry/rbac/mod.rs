//! RBAC's registry pieces (upstream's `pkg/registry/rbac`): the escalation
//! checks of role and binding writes.

pub mod validation;
