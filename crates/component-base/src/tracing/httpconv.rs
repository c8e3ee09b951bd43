//! The HTTP semantic conventions of the `otelhttp` instrumentation
//! upstream wraps its server and its outgoing calls with (v0.69's
//! `internal/semconv`: `server.go`, `client.go`, `util.go`): the method
//! as `http.request.method` (other methods as `_OTHER` with
//! `http.request.method_original`), the host's port only when it is not
//! the scheme's default, and the protocol version out of `HTTP/x`.

use http::{Method, Version};
use opentelemetry::KeyValue;

/// The instrumentation scope of `otelhttp`'s spans.
pub const OTELHTTP_SCOPE: &str = "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp";

/// `http.request.method`, and `http.request.method_original` for a method
/// the conventions do not name.
pub fn method_attributes(method: &Method) -> Vec<KeyValue> {
    match standard_method(method) {
        Some(name) => vec![KeyValue::new("http.request.method", name)],
        None => vec![
            KeyValue::new("http.request.method", "_OTHER"),
            KeyValue::new("http.request.method_original", method.as_str().to_owned()),
        ],
    }
}

/// The method's name when it is one of HTTP's nine.
pub fn standard_method(method: &Method) -> Option<&'static str> {
    Some(match *method {
        Method::CONNECT => "CONNECT",
        Method::DELETE => "DELETE",
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::TRACE => "TRACE",
        _ => return None,
    })
}

/// Go's `SplitHostPort` of the conventions: the host, and the port when
/// there is a valid one (`[::1]:6443` → `::1`, 6443; `example.com` →
/// `example.com`, none).
pub fn split_host_port(hostport: &str) -> (String, Option<u16>) {
    if let Some(rest) = hostport.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return (String::new(), None);
        };
        return match after.strip_prefix(':') {
            Some(port) => match port.parse() {
                Ok(port) => (host.to_owned(), Some(port)),
                Err(_) => (String::new(), None),
            },
            None => (host.to_owned(), None),
        };
    }
    match hostport.rsplit_once(':') {
        None => (hostport.to_owned(), None),
        // Go's net.SplitHostPort refuses a bare IPv6 address.
        Some((host, _)) if host.contains(':') => (String::new(), None),
        Some((host, port)) => match port.parse() {
            Ok(port) => (host.to_owned(), Some(port)),
            Err(_) => (String::new(), None),
        },
    }
}

/// `server.address`, and `server.port` unless it is the scheme's default
/// (upstream's `requiredHTTPPort`).
pub fn server_attributes(hostport: &str, https: bool) -> Vec<KeyValue> {
    let (host, port) = split_host_port(hostport);
    let mut attributes = vec![KeyValue::new("server.address", host)];
    let default = if https { 443 } else { 80 };
    if let Some(port) = port.filter(|p| *p != 0 && *p != default) {
        attributes.push(KeyValue::new("server.port", i64::from(port)));
    }
    attributes
}

/// `network.protocol.version`: the version of Go's `Proto` (`HTTP/1.1`,
/// `HTTP/2.0`).
pub fn protocol_version(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_2 => "2.0",
        Version::HTTP_3 => "3.0",
        _ => "1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(attributes: Vec<KeyValue>) -> Vec<(String, String)> {
        attributes
            .into_iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect()
    }

    #[test]
    fn methods_as_the_conventions_name_them() {
        assert_eq!(
            pairs(method_attributes(&Method::POST)),
            [("http.request.method".into(), "POST".into())]
        );
        let odd = Method::from_bytes(b"PROPFIND").unwrap();
        assert_eq!(
            pairs(method_attributes(&odd)),
            [
                ("http.request.method".into(), "_OTHER".into()),
                ("http.request.method_original".into(), "PROPFIND".into())
            ]
        );
    }

    #[test]
    fn hosts_and_ports_split_as_go() {
        assert_eq!(split_host_port("[::1]:6443"), ("::1".into(), Some(6443)));
        assert_eq!(split_host_port("[::1]"), ("::1".into(), None));
        assert_eq!(split_host_port("example.com"), ("example.com".into(), None));
        assert_eq!(split_host_port("host:x"), (String::new(), None));
        assert_eq!(
            pairs(server_attributes("example.com:443", true)),
            [("server.address".into(), "example.com".into())]
        );
        assert_eq!(
            pairs(server_attributes("127.0.0.1:6443", true)),
            [
                ("server.address".into(), "127.0.0.1".into()),
                ("server.port".into(), "6443".into())
            ]
        );
    }
}
