//! The paths of the subresources beyond `status` and `scale`, as
//! upstream publishes them: the ones reading and writing their parent's
//! kind (`pods/ephemeralcontainers`, `pods/resize`,
//! `certificatesigningrequests/approval`, `namespaces/finalize`), the
//! create-only ones taking another kind (`pods/binding`, `pods/eviction`,
//! `serviceaccounts/token`), the log, and the connect subresources that
//! proxy a stream (`pods/exec`, `attach`, `portforward`, `proxy`,
//! `nodes/proxy`, `services/proxy`). They are listed for a resource when
//! its parent is served.

use serde_json::{json, Value};

use apiserver::endpoints::openapi::paths::{
    capitalize, path_param, query, string_response, Builder, Media, Op,
};

/// A query parameter: name, type, description.
type Param = (&'static str, &'static str, &'static str);

/// How a subresource is served.
enum Sub {
    /// get, put and patch of the parent's kind.
    Parent,
    /// put of the parent's kind only.
    PutParent,
    /// POST of another kind: its group, version, kind and definition.
    Create(&'static str, &'static str, &'static str, &'static str),
    /// A container's log.
    Log,
    /// Proxied requests with these methods and query parameters; the
    /// options kind names the `name` parameter; `with_path` adds the
    /// `/{path}` form.
    Connect {
        methods: &'static [&'static str],
        params: &'static [Param],
        options: &'static str,
        with_path: bool,
    },
}

const STREAMS: [Param; 4] = [
    (
        "stderr",
        "boolean",
        "Whether the stream carries the container's stderr.",
    ),
    (
        "stdin",
        "boolean",
        "Whether the stream carries the container's stdin.",
    ),
    (
        "stdout",
        "boolean",
        "Whether the stream carries the container's stdout.",
    ),
    (
        "tty",
        "boolean",
        "Whether a TTY is allocated (stdin, stdout and stderr merge).",
    ),
];
const CONTAINER: Param = (
    "container",
    "string",
    "The container; defaults to the only one in the pod.",
);
const EXEC: [Param; 6] = [
    (
        "command",
        "string",
        "The command to run, one argument per parameter.",
    ),
    CONTAINER,
    STREAMS[0],
    STREAMS[1],
    STREAMS[2],
    STREAMS[3],
];
const ATTACH: [Param; 5] = [CONTAINER, STREAMS[0], STREAMS[1], STREAMS[2], STREAMS[3]];
const PORTS: [Param; 1] = [("ports", "integer", "The container ports to forward.")];
const PROXY_PATH: [Param; 1] = [(
    "path",
    "string",
    "The path to pass on to the proxied target.",
)];
const LOG: [Param; 9] = [
    CONTAINER,
    (
        "follow",
        "boolean",
        "Whether the log is streamed as it grows.",
    ),
    (
        "insecureSkipTLSVerifyBackend",
        "boolean",
        "Whether the kubelet's serving certificate goes unverified.",
    ),
    ("limitBytes", "integer", "The most bytes of log to return."),
    (
        "previous",
        "boolean",
        "Whether the log is of the container's previous run.",
    ),
    (
        "sinceSeconds",
        "integer",
        "Only the log of the last this many seconds.",
    ),
    (
        "stream",
        "string",
        "Which stream: All (default), Stdout or Stderr.",
    ),
    ("tailLines", "integer", "Only this many lines from the end."),
    (
        "timestamps",
        "boolean",
        "Whether each line starts with its RFC3339 timestamp.",
    ),
];
const ALL_METHODS: [&str; 7] = ["delete", "get", "head", "options", "patch", "post", "put"];
const GET_POST: [&str; 2] = ["get", "post"];

/// Upstream's subresources by group, resource and name.
const SUBRESOURCES: [(&str, &str, &str, Sub); 14] = [
    (
        "",
        "pods",
        "attach",
        Sub::Connect {
            methods: &GET_POST,
            params: &ATTACH,
            options: "PodAttachOptions",
            with_path: false,
        },
    ),
    (
        "",
        "pods",
        "binding",
        Sub::Create("", "v1", "Binding", "io.k8s.api.core.v1.Binding"),
    ),
    ("", "pods", "ephemeralcontainers", Sub::Parent),
    (
        "",
        "pods",
        "eviction",
        Sub::Create("policy", "v1", "Eviction", "io.k8s.api.policy.v1.Eviction"),
    ),
    (
        "",
        "pods",
        "exec",
        Sub::Connect {
            methods: &GET_POST,
            params: &EXEC,
            options: "PodExecOptions",
            with_path: false,
        },
    ),
    ("", "pods", "log", Sub::Log),
    (
        "",
        "pods",
        "portforward",
        Sub::Connect {
            methods: &GET_POST,
            params: &PORTS,
            options: "PodPortForwardOptions",
            with_path: false,
        },
    ),
    (
        "",
        "pods",
        "proxy",
        Sub::Connect {
            methods: &ALL_METHODS,
            params: &PROXY_PATH,
            options: "PodProxyOptions",
            with_path: true,
        },
    ),
    ("", "pods", "resize", Sub::Parent),
    ("", "namespaces", "finalize", Sub::PutParent),
    (
        "",
        "nodes",
        "proxy",
        Sub::Connect {
            methods: &ALL_METHODS,
            params: &PROXY_PATH,
            options: "NodeProxyOptions",
            with_path: true,
        },
    ),
    (
        "",
        "services",
        "proxy",
        Sub::Connect {
            methods: &ALL_METHODS,
            params: &PROXY_PATH,
            options: "ServiceProxyOptions",
            with_path: true,
        },
    ),
    (
        "",
        "serviceaccounts",
        "token",
        Sub::Create(
            "authentication.k8s.io",
            "v1",
            "TokenRequest",
            "io.k8s.api.authentication.v1.TokenRequest",
        ),
    ),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        "approval",
        Sub::Parent,
    ),
];

/// The definitions the subresources take beside their parents' kinds.
pub(super) const KINDS: [(&str, &str, &str, &str); 3] = [
    ("", "v1", "Binding", "io.k8s.api.core.v1.Binding"),
    ("policy", "v1", "Eviction", "io.k8s.api.policy.v1.Eviction"),
    (
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
        "io.k8s.api.authentication.v1.TokenRequest",
    ),
];

/// The paths of the subresources of the resource `b` builds for, below
/// its item path.
pub(super) fn paths(b: &Builder, item: &str, name_params: &[Value]) -> Vec<(String, Value)> {
    let info = b.info;
    let ns = info.namespaced;
    let mut out = Vec::new();
    for (group, resource, name, sub) in &SUBRESOURCES {
        if *group != info.group || *resource != info.resource {
            continue;
        }
        let path = format!("{item}/{name}");
        let suffix = capitalize(name);
        let kind = b.kind_def();
        let ops = match sub {
            Sub::Parent => b.subresource_ops(ns, &suffix, kind, b.gvk()),
            Sub::PutParent => {
                let mut ops = b.subresource_ops(ns, &suffix, kind, b.gvk());
                ops.retain(|op| op.method == "put");
                ops
            }
            Sub::Create(g, v, k, def) => {
                let gvk = json!({"group": g, "kind": k, "version": v});
                vec![b.create_op(b.id("create", ns, &suffix), def, gvk)]
            }
            Sub::Log => vec![Op {
                method: "get",
                action: "get",
                id: b.id("read", ns, &suffix),
                params: LOG.iter().map(query).collect(),
                responses: string_response(),
                gvk: b.gvk(),
                media: Media::Log,
            }],
            Sub::Connect {
                methods,
                params,
                options,
                with_path,
            } => {
                let mut names = vec![path_param("name", &format!("name of the {options}"))];
                names.extend(name_params.iter().filter(|p| p["name"] != "name").cloned());
                let connect = |path_suffix: &str| {
                    methods
                        .iter()
                        .map(|method| Op {
                            method,
                            action: "connect",
                            id: b.connect_id(method, ns, &format!("{suffix}{path_suffix}")),
                            params: params.iter().map(query).collect(),
                            responses: string_response(),
                            gvk: b.gvk(),
                            media: Media::Connect,
                        })
                        .collect::<Vec<_>>()
                };
                if *with_path {
                    let mut with = names.clone();
                    with.push(path_param("path", "path to the resource"));
                    if let Some(item) = b.path_item(connect("WithPath"), &with) {
                        out.push((format!("{path}/{{path}}"), item));
                    }
                }
                if let Some(item) = b.path_item(connect(""), &names) {
                    out.push((path, item));
                }
                continue;
            }
        };
        if let Some(item) = b.path_item(ops, name_params) {
            out.push((path, item));
        }
    }
    out
}
