//! The secure serving loop (upstream's `SecureServingInfo.Serve`): TLS on a
//! TCP listener, HTTP/1.1 and HTTP/2 on one port with upstream's HTTP/2
//! sizing, per-connection client-certificate identity in every request's
//! extensions, and graceful shutdown with a deadline.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use http::header::CONNECTION;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use rustls::server::Acceptor;
use socket2::{SockRef, TcpKeepalive};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use tokio_rustls::server::TlsStream;
use tokio_rustls::LazyConfigAcceptor;
use tower::{Service, ServiceExt};

use super::idle::{Activity, TrackedBody};
use super::reload::ServerTls;
use super::tls::ServerConfigs;
use crate::authentication::client_cert::{ClientCert, PeerCertificates};

/// Upstream's stream limit when `--http2-max-streams-per-connection` is 0:
/// the initial limit Go's HTTP/2 clients assume, so a misbehaving client
/// cannot open many more streams than a well-behaved one would.
pub const DEFAULT_HTTP2_MAX_STREAMS: u32 = 100;
/// Upstream's sizing unit: 99% of serialized resources are smaller, so most
/// POSTs fit in one frame and one stream window.
const RESOURCE_BODY_99_PERCENTILE: u32 = 256 * 1024;
/// Largest flow-control window HTTP/2 allows (2^31 - 1).
const MAX_HTTP2_WINDOW: u32 = (1 << 31) - 1;
/// Upstream's `MaxHeaderBytes`.
const MAX_HEADER_BYTES: u32 = 1 << 20;
/// Upstream's `ReadHeaderTimeout`; Go also bounds the TLS handshake by it.
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
/// Upstream's `IdleTimeout`: connections without requests are closed after it.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Upstream's TCP keep-alive period for accepted connections.
const TCP_KEEPALIVE_PERIOD: Duration = Duration::from_secs(180);
/// Longest pause after failed `accept` calls (as Go's server backs off).
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// HTTP-level serving settings.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// `--http2-max-streams-per-connection`; 0 means
    /// [`DEFAULT_HTTP2_MAX_STREAMS`].
    pub http2_max_streams_per_connection: u32,
    /// Serve HTTP/2 (false with `--disable-http2-serving`; the TLS config's
    /// ALPN should then offer only HTTP/1.1).
    pub http2: bool,
    /// How long in-flight requests may continue once shutdown begins
    /// (upstream's `ShutdownTimeout`, the request timeout: 60s).
    pub shutdown_timeout: Duration,
    /// Connections with no request in flight for this long are closed
    /// gracefully ([`DEFAULT_IDLE_TIMEOUT`]).
    pub idle_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            http2_max_streams_per_connection: 0,
            http2: true,
            shutdown_timeout: Duration::from_secs(60),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

impl ServeOptions {
    fn max_streams(&self) -> u32 {
        match self.http2_max_streams_per_connection {
            0 => DEFAULT_HTTP2_MAX_STREAMS,
            n => n,
        }
    }
}

/// Errors from [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{remaining} connections were still open when the shutdown timeout expired")]
    ShutdownTimedOut { remaining: usize },
}

/// Serves `service` over TLS on `listener` until `shutdown` resolves, then
/// stops accepting, lets open connections finish their in-flight requests
/// (HTTP/1.1 closes after the current response, HTTP/2 sends GOAWAY) for up
/// to `options.shutdown_timeout`, and aborts whatever is left.
///
/// Every request carries `ConnectInfo<SocketAddr>` (the peer address) and,
/// when the client presented a certificate (unverified: the x509
/// authenticator checks it) whose subject has a common name, a
/// [`ClientCert`] in its extensions.
pub async fn serve<S, B>(
    listener: TcpListener,
    tls: impl Into<ServerTls>,
    service: S,
    shutdown: impl Future<Output = ()> + Send,
    options: &ServeOptions,
) -> Result<(), ServeError>
where
    S: Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let context = Arc::new(ConnectionContext {
        tls: tls.into(),
        builder: connection_builder(options),
        idle_timeout: options.idle_timeout,
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut backoff = Duration::ZERO;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(joined) = connections.join_next(), if !connections.is_empty() => {
                if let Err(err) = joined {
                    tracing::error!(error = %err, "connection task failed");
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    backoff = Duration::ZERO;
                    connections.spawn(serve_connection(
                        stream,
                        peer,
                        context.clone(),
                        service.clone(),
                        stop_rx.clone(),
                    ));
                }
                Err(err) => {
                    // Out of file descriptors and the like: wait, don't spin.
                    backoff = (backoff * 2).clamp(Duration::from_millis(5), MAX_ACCEPT_BACKOFF);
                    tracing::warn!(error = %err, retry_in = ?backoff, "accept failed");
                    tokio::time::sleep(backoff).await;
                }
            },
        }
    }
    drop(listener);
    // Receivers only fail once the sender is gone, which cannot happen here.
    let _ = stop_tx.send(true);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(options.shutdown_timeout, drain)
        .await
        .is_err()
    {
        let remaining = connections.len();
        connections.abort_all();
        return Err(ServeError::ShutdownTimedOut { remaining });
    }
    Ok(())
}

/// HTTP/1.1 + HTTP/2 connection builder with upstream's limits.
fn connection_builder(options: &ServeOptions) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(READ_HEADER_TIMEOUT)
        // Go allows MaxHeaderBytes plus 4 KiB of slack.
        .max_buf_size(MAX_HEADER_BYTES as usize + 4096);
    let streams = options.max_streams();
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        // Per-stream upload buffer and frame size from the 1 MiB Go default
        // down to 256 KiB; the connection window holds one such buffer per stream.
        .initial_stream_window_size(RESOURCE_BODY_99_PERCENTILE)
        .max_frame_size(RESOURCE_BODY_99_PERCENTILE)
        .initial_connection_window_size(
            RESOURCE_BODY_99_PERCENTILE
                .saturating_mul(streams)
                .min(MAX_HTTP2_WINDOW),
        )
        .max_header_list_size(MAX_HEADER_BYTES);
    if options.http2 {
        builder
    } else {
        builder.http1_only()
    }
}

/// What every connection task shares.
struct ConnectionContext {
    tls: ServerTls,
    builder: Builder<TokioExecutor>,
    idle_timeout: Duration,
}

/// Handshakes TLS, then serves HTTP on one connection until it ends, stays
/// idle too long, or shutdown asks it to wind down.
async fn serve_connection<S, B>(
    stream: TcpStream,
    peer: SocketAddr,
    context: Arc<ConnectionContext>,
    service: S,
    mut stop: watch::Receiver<bool>,
) where
    S: Service<Request<Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Unpin + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    tune_socket(&stream, peer);
    let Some(tls) = handshake(stream, peer, context.tls.current(), &mut stop).await else {
        return;
    };
    let peer_chain = tls
        .get_ref()
        .1
        .peer_certificates()
        .filter(|chain| !chain.is_empty())
        .map(|chain| PeerCertificates::new(chain.to_vec()));
    let client_cert = peer_chain
        .as_ref()
        .and_then(|chain| chain.chain().first())
        .and_then(|leaf| ClientCert::from_der(leaf));

    let activity = Activity::new();
    let tracker = activity.clone();
    let close_asked = Arc::new(Notify::new());
    let asks_close = close_asked.clone();
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let guard = tracker.begin();
        let extensions = request.extensions_mut();
        extensions.insert(ConnectInfo(peer));
        if let Some(cert) = &client_cert {
            extensions.insert(cert.clone());
        }
        if let Some(chain) = &peer_chain {
            extensions.insert(chain.clone());
        }
        let response = service.clone().oneshot(request);
        let asks_close = asks_close.clone();
        async move {
            let response = response.await?;
            if response
                .headers()
                .get(CONNECTION)
                .is_some_and(|v| v == "close")
            {
                asks_close.notify_one();
            }
            Ok::<_, Infallible>(response.map(|body| TrackedBody::new(body, guard)))
        }
    });
    let connection = context
        .builder
        .serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stopping(&mut stop) => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
        () = activity.idle_for(context.idle_timeout) => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
        // A handler's `Connection: close`: HTTP/1.1 closes after the
        // response anyway; HTTP/2 (which drops the header) is sent GOAWAY,
        // as Go's server does.
        () = close_asked.notified() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(err) = result {
        tracing::debug!(%peer, error = %err, "connection ended with an error");
    }
}

/// TCP_NODELAY and upstream's 3-minute keep-alive, so dead peers (a laptop
/// closed mid-watch) are eventually noticed.
fn tune_socket(stream: &TcpStream, peer: SocketAddr) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%peer, error = %err, "setting TCP_NODELAY failed");
    }
    let keepalive = TcpKeepalive::new()
        .with_time(TCP_KEEPALIVE_PERIOD)
        .with_interval(TCP_KEEPALIVE_PERIOD);
    if let Err(err) = SockRef::from(stream).set_tcp_keepalive(&keepalive) {
        tracing::debug!(%peer, error = %err, "setting TCP keep-alive failed");
    }
}

/// The TLS handshake, bounded like Go bounds it (by the header timeout) and
/// abandoned when shutdown begins. The client's hello picks the cipher
/// suites' order, as in Go ([`ServerConfigs::for_client`]).
async fn handshake(
    stream: TcpStream,
    peer: SocketAddr,
    configs: Arc<ServerConfigs>,
    stop: &mut watch::Receiver<bool>,
) -> Option<TlsStream<TcpStream>> {
    let accept = async move {
        let start = LazyConfigAcceptor::new(Acceptor::default(), stream).await?;
        let config = configs.for_client(start.client_hello().cipher_suites());
        start.into_stream(config).await
    };
    let handshake = tokio::time::timeout(READ_HEADER_TIMEOUT, accept);
    tokio::select! {
        result = handshake => match result {
            Ok(Ok(tls)) => Some(tls),
            Ok(Err(err)) => {
                tracing::debug!(%peer, error = %err, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                None
            }
        },
        () = stopping(stop) => None,
    }
}

/// Resolves once shutdown has begun (or the server is gone).
async fn stopping(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`; drop it right here.
    let _ = stop.wait_for(|stopping| *stopping).await;
}
