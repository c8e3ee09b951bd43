//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/core`: to be written.
