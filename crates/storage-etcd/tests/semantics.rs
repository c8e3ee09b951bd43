//! The backend-independent storage semantics suite against a real etcd,
//! one fresh etcd per case.

use std::sync::Arc;

use storage::Kv;
use storage_etcd::testing::EtcdServer;

async fn make_kv() -> Arc<dyn Kv> {
    let server = EtcdServer::start().await.expect("start etcd");
    Arc::new(server.into_kv().await.expect("connect to etcd"))
}

storage::semantics_suite!(make_kv);
