//! Pieces every Kubernetes component shares (upstream's
//! `k8s.io/component-base`): so far its logging, [`logs`].

pub mod logs;
