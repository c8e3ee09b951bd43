//! kube-apiserver's own token authenticators (upstream's
//! `pkg/kubeapiserver/authenticator`, `pkg/serviceaccount` and
//! `plugin/pkg/auth/authenticator/token/bootstrap`): service-account JWTs
//! (bound and legacy), their keys and issuer discovery documents,
//! bootstrap tokens, TokenRequest, and the reloading of the JWT
//! authenticators of `--authentication-config`. The generic ones (OIDC,
//! the token webhook, the configuration file) are in `apiserver`.

pub mod bootstrap;
pub mod jwt_reload;
pub mod serviceaccount;
pub mod token_request;
