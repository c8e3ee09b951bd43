//! Server-side apply configurations (`structured-merge`'s field manager,
//! upstream's structured-merge-diff): an applied configuration (YAML or
//! JSON, the first part of the input) of one of a few built-in kinds is
//! applied onto a live object (JSON, the second part, whose
//! `managedFields` are read too) and then recorded as an update; neither
//! panics, whatever the documents hold.
#![no_main]

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use structured_merge::managed::FieldManager;
use structured_merge::schema::TypeRef;
use structured_merge::typed::{Ty, Typer};

fuzz_target!(|data: &[u8]| {
    // Where the server decodes: a thread with its stack.
    kube_fuzz::on_server_stack(|| {
        let ((group, version, kind), data) = kube_fuzz::kind(data);
        let (config, live) = kube_fuzz::halves(data);
        let Ok(config) = apimachinery::serializer::yaml::decode(config) else {
            return;
        };
        let live: Option<Value> = serde_json::from_slice(live).ok();
        let schema = structured_merge::builtin::schema();
        let root = structured_merge::builtin::root(group, version, kind).map(TypeRef::named);
        let ty = match &root {
            Some(root) => Ty::Ref(root),
            None => Ty::Untyped,
        };
        let api_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        let manager = FieldManager::new(Typer::new(schema), ty, &api_version, "");
        let now = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        for force in [false, true] {
            if let Ok(mut applied) = manager.apply(live.as_ref(), &config, "fuzz", force, now) {
                let before = applied.clone();
                manager.update(Some(&before), &mut applied, "other", now);
            }
        }
    });
});
