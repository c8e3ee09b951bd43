//! Data safety when the disk fails under the embedded store (issue 16):
//! the store's directory is a small tmpfs mounted inside the data dir.
//! ConfigMaps fill it until a create fails with a 500 naming the cause;
//! reads and watches go on, nothing acknowledged is lost and nothing that
//! failed shows up; once space is freed writes succeed again without a
//! restart, and a restart finds every acknowledged object. A loop-mounted
//! ext4 image turned read-only under the running server (an ext4 error
//! under `errors=remount-ro`, as the kernel does on an I/O error) fails
//! creates with a 500 naming the cause while reads go on; once the image
//! is mounted again and the server restarted, all that was acknowledged is
//! there and writes succeed. Mounting needs root: without it the tests say
//! so on stderr and skip.
//!
//! On etcd the disk is etcd's space quota (`--quota-backend-bytes`): a
//! create over it fails as upstream's does, a 500 with no reason and
//! etcd's message `etcdserver: mvcc: database space exceeded`, and reads go
//! on.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use storage_etcd::testing::{EtcdServer, EtcdServerOptions};

use crate::harness::TestServer;

/// Size of one ConfigMap's value.
const VALUE_BYTES: usize = 300 * 1024;

/// The server on a data dir whose `storage` is a tmpfs of `size`, with a
/// filler file of `filler_mib` MiB on it; unmounted after the server stops.
struct OnTmpfs {
    server: Option<TestServer>,
    storage: PathBuf,
}

impl OnTmpfs {
    fn start(size: &str, filler_mib: usize) -> Option<OnTmpfs> {
        let mut mounted = Ok(());
        let server = TestServer::start_prepared(
            |dir| mounted = mount_tmpfs(&dir.join("storage"), size, filler_mib),
            &[],
        );
        if let Err(why) = mounted {
            eprintln!("SKIPPED: cannot mount a tmpfs for the data dir (needs root): {why}");
            return None;
        }
        let storage = server.dir.path().join("storage");
        Some(OnTmpfs {
            server: Some(server),
            storage,
        })
    }

    fn server(&mut self) -> &mut TestServer {
        self.server.as_mut().expect("the server runs")
    }
}

impl Drop for OnTmpfs {
    fn drop(&mut self) {
        drop(self.server.take());
        let _ = Command::new("umount").arg(&self.storage).status();
    }
}

fn mount_tmpfs(dir: &Path, size: &str, filler_mib: usize) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    std::fs::write(dir.join("filler"), vec![7u8; filler_mib << 20]).map_err(|e| e.to_string())
}

fn value(i: usize) -> String {
    format!("{i}-{}", "v".repeat(VALUE_BYTES))
}

fn configmap(name: &str, i: usize) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  v: \"{}\"\n",
        value(i)
    )
}

/// Creates ConfigMaps until one fails; returns the acknowledged indexes and
/// kubectl's error.
fn fill(server: &TestServer) -> (Vec<usize>, String) {
    let mut acked = Vec::new();
    for i in 0..100 {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &configmap(&format!("fill{i}"), i));
        if !out.status.success() {
            return (acked, String::from_utf8_lossy(&out.stderr).into_owned());
        }
        acked.push(i);
    }
    panic!("the disk never filled up");
}

fn stored_value(server: &TestServer, name: &str) -> Option<String> {
    let out = server.kubectl(&["get", "configmap", name, "-o", "jsonpath={.data.v}"]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check_acked(server: &TestServer, acked: &[usize], when: &str) {
    for i in acked {
        let stored = stored_value(server, &format!("fill{i}"));
        assert!(
            stored == Some(value(*i)),
            "{when}: fill{i} is lost or changed"
        );
    }
}

/// A `kubectl get --watch` of the ConfigMaps in `default`.
fn watch(server: &TestServer) -> Child {
    Command::new("kubectl")
        .args(["get", "configmaps", "--watch", "-o", "name"])
        .env("KUBECONFIG", &server.kubeconfig)
        .env("HOME", server.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl watch runs")
}

/// The `fill*` and `after` names the watch printed, in order.
fn watched(mut child: Child) -> Vec<String> {
    let _ = child.kill();
    let mut text = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut text).expect("watch output");
    }
    let _ = child.wait();
    text.lines()
        .filter_map(|l| l.strip_prefix("configmap/"))
        .filter(|n| n.starts_with("fill") || n.starts_with("after"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn disk_full_fails_writes_with_500_and_recovers_when_space_returns() {
    let Some(mut fs) = OnTmpfs::start("12m", 3) else {
        return;
    };
    let server = fs.server();
    let watcher = watch(server);
    std::thread::sleep(std::time::Duration::from_millis(500));

    let (acked, error) = fill(server);
    assert!(acked.len() >= 2, "some creates succeeded first: {error}");
    assert!(
        error.contains("(InternalError)") && error.contains("No space left on device"),
        "a 500 naming the cause: {error}"
    );
    let failed = format!("fill{}", acked.len());
    assert_eq!(
        stored_value(server, &failed),
        None,
        "{failed} failed yet exists"
    );
    check_acked(server, &acked, "on a full disk");
    server.ok(&["get", "configmaps"]);

    std::fs::remove_file(fs.storage.join("filler")).expect("free space");
    let server = fs.server();
    let out = server.kubectl_stdin(&["create", "-f", "-"], &configmap("after", 0));
    assert!(
        out.status.success(),
        "a create once space returned: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_acked(server, &acked, "after space returned");

    let mut expected: Vec<String> = acked.iter().map(|i| format!("fill{i}")).collect();
    expected.push("after".to_owned());
    assert_eq!(
        watched(watcher),
        expected,
        "the watch saw exactly the acknowledged writes"
    );

    server.restart();
    check_acked(server, &acked, "after a restart");
    assert_eq!(stored_value(server, "after"), Some(value(0)));
    assert_eq!(stored_value(server, &failed), None);
}

#[test]
fn etcd_space_quota_fails_writes_with_etcds_message() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let options = EtcdServerOptions {
        quota_backend_bytes: Some(6 << 20),
        ..EtcdServerOptions::default()
    };
    let etcd = runtime
        .block_on(EtcdServer::start_with(options))
        .expect("etcd starts");
    let servers = format!("--etcd-servers={}", etcd.client_url());
    let server = TestServer::start_with(&[&servers]);

    let (acked, error) = fill(&server);
    assert!(acked.len() >= 2, "some creates succeeded first: {error}");
    assert!(
        error.contains("Error from server: ")
            && error.contains("etcdserver: mvcc: database space exceeded")
            && !error.contains("Internal error occurred"),
        "upstream's 500 with etcd's message and no reason: {error}"
    );
    check_acked(&server, &acked, "over etcd's quota");
    server.ok(&["get", "configmaps"]);
    drop(server);
    drop(etcd);
}

/// The server on a data dir whose `storage` is a small ext4 image on a loop
/// device mounted `errors=remount-ro`, as a data disk usually is; unmounted
/// after the server stops.
struct OnExt4 {
    server: Option<TestServer>,
    image: PathBuf,
    storage: PathBuf,
}

impl OnExt4 {
    fn start() -> Option<OnExt4> {
        let image =
            std::env::temp_dir().join(format!("kube-apiserver-ro-{}.img", std::process::id()));
        let mut mounted = Ok(());
        let server = TestServer::start_prepared(
            |dir| mounted = mount_ext4(&image, &dir.join("storage")),
            &[],
        );
        if let Err(why) = mounted {
            let _ = std::fs::remove_file(&image);
            eprintln!(
                "SKIPPED: cannot loop-mount an ext4 image for the data dir (needs root): {why}"
            );
            return None;
        }
        let storage = server.dir.path().join("storage");
        Some(OnExt4 {
            server: Some(server),
            image,
            storage,
        })
    }

    fn server(&mut self) -> &mut TestServer {
        self.server.as_mut().expect("the server runs")
    }

    /// What the kernel does on an I/O error under `errors=remount-ro`:
    /// the file system turns read-only under the open database file.
    fn fail(&self) {
        let device = run("findmnt", &["-n", "-o", "SOURCE", path_str(&self.storage)])
            .expect("the image is mounted");
        let name = device.trim().trim_start_matches("/dev/");
        std::fs::write(format!("/sys/fs/ext4/{name}/trigger_fs_error"), "test")
            .expect("trigger an ext4 error");
    }

    /// What an operator does to recover: a file system the kernel turned
    /// read-only stays so until unmounted, which needs the server's files
    /// released; so the server is stopped, the image mounted again and the
    /// server started.
    fn repair(&mut self) {
        let server = self.server();
        server.terminate();
        run("umount", &[path_str(&self.storage)]).expect("unmount the image");
        mount_ext4_image(&self.image, &self.storage).expect("mount the image again");
        self.server().restart();
    }
}

impl Drop for OnExt4 {
    fn drop(&mut self) {
        drop(self.server.take());
        let _ = run("umount", &[path_str(&self.storage)]);
        let _ = std::fs::remove_file(&self.image);
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Runs a command; its stdout, or its stderr as the error.
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn mount_ext4(image: &Path, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let file = std::fs::File::create(image).map_err(|e| e.to_string())?;
    file.set_len(32 << 20).map_err(|e| e.to_string())?;
    run("mkfs.ext4", &["-q", "-F", path_str(image)])?;
    mount_ext4_image(image, dir)
}

fn mount_ext4_image(image: &Path, dir: &Path) -> Result<(), String> {
    run(
        "mount",
        &[
            "-o",
            "loop,errors=remount-ro",
            path_str(image),
            path_str(dir),
        ],
    )
    .map(drop)
}

/// Retries a kubectl create of `name` for up to `secs` seconds.
fn create_within(server: &TestServer, name: &str, secs: u64) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let i = usize::from(name == "after");
        let out = server.kubectl_stdin(&["create", "-f", "-"], &configmap(name, i));
        if out.status.success() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn read_only_data_dir_fails_writes_with_500_and_recovers() {
    let Some(mut fs) = OnExt4::start() else {
        return;
    };
    create_within(fs.server(), "before", 0).expect("a create on a healthy disk");
    fs.fail();

    let server = fs.server();
    let out = server.kubectl_stdin(&["create", "-f", "-"], &configmap("during", 0));
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && error.contains("(InternalError)")
            && error.contains("Read-only file system"),
        "a 500 naming the cause: {error}"
    );
    assert_eq!(
        stored_value(server, "before"),
        Some(value(0)),
        "reads go on"
    );
    server.ok(&["get", "configmaps"]);

    fs.repair();
    let server = fs.server();
    assert_eq!(stored_value(server, "before"), Some(value(0)));
    assert_eq!(
        stored_value(server, "during"),
        None,
        "a failed create exists"
    );
    create_within(server, "after", 0).expect("a create once the disk is back");
    assert_eq!(stored_value(server, "after"), Some(value(1)));
}
