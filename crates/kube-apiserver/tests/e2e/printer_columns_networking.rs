//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/networking`: to be written.
