//! Bearer-token authenticators that ask another service (upstream's
//! `k8s.io/apiserver/plugin/pkg/authenticator/token/{oidc,webhook}`): JWTs
//! of an OpenID Connect issuer, and the TokenReview webhook.

pub mod oidc;
pub mod webhook;
