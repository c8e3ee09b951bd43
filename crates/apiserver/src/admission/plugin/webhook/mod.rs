//! MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! (admissionregistration.k8s.io/v1): requests matching a webhook's rules
//! and selectors are sent to it as an AdmissionReview; mutating webhooks
//! run one after another and may answer with a JSON patch (those with
//! `reinvocationPolicy: IfNeeded` are called again in admission's second
//! pass when a later change went past them), validating ones run
//! concurrently and may only refuse.
//!
//! Upstream's `k8s.io/apiserver/pkg/admission/plugin/webhook`: the
//! dispatchers of [`mutating`] and [`validating`] over the shared
//! [`generic`] webhook source and call, the AdmissionReview of
//! [`request`] and its answer in [`response`], rule and selector
//! [`predicates`], [`matchconditions`], the objects at the webhook's
//! version ([`versioned`]), the HTTPS [`client`] and the audit
//! [`annotations`].

mod annotations;
mod client;
mod generic;
mod matchconditions;
pub mod mutating;
mod predicates;
pub(crate) mod request;
mod response;
pub mod validating;
pub mod versioned;
