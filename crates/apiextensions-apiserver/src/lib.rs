//! The apiextensions server, first of the chain's three servers (upstream's
//! `k8s.io/apiextensions-apiserver`): CustomResourceDefinitions and the
//! custom resources they define. By upstream package:
//!
//! - [`server`]: `pkg/apiserver/apiserver.go`, the server's config and
//!   `New(delegate)`;
//! - [`apiserver`]: `pkg/apiserver`, what an established CRD serves
//!   (`customresource_handler`) and conversion between its versions
//!   (`conversion`, with the conversion webhook);
//! - [`controller`]: `pkg/controller`, naming, API approval,
//!   non-structural schema, establishing, finalizer and OpenAPI;
//! - [`registry`]: `pkg/registry`, the CRD strategy
//!   (`customresourcedefinition`) and custom resources' strategy, table
//!   and storage codec (`customresource`);
//! - [`apis`]: `pkg/apis/apiextensions/helpers.go`, CRD conditions.
//!
//! The pure schema machinery (CRD validation, structural schemas, OpenAPI
//! v3 validation, pruning, defaulting) is the `apiextensions` crate.

pub mod apis;
pub mod apiserver;
pub mod controller;
pub mod registry;
pub mod server;

pub use server::{Config, CustomResourceDefinitions, CustomResources, ExtraConfig};
