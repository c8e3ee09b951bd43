//! Upstream's `apiextensions-apiserver/pkg/apis/apiextensions`: helpers
//! over CustomResourceDefinitions.

pub mod helpers;
