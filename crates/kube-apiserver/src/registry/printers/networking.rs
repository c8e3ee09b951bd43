//! Printers of discovery.k8s.io, networking.k8s.io and policy.

use super::Printer;

pub const PRINTERS: &[Printer] = &[];
