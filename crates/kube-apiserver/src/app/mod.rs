//! The kube-apiserver application (upstream's `cmd/kube-apiserver/app`):
//! storage, the server chain, and running it.

pub mod admission;
mod aggregator;
mod apiextensions;
pub mod audit;
pub mod authentication;
pub mod authorization;
pub mod bootstrap;
pub mod command;
pub mod config;
pub mod encryption;
mod flowcontrol;
mod instance;
mod kubernetes_service;
mod namespaces;
pub mod rbac_bootstrap;
mod root_ca_publisher;
pub mod run;
pub mod runtime_config;
mod security_summary;
pub mod server;
mod service_accounts;
mod token_controller;
