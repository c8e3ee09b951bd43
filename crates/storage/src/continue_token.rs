//! Opaque continue tokens for paginated lists. Being written.
