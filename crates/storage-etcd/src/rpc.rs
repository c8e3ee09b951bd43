//! The etcd RPCs this client sends, each with the gRPC method upstream's
//! etcd client names its span after (`component_base::tracing::otelgrpc`,
//! upstream's `otelgrpc` stats handler on the etcd connection), and
//! [`traced`]: one call in that span.

use std::future::Future;

use component_base::tracing::otelgrpc::GrpcClientSpan;

/// One kind of request: how errors and logs name it, and its gRPC method.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rpc {
    pub(crate) what: &'static str,
    method: &'static str,
}

impl Rpc {
    const fn new(what: &'static str, method: &'static str) -> Rpc {
        Rpc { what, method }
    }
}

pub(crate) const RANGE: Rpc = Rpc::new("range", "etcdserverpb.KV/Range");
pub(crate) const HEALTH: Rpc = Rpc::new("health", "etcdserverpb.KV/Range");
pub(crate) const TXN: Rpc = Rpc::new("txn", "etcdserverpb.KV/Txn");
pub(crate) const COMPACTION_TXN: Rpc = Rpc::new("compaction txn", "etcdserverpb.KV/Txn");
pub(crate) const PUT: Rpc = Rpc::new("put", "etcdserverpb.KV/Put");
pub(crate) const COMPACTION: Rpc = Rpc::new("compaction", "etcdserverpb.KV/Compact");
pub(crate) const LEASE_GRANT: Rpc = Rpc::new("lease grant", "etcdserverpb.Lease/LeaseGrant");
/// Opening a watch stream. Its span would last as long as the stream
/// (otelgrpc ends a stream's span when the stream ends); what is traced
/// here is the opening only.
pub(crate) const WATCH: Rpc = Rpc::new("watch", "etcdserverpb.Watch/Watch");

/// Runs `call`, one `rpc` to the member at `url`, in its client span.
pub(crate) async fn traced<T>(
    rpc: Rpc,
    url: &str,
    call: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, etcd_client::Error> {
    let span = GrpcClientSpan::start(rpc.method, host_port(url));
    let result = call.await;
    match &result {
        Ok(_) => span.ok(),
        Err(etcd_client::Error::GRpcStatus(status)) => {
            span.failed(status.code() as i32, status.message().to_owned())
        }
        // gRPC reports a server it cannot reach as `Unavailable`.
        Err(e @ etcd_client::Error::TransportError(_)) => {
            span.failed(tonic::Code::Unavailable as i32, e.to_string())
        }
        Err(e) => span.failed(tonic::Code::Unknown as i32, e.to_string()),
    }
    result
}

/// The `host:port` of a member's URL (`https://10.0.0.5:2379`).
fn host_port(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_named_by_host_and_port() {
        assert_eq!(host_port("https://10.0.0.5:2379"), "10.0.0.5:2379");
        assert_eq!(host_port("http://[::1]:2379/"), "[::1]:2379");
        assert_eq!(host_port("etcd:2379"), "etcd:2379");
    }
}
