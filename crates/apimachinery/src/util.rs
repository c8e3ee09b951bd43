//! Utilities below the rest of the crate (upstream's
//! `k8s.io/apimachinery/pkg/util`).

pub mod gofmt;
pub mod validation;
