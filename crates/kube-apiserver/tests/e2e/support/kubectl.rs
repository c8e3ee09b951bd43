//! kubectl with a token, and its output as the tests read it.

use std::process::Output;

use crate::harness::TestServer;

/// What a command wrote to stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kubectl with a bearer token (or, without one, anonymous) and no client
/// certificate, trusting the server's CA.
pub fn with_token(server: &TestServer, token: Option<&str>, args: &[&str]) -> Output {
    let ca = server.dir.path().join("pki").join("ca.crt");
    let flags = [
        "--kubeconfig=/dev/null".to_owned(),
        format!("--server=https://127.0.0.1:{}", server.port),
        format!("--certificate-authority={}", ca.display()),
    ];
    let token_flag = token.map(|t| format!("--token={t}"));
    let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
    all.extend(token_flag.as_deref());
    all.extend_from_slice(args);
    server.kubectl(&all)
}

/// What a command wrote to stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The stderr of a kubectl command that must succeed (where kubectl prints
/// the server's warnings).
pub fn warnings_of(s: &TestServer, args: &[&str]) -> String {
    let out = s.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        stderr(&out)
    );
    stderr(&out)
}
