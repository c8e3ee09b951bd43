//! Authenticator plugins (upstream's
//! `k8s.io/apiserver/plugin/pkg/authenticator`).

pub mod token;
