//! Service ClusterIP allocation's controllers (upstream's
//! `pkg/registry/core/service/ipallocator`, whose allocator is
//! `registry::services`'s `ServiceAllocator`).

pub mod controller;
