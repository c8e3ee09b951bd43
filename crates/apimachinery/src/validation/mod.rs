//! Object metadata, selector, option and IP validation with upstream's
//! messages (`k8s.io/apimachinery/pkg/api/validation`,
//! `pkg/apis/meta/v1/validation`, `pkg/api/validate/content`), on top of
//! the string checks of [`crate::util::validation`] (re-exported here).
//! [`object_meta`] turns those checks into field errors for an object's
//! metadata.

pub mod formats;
pub mod ip;
pub mod object_meta;
pub mod options;
pub mod selectors;

pub use crate::util::validation::*;
