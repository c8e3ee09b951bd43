//! Server-side apply of custom resources follows the CRD's schema: a list
//! with `x-kubernetes-list-type: map` merges the entries of several
//! managers by key instead of being owned as a whole.

use crate::harness::TestServer;
use crate::support::crds::crd;

const SCHEMA: &str = r#"
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
"#;

/// A gadget whose spec holds exactly `ports` (name and port).
fn gadget(ports: &[(&str, u16)]) -> String {
    let ports: Vec<String> = ports
        .iter()
        .map(|(name, port)| format!("{{name: {name}, port: {port}}}"))
        .collect();
    format!(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g1}}\nspec: {{ports: [{}]}}\n",
        ports.join(", ")
    )
}

fn apply(s: &TestServer, manager: &str, yaml: &str) {
    let out = s.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            &format!("--field-manager={manager}"),
            "-f",
            "-",
        ],
        yaml,
    );
    assert!(
        out.status.success(),
        "apply as {manager} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ports(s: &TestServer) -> String {
    s.ok(&[
        "get",
        "gadget",
        "g1",
        "-o",
        "jsonpath={range .spec.ports[*]}{.name}={.port} {end}",
    ])
}

#[test]
fn map_lists_of_custom_resources_merge_by_key() {
    let s = TestServer::start();
    s.apply_yaml(&crd("gadgets", "Gadget", "Namespaced", SCHEMA));
    s.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=15s",
        "crd/gadgets.example.com",
    ]);
    apply(&s, "a", &gadget(&[("a", 80)]));
    // An atomic list would conflict here; a map list takes b's entry too.
    apply(&s, "b", &gadget(&[("b", 443)]));
    assert_eq!(ports(&s), "a=80 b=443 ");
    let managed = s.ok(&[
        "get",
        "gadget",
        "g1",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[?(@.manager==\"b\")].fieldsV1}",
    ]);
    assert!(managed.contains(r#"k:{\"name\":\"b\"}"#), "{managed}");
    // a stops applying its entry: only a's entry goes.
    apply(&s, "a", &gadget(&[]));
    assert_eq!(ports(&s), "b=443 ");
}
