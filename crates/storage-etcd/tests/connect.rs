//! Reaching etcd: health checks, dead and late members, the startup
//! preflight, and TLS with client certificates.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use storage::{Kv, RangeRequest, StorageError, TxnOp, TxnResponse};
use storage_etcd::testing::{free_port, EtcdServer, EtcdServerOptions};
use storage_etcd::{wait_for_etcd, ConnectError, EtcdConfig, EtcdKv};

fn get(key: &str) -> RangeRequest {
    RangeRequest {
        key: key.to_string(),
        ..RangeRequest::default()
    }
}

async fn create(kv: &EtcdKv, key: &str) -> i64 {
    match kv
        .txn(key, 0, TxnOp::Put(Bytes::from_static(b"v")))
        .await
        .unwrap()
    {
        TxnResponse::Succeeded { revision, .. } => revision,
        other => panic!("create of {key} failed: {other:?}"),
    }
}

/// A URL nobody listens on.
fn dead_url() -> String {
    format!("http://127.0.0.1:{}", free_port().unwrap())
}

fn quick(mut config: EtcdConfig) -> EtcdConfig {
    config.dial_timeout = Duration::from_millis(300);
    config.request_timeout = Duration::from_secs(2);
    config.health_timeout = Duration::from_millis(500);
    config
}

#[tokio::test]
async fn health_follows_etcd() {
    let mut etcd = EtcdServer::start().await.unwrap();
    let kv = EtcdKv::connect(quick(etcd.config())).await.unwrap();
    kv.health().await.unwrap();
    create(&kv, "/registry/a").await;

    let port = etcd
        .client_url()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    etcd.stop();
    match kv.health().await {
        Err(StorageError::Unreachable(_)) => {}
        other => panic!("expected an unreachable etcd, got {other:?}"),
    }
    match kv.range(get("/registry/a")).await {
        Err(StorageError::Unreachable(_)) => {}
        other => panic!("expected an unreachable etcd, got {other:?}"),
    }

    // The same client recovers once etcd is back at its address.
    let _back = EtcdServer::start_with(EtcdServerOptions {
        client_port: Some(port),
        ..EtcdServerOptions::default()
    })
    .await
    .unwrap();
    kv.health().await.unwrap();
    create(&kv, "/registry/b").await;
}

#[tokio::test]
async fn silent_server_times_out() {
    // Accepts connections (in the kernel's backlog) but never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let mut config = EtcdConfig::new([url]);
    config.request_timeout = Duration::from_millis(500);
    config.health_timeout = Duration::from_millis(300);
    let kv = EtcdKv::connect(config).await.unwrap();
    match kv.range(get("/registry/a")).await {
        Err(StorageError::Timeout(_)) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    match kv.health().await {
        Err(StorageError::Timeout(_)) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn never_started_etcd_is_unreachable() {
    let kv = EtcdKv::connect(quick(EtcdConfig::new([dead_url()])))
        .await
        .expect("connecting is lazy");
    match kv.range(get("/registry/a")).await {
        Err(StorageError::Unreachable(_)) => {}
        other => panic!("expected an unreachable etcd, got {other:?}"),
    }
    assert!(matches!(
        kv.health().await,
        Err(StorageError::Unreachable(_))
    ));
}

#[tokio::test]
async fn one_dead_server_among_several_is_tolerated() {
    let etcd = EtcdServer::start().await.unwrap();
    let servers = [dead_url(), etcd.client_url().to_string(), dead_url()];
    let kv = EtcdKv::connect(quick(EtcdConfig::new(servers)))
        .await
        .unwrap();
    for i in 0..20 {
        create(&kv, &format!("/registry/k{i}")).await;
        kv.health().await.unwrap();
    }
    let all = kv
        .range(RangeRequest {
            range_end: Some(storage::prefix_end("/registry/")),
            count_only: true,
            ..get("/registry/")
        })
        .await
        .unwrap();
    assert_eq!(all.count, 20);
}

#[tokio::test]
async fn wait_for_etcd_returns_once_a_late_etcd_is_up() {
    // Hold the port until etcd starts so no other test takes it meanwhile;
    // until then connections hang unanswered, like a booting etcd host.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let config = EtcdConfig::new([format!("http://127.0.0.1:{port}")]);
    let started = Instant::now();
    let waiter = tokio::spawn(wait_for_etcd(config, Duration::from_secs(60)));

    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !waiter.is_finished(),
        "wait_for_etcd returned before etcd was up"
    );
    drop(holder);
    let _etcd = EtcdServer::start_with(EtcdServerOptions {
        client_port: Some(port),
        ..EtcdServerOptions::default()
    })
    .await
    .expect("the late etcd starts");

    let kv = waiter
        .await
        .unwrap()
        .expect("wait_for_etcd returns once etcd is up");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    kv.health().await.unwrap();
    create(&kv, "/registry/a").await;
}

#[tokio::test]
async fn wait_for_etcd_gives_up_at_the_deadline() {
    let started = Instant::now();
    let err = wait_for_etcd(EtcdConfig::new([dead_url()]), Duration::from_millis(2500))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(matches!(err, ConnectError::Unavailable { .. }), "{err}");
    assert!(
        waited >= Duration::from_millis(1500),
        "gave up after {waited:?}"
    );
    assert!(waited < Duration::from_secs(6), "gave up after {waited:?}");
}

#[tokio::test]
async fn configuration_errors_fail_at_once() {
    let err = EtcdKv::connect(EtcdConfig::new(Vec::<String>::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectError::NoServers));

    let mut config = EtcdConfig::new(["https://127.0.0.1:2379"]);
    config.ca_file = Some("/nonexistent/ca.crt".into());
    let err = wait_for_etcd(config, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectError::ReadFile { .. }), "{err}");
}

#[tokio::test]
async fn tls_with_client_certificates() {
    let etcd = EtcdServer::start_tls().await.unwrap();
    assert!(etcd.client_url().starts_with("https://"));
    let kv = etcd.kv().await.unwrap();
    kv.health().await.unwrap();
    create(&kv, "/registry/a").await;
    assert_eq!(kv.range(get("/registry/a")).await.unwrap().kvs.len(), 1);

    // Without the client certificate etcd refuses the connection.
    let mut anonymous = quick(etcd.config());
    anonymous.cert_file = None;
    anonymous.key_file = None;
    let kv = EtcdKv::connect(anonymous).await.unwrap();
    assert!(kv.health().await.is_err());

    // Without the CA the server's certificate is not trusted.
    let mut untrusting = quick(etcd.config());
    untrusting.ca_file = None;
    let kv = EtcdKv::connect(untrusting).await.unwrap();
    assert!(kv.health().await.is_err());

    // A certificate without its key is a configuration error.
    let mut half = etcd.config();
    half.key_file = None;
    assert!(matches!(
        EtcdKv::connect(half).await.unwrap_err(),
        ConnectError::IncompleteClientCert
    ));
}

#[tokio::test]
async fn requests_fail_over_when_the_pinned_server_dies() {
    // Two independent etcds stand in for two members: which one answered
    // shows in the data.
    let mut first = EtcdServer::start().await.unwrap();
    let second = EtcdServer::start().await.unwrap();
    let servers = [
        first.client_url().to_string(),
        second.client_url().to_string(),
    ];
    let kv = EtcdKv::connect(quick(EtcdConfig::new(servers)))
        .await
        .unwrap();
    create(&kv, "/registry/on-first").await;
    assert_eq!(
        kv.range(get("/registry/on-first")).await.unwrap().kvs.len(),
        1
    );

    first.stop();
    // The read's connection breaks; it is repeated on the second server.
    assert!(kv
        .range(get("/registry/on-first"))
        .await
        .unwrap()
        .kvs
        .is_empty());
    kv.health().await.unwrap();
    create(&kv, "/registry/on-second").await;
    let direct = second.kv().await.unwrap();
    assert_eq!(
        direct
            .range(get("/registry/on-second"))
            .await
            .unwrap()
            .kvs
            .len(),
        1
    );
}

#[tokio::test]
async fn watch_ends_with_unreachable_when_etcd_dies() {
    let mut etcd = EtcdServer::start().await.unwrap();
    let kv = etcd.kv().await.unwrap();
    let mut stream = kv.watch("/registry/", true, 0).await.unwrap();
    etcd.stop();
    let item = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the watch notices");
    match item {
        Some(Err(StorageError::Unreachable(_))) => {}
        other => panic!("expected Unreachable, got {other:?}"),
    }
    let end = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
    assert!(matches!(end, Ok(None)), "the stream ends after the error");
}
