//! Secure serving (upstream's `SecureServingInfo`): the rustls server
//! configuration built from the `--tls-*` and `--client-ca-file` flags, and
//! the HTTPS serving loop with HTTP/1.1 + HTTP/2, client-certificate
//! identity per request, and graceful shutdown.

mod ciphers;
mod idle;
mod reload;
mod server;
mod sni;
mod tls;

pub use ciphers::{
    aes_gcm_preferred, cipher_suites, TlsVersion, UnknownCipherSuite, UnknownTlsVersion,
};
pub use reload::{ServerTls, DEFAULT_RELOAD_INTERVAL};
pub use server::{
    serve, ServeError, ServeOptions, DEFAULT_HTTP2_MAX_STREAMS, DEFAULT_IDLE_TIMEOUT,
};
pub use sni::SniCertKey;
pub use tls::{ServerConfigs, TlsConfigError, TlsOptions};
