//! Printers of rbac.authorization.k8s.io and storage.k8s.io.

use super::Printer;

pub const PRINTERS: &[Printer] = &[];
