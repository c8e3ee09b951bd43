//! Printers of flowcontrol, admissionregistration, events.k8s.io, resource.k8s.io,
//! apiregistration (APIService) and apiextensions (CustomResourceDefinition).

use super::Printer;

pub const PRINTERS: &[Printer] = &[];
