//! Printers of core/v1 (Endpoints, PersistentVolume, PodTemplate, ReplicationController,
//! ResourceQuota, LimitRange), apps ControllerRevision, autoscaling, certificates,
//! coordination, node and scheduling.

use super::Printer;

pub const PRINTERS: &[Printer] = &[];
