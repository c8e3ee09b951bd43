//! `kubectl get` columns (Table output) of the printers in
//! `registry/printers/rbac_storage`: to be written.
