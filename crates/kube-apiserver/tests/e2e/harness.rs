//! Starts the built `kube-apiserver` binary the way a user does (a temp
//! data dir, a free loopback port, no other flags) and drives it with the
//! real kubectl and raw HTTPS requests. [`Backend`] starts it on the
//! embedded store or on a real etcd started for it, and
//! [`on_both_backends!`] turns a scenario into one test per backend.
//! [`binary`] is the one cargo built with the tests, or the one
//! `KUBE_APISERVER_BIN` names (`scripts/ops-check` runs tests against the
//! release build that way).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct TestServer {
    child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub kubeconfig: PathBuf,
    extra_args: Vec<String>,
    /// What a (re)start waits for: `/readyz`, or `/livez` for a server
    /// that is meant to come up unready.
    wait_path: &'static str,
}

/// The server binary the tests start: `KUBE_APISERVER_BIN` when set, else
/// the debug build cargo made for the tests.
pub fn binary() -> PathBuf {
    std::env::var_os("KUBE_APISERVER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kube-apiserver")))
}

/// Starts on fresh ports when the picked one was taken meanwhile.
const PORT_ATTEMPTS: usize = 5;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl TestServer {
    /// The embedded default: no storage flags.
    pub fn start() -> TestServer {
        Self::start_with(&[])
    }

    pub fn start_with(args: &[&str]) -> TestServer {
        Self::start_prepared(|_| {}, args)
    }

    /// Like [`TestServer::start_with`], calling `prepare` with the data dir
    /// before the server starts (to mount something inside it).
    pub fn start_prepared(prepare: impl FnOnce(&Path), args: &[&str]) -> TestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        prepare(dir.path());
        let port = free_port();
        let extra_args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let child = spawn(dir.path(), port, &extra_args);
        let kubeconfig = dir.path().join("admin.kubeconfig");
        let mut server = TestServer {
            child,
            dir,
            port,
            kubeconfig,
            extra_args,
            wait_path: "/readyz",
        };
        // A port picked as free can be taken by another test before the
        // server binds it: start again on another port.
        for _ in 1..PORT_ATTEMPTS {
            match server.try_wait_ready() {
                Ok(()) => return server,
                Err(log) if log.to_lowercase().contains("address already in use") => {
                    server.port = free_port();
                    server.child = spawn(server.dir.path(), server.port, &server.extra_args);
                }
                Err(log) => panic!("server on port {} stopped: {log}", server.port),
            }
        }
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        if let Err(log) = self.try_wait_ready() {
            panic!("server on port {} stopped: {log}", self.port);
        }
    }

    /// Waits until the server answers `wait_path`; the exit status and log
    /// when it stops first.
    fn try_wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{status}: {}", self.log()));
            }
            if self.kubeconfig.exists() {
                let out = self.kubectl(&["get", "--raw", self.wait_path]);
                if out.status.success() {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "server on port {} did not answer {}",
            self.port, self.wait_path
        );
    }

    /// Writes a client certificate for `cn` in `org` signed by the server's CA;
    /// returns the certificate and key files.
    pub fn client_cert(&self, cn: &str, org: &str) -> (PathBuf, PathBuf) {
        let pki = self.dir.path().join("pki");
        let ca_pem = std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt");
        let ca_key_pem = std::fs::read_to_string(pki.join("ca.key")).expect("ca.key");
        let ca_key = rcgen::KeyPair::from_pem(&ca_key_pem).expect("ca key");
        let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, org);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &issuer).expect("cert");
        let name = cn.replace(':', "-");
        let paths = (
            self.dir.path().join(format!("{name}.crt")),
            self.dir.path().join(format!("{name}.key")),
        );
        std::fs::write(&paths.0, cert.pem()).expect("write cert");
        std::fs::write(&paths.1, key.serialize_pem()).expect("write key");
        paths
    }

    /// Runs kubectl as the holder of a client certificate (see
    /// [`Self::client_cert`]).
    pub fn kubectl_as_cert(&self, (cert, key): &(PathBuf, PathBuf), args: &[&str]) -> Output {
        let ca = self.dir.path().join("pki").join("ca.crt");
        let flags = [
            "--kubeconfig=/dev/null".to_owned(),
            format!("--server=https://127.0.0.1:{}", self.port),
            format!("--certificate-authority={}", ca.display()),
            format!("--client-certificate={}", cert.display()),
            format!("--client-key={}", key.display()),
        ];
        let mut all: Vec<&str> = flags.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        self.kubectl(&all)
    }

    /// Runs kubectl (the default one on PATH) against this server.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with("kubectl", args, None)
    }

    /// Runs kubectl with standard input.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        self.kubectl_with("kubectl", args, Some(input))
    }

    pub fn kubectl_with(&self, binary: &str, args: &[&str], input: Option<&str>) -> Output {
        let mut cmd = Command::new(binary);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = cmd.spawn().expect("kubectl runs");
        if let Some(text) = input {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(text.as_bytes()).expect("write stdin");
            }
        }
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs kubectl and returns its stdout, failing the test on error.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl expecting failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} unexpectedly succeeded"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn apply_yaml(&self, yaml: &str) -> String {
        let out = self.kubectl_stdin(&["apply", "-f", "-"], yaml);
        assert!(
            out.status.success(),
            "apply failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Like [`TestServer::restart`], with other flags.
    pub fn restart_with(&mut self, args: &[&str]) {
        self.extra_args = args.iter().map(|s| s.to_string()).collect();
        self.restart();
    }

    /// Stops the server (SIGKILL) and starts it again on the same data dir.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(self.dir.path(), self.port, &self.extra_args);
        self.wait_ready();
    }

    /// Like [`TestServer::restart`], waiting only for `/livez`: for a server
    /// that cannot become ready (a health check is meant to fail). Later
    /// restarts wait the same way.
    pub fn restart_until_live(&mut self) {
        self.wait_path = "/livez";
        self.restart();
    }

    /// The server's process id (to read its `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server has written to its log (stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().expect("server exits")
    }
}

/// Starts the binary expecting it to stop; returns its stderr.
pub fn startup_error(args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let out = std::process::Command::new(binary())
        .arg(format!("--data-dir={}", dir.path().display()))
        .arg(format!("--secure-port={port}"))
        .arg("--bind-address=127.0.0.1")
        .args(args)
        .output()
        .expect("binary runs");
    assert!(!out.status.success(), "the server started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn spawn(dir: &Path, port: u16, extra: &[String]) -> Child {
    let log = std::fs::File::create(dir.join("server.log")).expect("log file");
    Command::new(binary())
        .arg(format!("--data-dir={}", dir.display()))
        .arg(format!("--secure-port={port}"))
        .arg("--bind-address=127.0.0.1")
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("server starts")
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The storage a test server runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded store in the data dir (no storage flags).
    Embedded,
    /// A real etcd started for the server (`--etcd-servers`).
    Etcd,
}

impl Backend {
    pub fn start(self) -> Served {
        self.start_with(&[])
    }

    /// Starts a server on this backend with `args` besides the storage flags.
    pub fn start_with(self, args: &[&str]) -> Served {
        match self {
            Backend::Embedded => Served {
                server: TestServer::start_with(args),
                etcd: None,
            },
            Backend::Etcd => {
                let etcd = EtcdProcess::start();
                let servers = format!("--etcd-servers={}", etcd.server.client_url());
                let mut all = vec![servers.as_str()];
                all.extend_from_slice(args);
                Served {
                    server: TestServer::start_with(&all),
                    etcd: Some(etcd),
                }
            }
        }
    }
}

/// A real etcd with a client of its own, for reading raw stored values.
struct EtcdProcess {
    kv: storage_etcd::EtcdKv,
    // Dropped after the client: etcd stops when this goes.
    server: storage_etcd::testing::EtcdServer,
    runtime: tokio::runtime::Runtime,
}

impl EtcdProcess {
    fn start() -> EtcdProcess {
        let runtime = runtime();
        let server = runtime
            .block_on(storage_etcd::testing::EtcdServer::start())
            .expect("etcd starts");
        let kv = runtime.block_on(server.kv()).expect("etcd client");
        EtcdProcess {
            kv,
            server,
            runtime,
        }
    }
}

/// A runtime for the async clients tests use (etcd's).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Reads `key` from a key-value store.
async fn range(kv: &dyn storage::Kv, key: &str) -> Option<Vec<u8>> {
    let request = storage::RangeRequest {
        key: key.into(),
        ..Default::default()
    };
    let response = kv.range(request).await.expect("range");
    response.kvs.into_iter().next().map(|kv| kv.value.to_vec())
}

/// A server on one backend; on etcd it owns (and stops on drop) the etcd it
/// was started on. Derefs to the [`TestServer`].
pub struct Served {
    pub server: TestServer,
    // After the server: etcd outlives the server that uses it.
    etcd: Option<EtcdProcess>,
}

impl Served {
    /// The raw value stored under `key` (e.g. `/registry/secrets/ns/name`).
    /// etcd is read while the server runs; the embedded store admits one
    /// process at a time, so there the server is stopped for the read and
    /// started again (waiting as its last start did).
    pub fn stored(&mut self, key: &str) -> Option<Vec<u8>> {
        match &self.etcd {
            Some(etcd) => etcd.runtime.block_on(range(&etcd.kv, key)),
            None => {
                let _ = self.server.terminate();
                let dir = self.server.dir.path().join("storage");
                let value = runtime().block_on(async {
                    let kv = storage_embedded::EmbeddedKv::open(&dir)
                        .expect("open the stopped server's store");
                    let value = range(&kv, key).await;
                    // The database stays locked until the writer lets go.
                    kv.close().await;
                    value
                });
                self.server.restart();
                value
            }
        }
    }
}

impl std::ops::Deref for Served {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        &self.server
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut TestServer {
        &mut self.server
    }
}

/// Starts a real etcd on free loopback ports and the server on it.
pub fn start_on_etcd() -> Served {
    Backend::Etcd.start()
}

/// Runs each scenario as two tests, one on the embedded store and one on a
/// real etcd: `fn name(s: &TestServer)` gets a server without other flags;
/// those listed after `backend:` are `fn name(backend: Backend)` and start
/// their own servers (for flags, restarts or raw stored values).
macro_rules! on_both_backends {
    (backend: $($started:ident),* $(,)?) => {
        $crate::harness::on_both_backends!(; backend: $($started),*);
    };
    ($($name:ident),* $(,)? $(; backend: $($started:ident),* $(,)?)?) => {
        mod embedded {
            $(#[test]
            fn $name() {
                super::$name(&$crate::harness::TestServer::start());
            })*
            $($(#[test]
            fn $started() {
                super::$started($crate::harness::Backend::Embedded);
            })*)?
        }
        mod etcd {
            $(#[test]
            fn $name() {
                super::$name(&$crate::harness::start_on_etcd());
            })*
            $($(#[test]
            fn $started() {
                super::$started($crate::harness::Backend::Etcd);
            })*)?
        }
    };
}
pub(crate) use on_both_backends;
