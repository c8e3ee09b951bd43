//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/extensions`: to be written.
