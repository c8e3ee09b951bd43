//! The REST endpoints: one generic handler for every resource, content
//! negotiation, watch streams, patches, response encoding and compression.

pub mod apply;
pub mod body;
pub mod caching_object;
pub mod collections;
pub mod compression;
pub mod computed_read;
pub mod connect;
pub mod handlers;
pub mod negotiation;
pub mod openapi;
pub mod patch;
pub mod proxy;
pub mod query;
pub mod response;
pub mod scale;
pub mod selection;
pub mod strategic_merge;
pub mod trace_util;
pub mod virtual_create;
pub mod warning;
pub mod watch;
pub mod writers;
