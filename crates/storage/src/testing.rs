//! The backend-independent semantics suite. Being written.
