//! The aggregator, the front server of the chain (upstream's
//! `k8s.io/kube-aggregator`): it serves the APIService resource, proxies
//! the requests of APIServices backed by a Service to that Service
//! ([`apiserver`]), keeps an APIService registered for every group version
//! the servers behind it serve and the APIServices' `Available` condition
//! ([`controllers`]).

pub mod apiserver;
pub mod controllers;
pub mod resolvers;
