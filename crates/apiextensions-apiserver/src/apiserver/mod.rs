//! Upstream's `apiextensions-apiserver/pkg/apiserver`: serving custom
//! resources and converting them between versions.

pub mod conversion;
pub mod customresource_handler;
