//! Command-line options. Being written.
