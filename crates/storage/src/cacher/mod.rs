//! The watch cache (upstream's cacher). Being written.
