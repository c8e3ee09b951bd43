//! The aggregator, the front server of the chain (upstream's
//! `k8s.io/kube-aggregator`): it serves the APIService resource, keeps an
//! APIService registered for every group version the servers behind it
//! serve, and keeps the APIServices' `Available` condition.

pub mod controllers;
