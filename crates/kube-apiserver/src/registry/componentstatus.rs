//! `componentstatuses` (core/v1 ComponentStatus, deprecated since 1.19 and
//! still served; upstream's `pkg/registry/core/componentstatus`): every
//! read probes the scheduler and the controller manager on their local
//! secure ports and, when the server runs on etcd, the storage, and
//! answers with one Healthy condition per component.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::endpoints::computed_read::ComputedResource;
use apiserver::registry::rest::table::TableColumn;
use apiserver::registry::ResourceInfo;
use futures::future::join_all;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use storage::Kv;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::printers::{string, text, NAME_COLUMN};
use super::ResourceStrategy;

/// Upstream's limit on one probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Upstream's HTTP prober reads at most this much of a body.
const MAX_BODY: usize = 10 * 1024;

const WARNING: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// A probe's outcome, as upstream's `probe.Result` with its message and
/// error.
struct Outcome {
    status: &'static str,
    message: String,
    error: String,
}

impl Outcome {
    fn success(message: String) -> Self {
        Outcome {
            status: "True",
            message,
            error: String::new(),
        }
    }

    fn failure(message: String, error: String) -> Self {
        Outcome {
            status: "False",
            message,
            error,
        }
    }
}

/// A component whose health is asked for.
#[derive(Clone)]
enum Component {
    /// A control-plane process with `/healthz` on a local HTTPS port.
    Local { port: u16 },
    /// The storage: the `etcd-<n>` entries.
    Storage(Arc<dyn Kv>),
}

/// The components by name, sorted (upstream answers in map order).
type Components = Arc<Vec<(String, Component)>>;

/// The computed resource; `etcd` is the storage when it is etcd.
pub fn resource(etcd: Option<Arc<dyn Kv>>) -> ComputedResource {
    let mut components = vec![
        (
            "controller-manager".to_owned(),
            Component::Local { port: 10257 },
        ),
        ("scheduler".to_owned(), Component::Local { port: 10259 }),
    ];
    if let Some(kv) = etcd {
        components.push(("etcd-0".to_owned(), Component::Storage(kv)));
    }
    let components: Components = Arc::new(components);
    let listed = components.clone();
    ComputedResource {
        info: info(),
        table: Arc::new(ResourceStrategy::default().printed(columns, row)),
        get: Arc::new(move |name| {
            let components = components.clone();
            Box::pin(async move { get(&components, &name).await })
        }),
        list: Arc::new(move || {
            let components = listed.clone();
            Box::pin(async move { join_all(components.iter().map(|(n, c)| status(n, c))).await })
        }),
        warning: Some(WARNING),
    }
}

fn info() -> ResourceInfo {
    ResourceInfo {
        group: String::new(),
        version: "v1".into(),
        resource: "componentstatuses".into(),
        singular: "componentstatus".into(),
        kind: "ComponentStatus".into(),
        list_kind: "ComponentStatusList".into(),
        namespaced: false,
        short_names: vec!["cs".into()],
        categories: Vec::new(),
        verbs: vec!["get".into(), "list".into()],
        has_status: false,
        has_scale: false,
        storage_root: "componentstatuses".into(),
    }
}

async fn get(components: &[(String, Component)], name: &str) -> Result<Value, ApiError> {
    match components.iter().find(|(n, _)| n == name) {
        Some((name, component)) => Ok(status(name, component).await),
        // Upstream answers with a plain error, which becomes a 500.
        None => Err(ApiError::internal_error(format!(
            "Component not found: {name}"
        ))),
    }
}

async fn status(name: &str, component: &Component) -> Value {
    let outcome = match component {
        Component::Local { port } => probe_local(*port).await,
        Component::Storage(kv) => match tokio::time::timeout(PROBE_TIMEOUT, kv.health()).await {
            Ok(Ok(())) => Outcome::success("ok".to_owned()),
            Ok(Err(e)) => Outcome::failure(String::new(), e.to_string()),
            Err(_) => Outcome::failure(String::new(), "context deadline exceeded".to_owned()),
        },
    };
    let mut condition = json!({"type": "Healthy", "status": outcome.status});
    if !outcome.message.is_empty() {
        condition["message"] = json!(outcome.message);
    }
    if !outcome.error.is_empty() {
        condition["error"] = json!(outcome.error);
    }
    json!({"metadata": {"name": name}, "conditions": [condition]})
}

/// Upstream's HTTP prober: a transport failure or a status outside
/// 200–399 is a failure whose message says why; a success's message is
/// the body.
async fn probe_local(port: u16) -> Outcome {
    let url = format!("https://127.0.0.1:{port}/healthz");
    match tokio::time::timeout(PROBE_TIMEOUT, fetch(port)).await {
        Ok(Ok((code, body))) if (200..400).contains(&code) => Outcome::success(body),
        Ok(Ok((code, _))) => Outcome::failure(
            format!("HTTP probe failed with statuscode: {code}"),
            String::new(),
        ),
        Ok(Err(e)) => Outcome::failure(format!("Get \"{url}\": {e}"), String::new()),
        Err(_) => Outcome::failure(
            format!("Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"),
            String::new(),
        ),
    }
}

/// GET `/healthz` on a local port over TLS without verifying the
/// certificate (upstream's `InsecureSkipVerify` for these probes).
async fn fetch(port: u16) -> Result<(u16, String), String> {
    let address = format!("127.0.0.1:{port}");
    let tcp = TcpStream::connect(&address)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("dial tcp {address}: connect: connection refused")
            }
            _ => format!("dial tcp {address}: {e}"),
        })?;
    let tls = super::kubelet_connect::client::insecure_tls_config().map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let stream = TlsConnector::from(Arc::new(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let request = http::Request::get("/healthz")
        .header(http::header::HOST, &address)
        .body(Empty::<bytes::Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let code = response.status().as_u16();
    let mut body = Vec::new();
    let mut frames = response.into_body();
    while body.len() < MAX_BODY {
        match frames.frame().await {
            Some(Ok(frame)) => body.extend_from_slice(frame.data_ref().map_or(&[][..], |d| d)),
            Some(Err(e)) => return Err(e.to_string()),
            None => break,
        }
    }
    body.truncate(MAX_BODY);
    Ok((code, String::from_utf8_lossy(&body).into_owned()))
}

fn columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Status", "Status of the component conditions"),
        string("Message", "Message of the component conditions"),
        string("Error", "Error of the component conditions"),
    ]
}

fn row(obj: &Value) -> Vec<Value> {
    let healthy = obj
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Healthy"));
    let (status, message, error) = match healthy {
        Some(c) if c["status"] == "True" => ("Healthy", text(c, "/message"), text(c, "/error")),
        Some(c) => ("Unhealthy", text(c, "/message"), text(c, "/error")),
        None => ("Unknown", "", ""),
    };
    vec![
        super::printers::name_cell(obj),
        json!(status),
        json!(message),
        json!(error),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_print_the_healthy_condition() {
        let healthy = json!({"metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            row(&healthy),
            vec![json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
        );
        let unknown = json!({"metadata": {"name": "x"},
            "conditions": [{"type": "Healthy", "status": "Unknown", "error": "boom"}]});
        assert_eq!(
            row(&unknown)[1..],
            [json!("Unhealthy"), json!(""), json!("boom")]
        );
        let none = json!({"metadata": {"name": "y"}});
        assert_eq!(row(&none)[1], json!("Unknown"));
    }

    #[tokio::test]
    async fn a_closed_port_is_unhealthy_with_the_dial_error() {
        // Bind then drop to find a port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(1);
        let status = status("scheduler", &Component::Local { port }).await;
        let condition = &status["conditions"][0];
        assert_eq!(condition["status"], "False");
        assert_eq!(
            condition["message"],
            format!(
                "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            )
        );
        assert!(condition.get("error").is_none());
    }

    #[tokio::test]
    async fn unknown_names_are_internal_errors() {
        let err = get(&[], "nope").await.err();
        let status = err.map(|e| e.to_status_json());
        assert_eq!(status.as_ref().map(|s| s["code"].clone()), Some(json!(500)));
        assert_eq!(
            status.map(|s| s["message"].clone()),
            Some(json!("Internal error occurred: Component not found: nope"))
        );
    }
}
