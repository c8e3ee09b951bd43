//! Profiling as upstream's `--profiling` and `--debug-socket-path`: a CPU
//! profile taken under load is a gzip'd pprof `Profile` with samples and
//! function names; block and mutex are Go's empty contention profiles
//! (in Go's text form with `?debug=1`) and heap an unknown profile; `/debug/pprof/*` is authorized as a
//! non-resource URL
//! (anonymous refused, `system:masters` and RBAC grants allowed); with
//! `--profiling=false` it is 404; the debug socket serves the same
//! handlers with no authentication.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pprof::protos::{Message, Profile};

use crate::harness::TestServer;
use crate::support::http::admin_curl;

/// What curl got: status code and body.
struct Got {
    code: u16,
    body: Vec<u8>,
}

impl Got {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Runs `cmd` (curl with its credentials or socket) on `url`, the body
/// kept in a file of `dir`.
fn fetch(mut cmd: Command, dir: &Path, url: &str) -> Got {
    let out_file = tempfile::NamedTempFile::new_in(dir).expect("temp file");
    let out = cmd
        .arg("-o")
        .arg(out_file.path())
        .args(["-w", "%{http_code}"])
        .arg(url)
        .output()
        .expect("curl runs");
    Got {
        code: String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0),
        body: std::fs::read(out_file.path()).expect("curl output"),
    }
}

/// Who asks.
enum Who<'a> {
    Admin,
    Anonymous,
    Holder(&'a (PathBuf, PathBuf)),
}

/// GETs `path` over the secure port.
fn get(s: &TestServer, path: &str, who: Who) -> Got {
    let cmd = match who {
        Who::Admin => admin_curl(s),
        Who::Anonymous | Who::Holder(_) => {
            let mut cmd = Command::new("curl");
            cmd.arg("-sS")
                .arg("--cacert")
                .arg(s.dir.path().join("pki").join("ca.crt"));
            if let Who::Holder((cert, key)) = who {
                cmd.arg("--cert").arg(cert).arg("--key").arg(key);
            }
            cmd
        }
    };
    let url = format!("https://127.0.0.1:{}{path}", s.port);
    fetch(cmd, s.dir.path(), &url)
}

/// Gunzips and decodes a profile answered 200; also returns the names of
/// its sample types.
fn decode(got: &Got) -> (Profile, Vec<String>) {
    assert_eq!(got.code, 200, "{}", got.text());
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(got.body.as_slice())
        .read_to_end(&mut raw)
        .expect("the profile is gzip'd");
    let profile = Profile::decode(raw.as_slice()).expect("a pprof Profile");
    let types = profile
        .sample_type
        .iter()
        .map(|t| profile.string_table[t.ty as usize].clone())
        .collect();
    (profile, types)
}

/// Decodes a CPU profile; asserts it has samples and names the functions
/// they were taken in.
fn decode_cpu_profile(got: &Got) -> Profile {
    let (profile, sample_types) = decode(got);
    assert!(!profile.sample.is_empty(), "no samples");
    let names: Vec<&str> = profile
        .function
        .iter()
        .map(|f| profile.string_table[f.name as usize].as_str())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("tokio")),
        "no tokio frame among {} functions: {:?}",
        names.len(),
        &names[..names.len().min(20)]
    );
    assert!(sample_types.iter().any(|t| t == "cpu"), "{sample_types:?}");
    profile
}

/// What `take` gets while the server is kept busy with lists.
fn under_load(s: &TestServer, take: impl FnOnce() -> Got) -> Got {
    let stop = Arc::new(AtomicBool::new(false));
    let url = format!(
        "https://127.0.0.1:{}/api/v1/namespaces/kube-system/configmaps",
        s.port
    );
    let loader = std::thread::scope(|scope| {
        let loader = scope.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                let mut cmd = admin_curl(s);
                cmd.args(["-o", "/dev/null"]);
                for _ in 0..20 {
                    cmd.arg(&url);
                }
                let _ = cmd.output();
            }
        });
        let got = take();
        stop.store(true, Ordering::SeqCst);
        loader.join().expect("load thread");
        got
    });
    loader
}

#[test]
fn profiles_behind_authorization_and_on_the_debug_socket() {
    let socket_dir = tempfile::tempdir().expect("socket dir");
    let socket = socket_dir.path().join("debug.sock");
    let socket_flag = format!("--debug-socket-path={}", socket.display());
    let s = TestServer::start_with(&[&socket_flag]);

    decode_cpu_profile(&under_load(&s, || {
        get(&s, "/debug/pprof/profile?seconds=2", Who::Admin)
    }));

    let index = get(&s, "/debug/pprof/", Who::Admin);
    assert_eq!(index.code, 200, "{}", index.text());
    assert!(
        index.text().contains("href=\"profile\""),
        "{}",
        index.text()
    );
    for name in ["block", "mutex"] {
        let (profile, types) = decode(&get(&s, &format!("/debug/pprof/{name}"), Who::Admin));
        assert_eq!(types, ["contentions", "delay"], "{name}");
        assert!(profile.sample.is_empty(), "{name} has samples");
    }
    // `?debug=1`: Go's text form.
    let block = get(&s, "/debug/pprof/block?debug=1", Who::Admin).text();
    let mut lines = block.lines();
    assert_eq!(lines.next(), Some("--- contention:"), "{block}");
    let cycles = lines
        .next()
        .and_then(|l| l.strip_prefix("cycles/second="))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(cycles.is_some_and(|n| n > 0), "{block}");
    let mutex = get(&s, "/debug/pprof/mutex?debug=1", Who::Admin).text();
    assert!(mutex.starts_with("--- mutex:\ncycles/second="), "{mutex}");
    assert!(mutex.ends_with("\nsampling period=0\n"), "{mutex}");
    let heap = get(&s, "/debug/pprof/heap", Who::Admin);
    assert_eq!(
        (heap.code, heap.text().as_str()),
        (404, "Unknown profile\n")
    );
    // Unlisted, as upstream.
    let root = get(&s, "/", Who::Admin).text();
    assert!(!root.contains("/debug/pprof"), "{root}");

    // Anonymous and users without a grant are refused; RBAC can grant it.
    let nobody = s.client_cert("nobody", "team");
    for who in [Who::Anonymous, Who::Holder(&nobody)] {
        let got = get(&s, "/debug/pprof/", who);
        assert_eq!(got.code, 403, "{}", got.text());
        assert!(
            got.text().contains("cannot get path \\\"/debug/pprof/\\\""),
            "{}",
            got.text()
        );
    }
    s.ok(&[
        "create",
        "clusterrole",
        "profiler",
        "--verb=get",
        "--non-resource-url=/debug/pprof/*",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "profiler",
        "--clusterrole=profiler",
        "--user=profiler",
    ]);
    let profiler = s.client_cert("profiler", "team");
    let got = get(&s, "/debug/pprof/", Who::Holder(&profiler));
    assert_eq!(got.code, 200, "{}", got.text());

    // The debug socket: no credentials at all, and the command line too.
    let socket_arg = socket.display().to_string();
    let on_socket = |path: &str| {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--unix-socket", &socket_arg]);
        fetch(cmd, socket_dir.path(), &format!("http://localhost{path}"))
    };
    let cmdline = on_socket("/debug/pprof/cmdline");
    assert_eq!(cmdline.code, 200);
    assert!(
        cmdline.text().split('\0').any(|arg| arg == socket_flag),
        "{}",
        cmdline.text()
    );
    decode_cpu_profile(&under_load(&s, || {
        on_socket("/debug/pprof/profile?seconds=1")
    }));
    assert_eq!(on_socket("/api/v1/namespaces").code, 404);
}

#[test]
fn profiling_false_is_404_and_anonymous_off_is_401() {
    let s = TestServer::start_with(&["--profiling=false", "--anonymous-auth=false"]);
    for path in [
        "/debug/pprof/",
        "/debug/pprof/profile?seconds=1",
        "/debug/pprof/symbol",
    ] {
        let got = get(&s, path, Who::Admin);
        assert_eq!(got.code, 404, "{path}: {}", got.text());
    }
    let got = get(&s, "/debug/pprof/", Who::Anonymous);
    assert_eq!(got.code, 401, "{}", got.text());
}
