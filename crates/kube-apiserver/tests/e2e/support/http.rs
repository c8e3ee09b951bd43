//! Raw HTTPS requests with the admin certificate (curl), for what kubectl
//! does not show: status codes, Status bodies, Table answers.

use std::process::Command;

use crate::harness::TestServer;

/// A curl command trusting the server's CA and presenting the admin
/// certificate; the caller adds the rest.
pub fn admin_curl(s: &TestServer) -> Command {
    let pki = s.dir.path().join("pki");
    let mut cmd = Command::new("curl");
    cmd.arg("-sS")
        .arg("--cacert")
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"));
    cmd
}

pub struct Answer {
    pub code: u16,
    pub body: serde_json::Value,
}

/// One request with the admin certificate; the answer's JSON body (null
/// when it is not one JSON document).
pub fn request(
    s: &TestServer,
    method: &str,
    path: &str,
    headers: &[&str],
    body: Option<&str>,
) -> Answer {
    let mut cmd = admin_curl(s);
    cmd.args(["-X", method, "-w", "\n%{http_code}"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    if let Some(b) = body {
        cmd.args(["--data-binary", b]);
    }
    cmd.arg(format!("https://127.0.0.1:{}{path}", s.port));
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    Answer {
        code: code.trim().parse().unwrap_or(0),
        body: serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    }
}

/// Status code, headers (lower-cased) and body of curl's `-i` output.
pub fn split_response(stdout: &[u8]) -> (u16, String, String) {
    let text = String::from_utf8_lossy(stdout).replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_ascii_lowercase(), body.to_owned())
}
