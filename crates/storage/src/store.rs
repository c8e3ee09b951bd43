//! The Storage implementation over any Kv (upstream's etcd3 store). Being written.
