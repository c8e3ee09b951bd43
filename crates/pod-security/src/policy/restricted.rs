//! Checks of the restricted profile: privilege escalation, capabilities
//! (drop ALL, add only NET_BIND_SERVICE), volume types, running as non-root
//! and never as UID 0.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{PodSpec, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::result::Forbidden;
use super::visit::{
    bad_containers, containers, containers_phrase, in_user_namespace, is_windows, join_quote,
    pluralize,
};

/// allowPrivilegeEscalation: every container sets it to false.
pub(crate) fn allow_privilege_escalation_1_8(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let bad = bad_containers(spec, |c| {
        c.security_context
            .and_then(|s| s.allow_privilege_escalation)
            != Some(false)
    });
    (!bad.is_empty()).then(|| {
        Forbidden::new(
            "allowPrivilegeEscalation != false",
            format!(
                "{} must set securityContext.allowPrivilegeEscalation=false",
                containers_phrase(&bad)
            ),
        )
    })
}

/// allowPrivilegeEscalation from v1.25: Windows pods are exempt.
pub(crate) fn allow_privilege_escalation_1_25(
    meta: &ObjectMeta,
    spec: &PodSpec,
) -> Option<Forbidden> {
    if is_windows(spec) {
        return None;
    }
    allow_privilege_escalation_1_8(meta, spec)
}

/// capabilities_restricted: drop ALL, add nothing but NET_BIND_SERVICE.
pub(crate) fn capabilities_restricted_1_22(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut missing_drop = Vec::new();
    let mut adding = Vec::new();
    let mut caps = BTreeSet::new();
    for c in containers(spec) {
        let Some(capabilities) = c.security_context.and_then(|s| s.capabilities.as_ref()) else {
            missing_drop.push(c.name);
            continue;
        };
        let drops = capabilities.drop.as_deref().unwrap_or_default();
        if !drops.iter().any(|d| d == "ALL") {
            missing_drop.push(c.name);
        }
        let mut bad = false;
        for cap in capabilities.add.iter().flatten() {
            if cap != "NET_BIND_SERVICE" {
                caps.insert(cap.as_str());
                bad = true;
            }
        }
        if bad {
            adding.push(c.name);
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&caps)
        ));
    }
    (!details.is_empty()).then(|| Forbidden::new("unrestricted capabilities", details.join("; ")))
}

/// capabilities_restricted from v1.25: Windows pods are exempt.
pub(crate) fn capabilities_restricted_1_25(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    if is_windows(spec) {
        return None;
    }
    capabilities_restricted_1_22(meta, spec)
}

/// None for the volume sources the restricted profile allows, else the
/// restricted source's name.
fn restricted_volume_type(v: &Volume) -> Option<&'static str> {
    let allowed = v.config_map.is_some()
        || v.csi.is_some()
        || v.downward_api.is_some()
        || v.empty_dir.is_some()
        || v.ephemeral.is_some()
        || v.image.is_some()
        || v.persistent_volume_claim.is_some()
        || v.projected.is_some()
        || v.secret.is_some();
    if allowed {
        return None;
    }
    let named = [
        (v.host_path.is_some(), "hostPath"),
        (v.gce_persistent_disk.is_some(), "gcePersistentDisk"),
        (v.aws_elastic_block_store.is_some(), "awsElasticBlockStore"),
        (v.git_repo.is_some(), "gitRepo"),
        (v.nfs.is_some(), "nfs"),
        (v.iscsi.is_some(), "iscsi"),
        (v.glusterfs.is_some(), "glusterfs"),
        (v.rbd.is_some(), "rbd"),
        (v.flex_volume.is_some(), "flexVolume"),
        (v.cinder.is_some(), "cinder"),
        (v.cephfs.is_some(), "cephfs"),
        (v.flocker.is_some(), "flocker"),
        (v.fc.is_some(), "fc"),
        (v.azure_file.is_some(), "azureFile"),
        (v.vsphere_volume.is_some(), "vsphereVolume"),
        (v.quobyte.is_some(), "quobyte"),
        (v.azure_disk.is_some(), "azureDisk"),
        (v.photon_persistent_disk.is_some(), "photonPersistentDisk"),
        (v.portworx_volume.is_some(), "portworxVolume"),
        (v.scale_io.is_some(), "scaleIO"),
        (v.storageos.is_some(), "storageos"),
    ];
    Some(
        named
            .iter()
            .find(|(set, _)| *set)
            .map_or("unknown", |(_, name)| name),
    )
}

/// restrictedVolumes: only configMap, csi, downwardAPI, emptyDir,
/// ephemeral, image, persistentVolumeClaim, projected and secret volumes.
pub(crate) fn restricted_volumes_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut names = Vec::new();
    let mut types = BTreeSet::new();
    for v in spec.volumes.iter().flatten() {
        if let Some(t) = restricted_volume_type(v) {
            names.push(v.name.as_str());
            types.insert(t);
        }
    }
    (!names.is_empty()).then(|| {
        Forbidden::new(
            "restricted volume types",
            format!(
                "{} {} {} {} {}",
                pluralize("volume", "volumes", names.len()),
                join_quote(&names),
                pluralize("uses", "use", names.len()),
                pluralize(
                    "restricted volume type",
                    "restricted volume types",
                    types.len()
                ),
                join_quote(&types)
            ),
        )
    })
}

/// runAsNonRoot: the pod or every container sets runAsNonRoot=true, and
/// none sets it to false.
pub(crate) fn run_as_non_root_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let pod = spec
        .security_context
        .as_ref()
        .and_then(|s| s.run_as_non_root);
    let mut implicit = Vec::new();
    let explicit = bad_containers(spec, |c| {
        match c.security_context.and_then(|s| s.run_as_non_root) {
            Some(v) => !v,
            None => {
                if pod != Some(true) {
                    implicit.push(c.name);
                }
                false
            }
        }
    });
    let mut who = Vec::new();
    if pod == Some(false) {
        who.push("pod".to_owned());
    }
    if !explicit.is_empty() {
        who.push(containers_phrase(&explicit));
    }
    if !who.is_empty() {
        return Some(Forbidden::new(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                who.join(" and ")
            ),
        ));
    }
    (!implicit.is_empty()).then(|| {
        Forbidden::new(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicit)
            ),
        )
    })
}

/// runAsNonRoot from v1.35: any value in a user namespace.
pub(crate) fn run_as_non_root_1_35(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    if in_user_namespace(spec) {
        return None;
    }
    run_as_non_root_1_0(meta, spec)
}

/// runAsUser: neither the pod nor a container sets runAsUser=0.
pub(crate) fn run_as_user_1_23(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let pod = spec.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0);
    let bad = bad_containers(spec, |c| {
        c.security_context.and_then(|s| s.run_as_user) == Some(0)
    });
    let mut who = Vec::new();
    if pod {
        who.push("pod".to_owned());
    }
    if !bad.is_empty() {
        who.push(containers_phrase(&bad));
    }
    (!who.is_empty()).then(|| {
        Forbidden::new(
            "runAsUser=0",
            format!("{} must not set runAsUser=0", who.join(" and ")),
        )
    })
}

/// runAsUser from v1.35: any value in a user namespace.
pub(crate) fn run_as_user_1_35(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    if in_user_namespace(spec) {
        return None;
    }
    run_as_user_1_23(meta, spec)
}
