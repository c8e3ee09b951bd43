//! kubectl's output as the tests read it.

use std::process::Output;

use crate::harness::TestServer;

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
