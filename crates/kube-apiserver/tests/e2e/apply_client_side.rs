//! Client-side apply and the other kubectl commands built on strategic
//! merge patch: `apply` (3-way patch from the last-applied annotation),
//! `diff` (dry-run patch), `edit`, `patch` of every type, `set image`,
//! `rollout pause|resume|restart`, `label` and `annotate`.

use std::process::{Command, Output, Stdio};

use crate::harness::TestServer;
use crate::support::kubectl::{stderr, stdout};

const DEPLOYMENT_V1: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
        ports: [{containerPort: 80}]
        env:
        - {name: A, value: '1'}
        - {name: B, value: '2'}
";

const DEPLOYMENT_V2: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, tier: front, extra: 'yes'}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:2
        ports: [{containerPort: 80}]
        env:
        - {name: A, value: '1'}
        - {name: B, value: '2'}
        - {name: C, value: '3'}
      - name: sidecar
        image: busybox:1
";

/// V2 without the `tier` and `extra` labels, env B and the sidecar.
const DEPLOYMENT_V3: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:2
        ports: [{containerPort: 80}]
        env:
        - {name: A, value: '1'}
        - {name: C, value: '3'}
";

const CONFIGMAP: &str = "
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {a: '1', b: '2'}
";

/// Writes `yaml` to a file in the server's directory and returns its path.
fn file(s: &TestServer, name: &str, yaml: &str) -> String {
    let path = s.dir.path().join(name);
    std::fs::write(&path, yaml).expect("write manifest");
    path.display().to_string()
}

fn jsonpath(s: &TestServer, what: &[&str], path: &str) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let expr = format!("jsonpath={path}");
    args.extend_from_slice(&["-o", &expr]);
    s.ok(&args)
}

/// kubectl with extra environment (EDITOR for `kubectl edit`).
fn kubectl_env(s: &TestServer, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", &s.kubeconfig)
        .env("HOME", s.dir.path())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs")
}

fn apply_creates_reports_unchanged_configures_and_removes_what_the_file_drops(s: &TestServer) {
    let v1 = file(s, "v1.yaml", DEPLOYMENT_V1);
    let out = s.ok(&["apply", "-f", &v1]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let out = s.ok(&["apply", "-f", &v1]);
    assert!(out.contains("deployment.apps/web unchanged"), "{out}");

    let v2 = file(s, "v2.yaml", DEPLOYMENT_V2);
    let out = s.ok(&["apply", "-f", &v2]);
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let dep = ["deployment", "web"];
    let names = jsonpath(s, &dep, "{.spec.template.spec.containers[*].name}");
    assert_eq!(names, "app sidecar");
    let images = jsonpath(s, &dep, "{.spec.template.spec.containers[*].image}");
    assert_eq!(images, "nginx:2 busybox:1");
    let env = jsonpath(s, &dep, "{.spec.template.spec.containers[0].env[*].name}");
    assert_eq!(env, "A B C");
    assert_eq!(jsonpath(s, &dep, "{.metadata.labels.extra}"), "yes");

    let v3 = file(s, "v3.yaml", DEPLOYMENT_V3);
    let out = s.ok(&["apply", "-f", &v3]);
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let names = jsonpath(s, &dep, "{.spec.template.spec.containers[*].name}");
    assert_eq!(names, "app");
    let env = jsonpath(s, &dep, "{.spec.template.spec.containers[0].env[*].name}");
    assert_eq!(env, "A C");
    let labels = jsonpath(s, &dep, "{.metadata.labels}");
    assert_eq!(labels, r#"{"app":"web"}"#);
    // The defaulted port protocol survived the merges.
    let protocol = jsonpath(
        s,
        &dep,
        "{.spec.template.spec.containers[0].ports[0].protocol}",
    );
    assert_eq!(protocol, "TCP");
    let out = s.ok(&["apply", "-f", &v3]);
    assert!(out.contains("unchanged"), "{out}");

    // A removed data key of a ConfigMap goes too.
    let conf = file(s, "conf.yaml", CONFIGMAP);
    s.ok(&["apply", "-f", &conf]);
    let conf = file(s, "conf.yaml", &CONFIGMAP.replace(", b: '2'", ""));
    let out = s.ok(&["apply", "-f", &conf]);
    assert!(out.contains("configmap/conf configured"), "{out}");
    assert_eq!(
        jsonpath(s, &["configmap", "conf"], "{.data}"),
        r#"{"a":"1"}"#
    );
}

fn diff_exits_0_without_changes_and_1_with_changes_and_persists_nothing(s: &TestServer) {
    let v1 = file(s, "v1.yaml", DEPLOYMENT_V1);
    s.ok(&["apply", "-f", &v1]);
    let same = s.kubectl(&["diff", "-f", &v1]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert_eq!(stdout(&same), "");

    let v2 = file(s, "v2.yaml", DEPLOYMENT_V2);
    let changed = s.kubectl(&["diff", "-f", &v2]);
    assert_eq!(changed.status.code(), Some(1), "{}", stderr(&changed));
    let text = stdout(&changed);
    assert!(text.contains("+        image: nginx:2"), "{text}");
    assert!(text.contains("-        image: nginx:1"), "{text}");
    assert!(
        text.contains("+      - name: sidecar") || text.contains("sidecar"),
        "{text}"
    );
    // The dry run left the stored object alone.
    let images = jsonpath(
        s,
        &["deployment", "web"],
        "{.spec.template.spec.containers[*].image}",
    );
    assert_eq!(images, "nginx:1");
}

fn edit_with_a_scripted_editor_patches_the_object(s: &TestServer) {
    s.apply_yaml(CONFIGMAP);
    let editor = s.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/b: \"2\"/b: changed/' \"$1\"\n",
    )
    .expect("write editor");
    Command::new("chmod")
        .arg("+x")
        .arg(&editor)
        .status()
        .expect("chmod");
    let editor = editor.display().to_string();
    let out = kubectl_env(s, &[("EDITOR", &editor)], &["edit", "configmap", "conf"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("configmap/conf edited"),
        "{}",
        stdout(&out)
    );
    assert_eq!(jsonpath(s, &["configmap", "conf"], "{.data.b}"), "changed");
    // An editor that changes nothing cancels the edit.
    let out = kubectl_env(s, &[("EDITOR", "true")], &["edit", "configmap", "conf"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("Edit cancelled, no changes made."), "{said}");
}

fn patch_of_every_type_and_its_errors(s: &TestServer) {
    s.apply_yaml(DEPLOYMENT_V2);
    let dep = ["deployment", "web"];
    let smp = r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:3"}]}}}}"#;
    let out = s.ok(&["patch", "deployment", "web", "--type=strategic", "-p", smp]);
    assert!(out.contains("deployment.apps/web patched"), "{out}");
    let images = jsonpath(s, &dep, "{.spec.template.spec.containers[*].image}");
    assert_eq!(images, "nginx:3 busybox:1");
    let env = jsonpath(s, &dep, "{.spec.template.spec.containers[0].env[*].name}");
    assert_eq!(env, "A B C");

    let delete =
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#;
    s.ok(&["patch", "deployment", "web", "-p", delete]);
    let names = jsonpath(s, &dep, "{.spec.template.spec.containers[*].name}");
    assert_eq!(names, "app");

    s.ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"m":"1"}}}"#,
    ]);
    assert_eq!(jsonpath(s, &dep, "{.metadata.labels.m}"), "1");
    let json = r#"[{"op":"replace","path":"/spec/replicas","value":3}]"#;
    s.ok(&["patch", "deployment", "web", "--type=json", "-p", json]);
    assert_eq!(jsonpath(s, &dep, "{.spec.replicas}"), "3");

    let failing_test = r#"[{"op":"test","path":"/spec/replicas","value":9}]"#;
    let err = s.fails(&[
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        failing_test,
    ]);
    assert!(err.contains("is invalid") && err.contains("patch"), "{err}");
    let no_key = r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#;
    let err = s.fails(&["patch", "deployment", "web", "-p", no_key]);
    assert!(
        err.contains("does not contain declared merge key: name"),
        "{err}"
    );
    let bad_directive = r#"{"metadata":{"labels":{"$patch":"bogus"}}}"#;
    let err = s.fails(&["patch", "deployment", "web", "-p", bad_directive]);
    assert!(err.contains("unknown patch type: bogus"), "{err}");
    let bad_retain = r#"{"spec":{"strategy":{"$retainKeys":"type"}}}"#;
    let err = s.fails(&["patch", "deployment", "web", "-p", bad_retain]);
    assert!(err.contains("invalid patch format of retainKeys"), "{err}");
    // Nothing of the failed patches was stored.
    assert_eq!(jsonpath(s, &dep, "{.spec.replicas}"), "3");
}

fn set_image_rollout_label_and_annotate(s: &TestServer) {
    s.apply_yaml(DEPLOYMENT_V2);
    let dep = ["deployment", "web"];
    let out = s.ok(&["set", "image", "deployment/web", "app=nginx:9"]);
    assert!(out.contains("deployment.apps/web image updated"), "{out}");
    let images = jsonpath(s, &dep, "{.spec.template.spec.containers[*].image}");
    assert_eq!(images, "nginx:9 busybox:1");

    s.ok(&["set", "env", "deployment/web", "-c", "app", "A=9", "B-"]);
    let env = jsonpath(s, &dep, "{.spec.template.spec.containers[0].env[*]}");
    assert_eq!(env, r#"{"name":"A","value":"9"} {"name":"C","value":"3"}"#);

    let out = s.ok(&["rollout", "pause", "deployment/web"]);
    assert!(out.contains("deployment.apps/web paused"), "{out}");
    assert_eq!(jsonpath(s, &dep, "{.spec.paused}"), "true");
    let out = s.ok(&["rollout", "resume", "deployment/web"]);
    assert!(out.contains("deployment.apps/web resumed"), "{out}");
    assert_eq!(jsonpath(s, &dep, "{.spec.paused}"), "");
    let out = s.ok(&["rollout", "restart", "deployment/web"]);
    assert!(out.contains("deployment.apps/web restarted"), "{out}");
    let restarted = jsonpath(
        s,
        &dep,
        r"{.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}",
    );
    assert!(!restarted.is_empty());

    s.ok(&["label", "deployment", "web", "stage=dev"]);
    let err = s.fails(&["label", "deployment", "web", "stage=prod"]);
    assert!(err.contains("already has a value (dev)"), "{err}");
    s.ok(&["label", "deployment", "web", "stage=prod", "--overwrite"]);
    assert_eq!(jsonpath(s, &dep, "{.metadata.labels.stage}"), "prod");
    s.ok(&["label", "deployment", "web", "stage-"]);
    assert_eq!(jsonpath(s, &dep, "{.metadata.labels.stage}"), "");
    let out = s.ok(&["annotate", "deployment", "web", "note=hello"]);
    assert!(out.contains("deployment.apps/web annotated"), "{out}");
    assert_eq!(jsonpath(s, &dep, "{.metadata.annotations.note}"), "hello");
    s.ok(&["annotate", "deployment", "web", "note-"]);
    assert_eq!(jsonpath(s, &dep, "{.metadata.annotations.note}"), "");
}

/// The versioned kubectl binaries (`kubectl.1.27` …) installed beside the
/// one on PATH.
fn versioned_kubectls() -> Vec<std::path::PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    });
    let Some(dir) = on_path
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
    else {
        return Vec::new();
    };
    (27..=33)
        .map(|minor| dir.join(format!("kubectl.1.{minor}")))
        .filter(|p| p.is_file())
        .collect()
}

fn every_installed_kubectl_applies_and_prunes(s: &TestServer) {
    let files = [DEPLOYMENT_V1, DEPLOYMENT_V2, DEPLOYMENT_V3].map(|y| y.to_owned());
    let paths: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, y)| file(s, &format!("v{i}.yaml"), y))
        .collect();
    for (i, kubectl) in versioned_kubectls().iter().enumerate() {
        let bin = kubectl.display().to_string();
        let ns = format!("apply-{i}");
        let run = |args: &[&str]| {
            let out = s.kubectl_with(&bin, args, None);
            assert!(out.status.success(), "{bin} {args:?}: {}", stderr(&out));
            stdout(&out)
        };
        run(&["create", "namespace", &ns]);
        // kubectl before 1.29 validates against /openapi/v2, which the
        // server does not serve yet.
        let validate = if bin.ends_with(".27") || bin.ends_with(".28") {
            "--validate=false"
        } else {
            "--validate=true"
        };
        let verbs = ["created", "configured", "configured"];
        for (path, verb) in paths.iter().zip(verbs) {
            let out = run(&["apply", validate, "-n", &ns, "-f", path]);
            assert!(
                out.contains(&format!("deployment.apps/web {verb}")),
                "{bin}: {out}"
            );
        }
        let got = run(&[
            "get",
            "deployment",
            "web",
            "-n",
            &ns,
            "-o",
            "jsonpath={.spec.template.spec.containers[*].name} {.spec.template.spec.containers[0].env[*].name} {.metadata.labels}",
        ]);
        assert_eq!(got, r#"app A C {"app":"web"}"#, "{bin}");
    }
}

crate::harness::on_both_backends!(
    apply_creates_reports_unchanged_configures_and_removes_what_the_file_drops,
    diff_exits_0_without_changes_and_1_with_changes_and_persists_nothing,
    edit_with_a_scripted_editor_patches_the_object,
    patch_of_every_type_and_its_errors,
    set_image_rollout_label_and_annotate,
    every_installed_kubectl_applies_and_prunes
);
