//! TLS and HTTP serving. Being written.
