//! Upstream's `apiextensions-apiserver/pkg/registry`: the strategies of
//! CustomResourceDefinitions and of custom resources.

pub mod customresource;
pub mod customresourcedefinition;
