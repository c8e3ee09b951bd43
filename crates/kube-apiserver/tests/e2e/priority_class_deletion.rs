//! The system PriorityClasses are refused a DELETE with upstream's 403
//! (its PriorityClass REST `Delete`), even as a dry run, while other
//! classes are deleted as usual.

use crate::harness::TestServer;

fn system_priority_classes_cannot_be_deleted(s: &TestServer) {
    for name in ["system-node-critical", "system-cluster-critical"] {
        for dry_run in [false, true] {
            let mut args = vec!["delete", "priorityclass", name];
            if dry_run {
                args.push("--dry-run=server");
            }
            let err = s.fails(&args);
            assert!(
                err.contains(&format!("Error from server (Forbidden): priorityclasses.scheduling.k8s.io \"{name}\" is forbidden: this is a system priority class and cannot be deleted")),
                "{err}"
            );
        }
        s.ok(&["get", "priorityclass", name]);
    }
    s.apply_yaml(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: batch-low}\nvalue: 10\n",
    );
    s.ok(&["delete", "priorityclass", "batch-low"]);
    let err = s.fails(&["get", "priorityclass", "batch-low"]);
    assert!(err.contains("NotFound"), "{err}");
}

crate::harness::on_both_backends!(system_priority_classes_cannot_be_deleted);
