//! The control plane's own controllers, run in every API server (upstream's
//! `pkg/controlplane/controller`).

pub mod apiserverleasegc;
pub mod clusterauthenticationtrust;
pub mod crdregistration;
pub mod defaultservicecidr;
pub mod kubernetesservice;
