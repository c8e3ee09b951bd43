//! The admission policy plugins (upstream's
//! `k8s.io/apiserver/pkg/admission/plugin/policy`): ValidatingAdmissionPolicy
//! ([`validating`]) and MutatingAdmissionPolicy ([`mutating`]), sharing the
//! policy and binding source, parameters and `request` variable of
//! [`generic`] and the rule matching of [`matching`].

mod generic;
mod matching;
pub mod mutating;
pub mod validating;
