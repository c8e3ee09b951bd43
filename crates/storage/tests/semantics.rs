//! The semantics suite against the in-memory reference KV.

use std::sync::Arc;

use storage::testing::MemoryKv;
use storage::Kv;

async fn make_kv() -> Arc<dyn Kv> {
    Arc::new(MemoryKv::new())
}

storage::semantics_suite!(make_kv);
