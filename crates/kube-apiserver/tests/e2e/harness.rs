//! Starts the built `kube-apiserver` binary the way a user does (a temp
//! data dir, a free loopback port, no other flags) and drives it with the
//! real kubectl and raw HTTPS requests.

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
}

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
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let extra_args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let child = spawn(dir.path(), port, &extra_args);
        let kubeconfig = dir.path().join("admin.kubeconfig");
        let server = TestServer {
            child,
            dir,
            port,
            kubeconfig,
            extra_args,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.kubeconfig.exists() {
                let out = self.kubectl(&["get", "--raw", "/readyz"]);
                if out.status.success() {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("server did not become ready on port {}", self.port);
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

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().expect("server exits")
    }
}

fn spawn(dir: &Path, port: u16, extra: &[String]) -> Child {
    let log = std::fs::File::create(dir.join("server.log")).expect("log file");
    Command::new(env!("CARGO_BIN_EXE_kube-apiserver"))
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

/// A server on a real etcd started for it; both stop when this is dropped.
pub struct OnEtcd {
    pub server: TestServer,
    _etcd: storage_etcd::testing::EtcdServer,
    _runtime: tokio::runtime::Runtime,
}

/// Starts a real etcd on free loopback ports and the server on it.
pub fn start_on_etcd() -> OnEtcd {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let etcd = runtime
        .block_on(storage_etcd::testing::EtcdServer::start())
        .expect("etcd starts");
    let servers = format!("--etcd-servers={}", etcd.client_url());
    OnEtcd {
        server: TestServer::start_with(&[&servers]),
        _etcd: etcd,
        _runtime: runtime,
    }
}

/// Runs each scenario `fn name(s: &TestServer)` as two tests: on the
/// embedded store and on a real etcd.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(#[test]
            fn $name() {
                super::$name(&$crate::harness::TestServer::start());
            })*
        }
        mod etcd {
            $(#[test]
            fn $name() {
                super::$name(&$crate::harness::start_on_etcd().server);
            })*
        }
    };
}
pub(crate) use on_both_backends;
