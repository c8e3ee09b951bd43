//! Which keys each configured resource's providers apply to (upstream's
//! per-resource transformer lookup in `encryptionconfig`): built-in
//! resources by their key roots, custom resources by upstream's
//! `<group>/<resource>` layout.

use std::collections::BTreeMap;
use std::sync::Arc;

use storage::value::{Transformer, TransformerRules};

use super::metrics::Measured;
use super::Configured;

/// A group and resource as upstream's `GroupResource` prints it, the
/// `resource` label of the transformation metrics.
fn resource_label(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// The key prefixes of each configured resource, with upstream's lookup
/// order (the resource, then `*.<group>`, then `*.*`) for built-in ones and
/// upstream's `<group>/<resource>` layout for custom resources; each
/// resource's providers are measured under its name.
pub(super) fn rules(
    configured: &Configured,
    catalogue: &[(String, String, String)],
    etcd_prefix: &str,
) -> TransformerRules {
    let root = etcd_prefix.trim_end_matches('/');
    let mut by_prefix: BTreeMap<String, Arc<dyn Transformer>> = BTreeMap::new();
    for (group, resource, key_root) in catalogue {
        let found = [
            (group.as_str(), resource.as_str()),
            (group.as_str(), "*"),
            ("*", "*"),
        ]
        .into_iter()
        .find_map(|(g, r)| configured.get(&(g.to_owned(), r.to_owned())));
        if let Some(providers) = found {
            let measured = Measured::new(resource_label(group, resource), providers.clone());
            by_prefix.insert(format!("{root}/{key_root}/"), Arc::new(measured));
        }
    }
    for ((group, resource), t) in configured {
        let prefix = match (group.as_str(), resource.as_str()) {
            ("*", _) => format!("{root}/"),
            ("", "*") => continue,
            (g, "*") => format!("{root}/{g}/"),
            ("", r) => format!("{root}/{r}/"),
            (g, r) => format!("{root}/{g}/{r}/"),
        };
        by_prefix.entry(prefix).or_insert_with(|| {
            let label = match (group.as_str(), resource.as_str()) {
                ("*", _) => String::new(),
                (g, r) => resource_label(g, r),
            };
            Arc::new(Measured::new(label, t.clone()))
        });
    }
    TransformerRules::new(by_prefix.into_iter().collect())
}
