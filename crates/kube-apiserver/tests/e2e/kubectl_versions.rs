//! Every kubectl installed beside the default one (`kubectl.1.27` …
//! `kubectl.1.33`): their create and auth commands, several of which send
//! protobuf bodies, work unchanged.

use std::path::PathBuf;

use crate::harness::TestServer;

/// The kubectl binaries to try: the default one and the versioned ones in
/// the directory the `kubectl` on PATH resolves to.
fn kubectls() -> Vec<PathBuf> {
    let Some(default) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    }) else {
        return Vec::new();
    };
    let real = std::fs::canonicalize(&default).unwrap_or(default.clone());
    let mut found = vec![default];
    if let Some(dir) = real.parent() {
        for minor in 27..=33 {
            let versioned = dir.join(format!("kubectl.1.{minor}"));
            if versioned.is_file() {
                found.push(versioned);
            }
        }
    }
    found
}

#[test]
fn create_and_auth_commands_work_with_every_installed_kubectl() {
    let s = TestServer::start();
    for (i, kubectl) in kubectls().iter().enumerate() {
        let bin = kubectl.to_string_lossy().into_owned();
        let ns = format!("team-{i}");
        let run = |args: &[&str]| {
            let out = s.kubectl_with(&bin, args, None);
            assert!(
                out.status.success(),
                "{bin} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        assert!(run(&["create", "namespace", &ns]).contains("created"));
        assert_eq!(
            run(&["auth", "can-i", "create", "pods", "-n", &ns]).trim(),
            "yes"
        );
        run(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.25",
            "-n",
            &ns,
        ]);
        run(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=x",
            "-n",
            &ns,
        ]);
        run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
            "-n",
            &ns,
        ]);
        run(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=pods",
            "-n",
            &ns,
        ]);
        run(&[
            "create",
            "rolebinding",
            "read",
            "--role=reader",
            "--user=bob",
            "-n",
            &ns,
        ]);
        run(&[
            "create",
            "service",
            "clusterip",
            "web",
            "--tcp=80:8080",
            "-n",
            &ns,
        ]);
        let names = run(&[
            "get",
            "deploy,secret,cm,role,rolebinding,svc",
            "-n",
            &ns,
            "-o",
            "name",
        ]);
        for want in [
            "deployment.apps/web",
            "secret/creds",
            "configmap/settings",
            "service/web",
        ] {
            assert!(names.contains(want), "{bin}: {want} missing from {names}");
        }
        let secret = run(&[
            "get",
            "secret",
            "creds",
            "-n",
            &ns,
            "-o",
            "jsonpath={.data.password}",
        ]);
        assert_eq!(secret, "eA==", "{bin}");
    }
}

#[test]
fn explain_and_api_resources_read_the_servers_schemas() {
    let s = TestServer::start();
    let explain = s.ok(&["explain", "deployment.spec.replicas"]);
    assert!(
        explain.contains("KIND:") && explain.contains("Deployment"),
        "{explain}"
    );
    assert!(explain.contains("replicas"), "{explain}");
    let namespaced = s.ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(
        namespaced.lines().any(|l| l == "namespaces"),
        "{namespaced}"
    );
    assert!(!namespaced.lines().any(|l| l == "pods"), "{namespaced}");
}
