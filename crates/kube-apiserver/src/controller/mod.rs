//! The controllers upstream runs in kube-controller-manager
//! (`k8s.io/kubernetes/pkg/controller`) that this server runs in-process,
//! each on `client-go`'s shared informers and work queues: started by a
//! post-start hook with the server's stop token, and stopped with it.

pub mod clusterroleaggregation;
pub mod garbagecollector;
pub mod resourcequota;
