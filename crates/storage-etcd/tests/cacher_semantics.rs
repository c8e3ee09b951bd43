//! The storage semantics suite through the watch cache, on etcd: each
//! case's resource prefix gets a cacher over a store on a fresh etcd, as each
//! resource does in a server run with `--etcd-servers`.

use std::sync::Arc;

use storage::Kv;
use storage_etcd::testing::EtcdServer;

async fn make_kv() -> Arc<dyn Kv> {
    let server = EtcdServer::start().await.expect("start etcd");
    Arc::new(server.into_kv().await.expect("connect to etcd"))
}

storage::semantics_suite!(@cacher make_kv);
