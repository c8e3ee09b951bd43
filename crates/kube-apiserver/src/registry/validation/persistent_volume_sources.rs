//! The volume sources of a PersistentVolume (upstream's
//! `ValidatePersistentVolumeSpec` source checks and the
//! `validate*PersistentVolumeSource` functions of
//! pkg/apis/core/validation/validation.go): exactly one source, and each
//! source's required fields and formats, with upstream's paths (some of
//! them misspelt, as upstream reports them) and messages.

use std::sync::LazyLock;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::inclusive_range_error;
use apimachinery::validation::is_dns1123_subdomain;
use regex::Regex;
use serde_json::Value;

use super::pod_volumes::{csi_driver, host_path, nfs, no_backsteps, required};
use super::{dns_label, int, invalid_all, is_true, items, set, text};

/// The sources in upstream's order: the JSON field, the name a second
/// source is reported under and the path its own rules report under.
const SOURCES: &[(&str, &str, &str)] = &[
    ("hostPath", "hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    (
        "awsElasticBlockStore",
        "awsElasticBlockStore",
        "awsElasticBlockStore",
    ),
    ("glusterfs", "glusterfs", "glusterfs"),
    ("flocker", "flocker", "flocker"),
    ("nfs", "nfs", "nfs"),
    ("rbd", "rbd", "rbd"),
    ("quobyte", "quobyte", "quobyte"),
    ("cephfs", "cephFS", "cephfs"),
    ("iscsi", "iscsi", "iscsi"),
    ("cinder", "cinder", "cinder"),
    ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"),
    ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "photonPersistentDisk",
    ),
    ("portworxVolume", "portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO", "scaleIO"),
    ("local", "local", "local"),
    ("storageos", "storageos", "storageos"),
    ("csi", "csi", "csi"),
];

const LUN_RANGE: (i64, i64) = (0, 255);
const QUOBYTE_REGISTRY: &str = "must be a host:port pair or multiple pairs separated by commas";
const ISCSI_FORMAT: &str = "must be valid format";
const ISCSI_TOO_LONG: &str = "Total length of <volume name>:<iscsi.targetPortal> must be under \
64 characters if iscsi.initiatorName is specified.";
const AZURE_CACHING_MODES: &[&str] = &["None", "ReadOnly", "ReadWrite"];
const AZURE_DISK_KINDS: &[&str] = &["Dedicated", "Managed", "Shared"];
const AZURE_MANAGED_URI: &str =
    "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}";
const AZURE_BLOB_URI: &str =
    "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd";

/// Upstream's iSCSI name patterns (Go's `\d` and `\s` are ASCII).
static IQN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"iqn\.[0-9]{4}-[0-9]{2}\.([[:alnum:]-.]+)(:[^,;*&$|\t\n\x0C\r ]+)$").expect("iqn")
});
static EUI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^eui.[[:alnum:]]{16}$").expect("eui"));
static NAA: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^naa.[[:alnum:]]{32}$").expect("naa"));

/// Exactly one source and its rules; returns whether it is a local volume
/// (which needs node affinity).
pub(super) fn validate_sources(
    spec: &Value,
    pv_name: &str,
    path: &Path,
    errs: &mut Vec<FieldError>,
) -> bool {
    let (mut found, mut local) = (false, false);
    for (key, reported, checked_at) in SOURCES {
        let Some(source) = set(spec, key) else {
            continue;
        };
        // A flex volume is counted but never refused as a second source.
        if found && *key != "flexVolume" {
            errs.push(FieldError::forbidden(
                &path.child(reported),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found = true;
        local |= *key == "local";
        source_rules(key, source, pv_name, &path.child(checked_at), errs);
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    local
}

fn source_rules(key: &str, source: &Value, pv_name: &str, p: &Path, errs: &mut Vec<FieldError>) {
    match key {
        "hostPath" => host_path(source, p, errs),
        "gcePersistentDisk" => disk(source, "pdName", p, errs),
        "awsElasticBlockStore" => disk(source, "volumeID", p, errs),
        "glusterfs" => glusterfs(source, p, errs),
        "flocker" => flocker(source, p, errs),
        "nfs" => nfs(source, p, errs),
        "rbd" => {
            non_empty_list(source, "monitors", p, errs);
            required(source, "image", p, errs);
        }
        "quobyte" => quobyte(source, p, errs),
        "cephfs" => non_empty_list(source, "monitors", p, errs),
        "iscsi" => iscsi(source, pv_name, p, errs),
        "cinder" => {
            required(source, "volumeID", p, errs);
            secret_name_and_namespace(source, p, errs);
        }
        "fc" => fibre_channel(source, p, errs),
        "flexVolume" => flex_volume(source, p, errs),
        "azureFile" => azure_file(source, p, errs),
        "vsphereVolume" => required(source, "volumePath", p, errs),
        "photonPersistentDisk" => required(source, "pdID", p, errs),
        "portworxVolume" => required(source, "volumeID", p, errs),
        "azureDisk" => azure_disk(source, p, errs),
        "scaleIO" => ["gateway", "system", "volumeName"]
            .into_iter()
            .for_each(|k| required(source, k, p, errs)),
        "local" => {
            let local_path = text(source, "path");
            if local_path.is_empty() {
                errs.push(FieldError::required(&p.child("path"), ""));
            } else {
                no_backsteps(local_path, &p.child("path"), errs);
            }
        }
        "storageos" => storageos(source, p, errs),
        _ => csi(source, p, errs),
    }
}

fn non_empty_list(source: &Value, key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if items(source, key).is_empty() {
        errs.push(FieldError::required(&path.child(key), ""));
    }
}

fn in_range(value: i64, (lo, hi): (i64, i64), path: &Path, errs: &mut Vec<FieldError>) {
    if !(lo..=hi).contains(&value) {
        errs.push(FieldError::invalid(
            path,
            value,
            inclusive_range_error(lo, hi),
        ));
    }
}

/// GCE persistent disks and AWS EBS volumes: a name and a partition.
fn disk(source: &Value, name_key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, name_key, path, errs);
    let partition = int(source, "partition").unwrap_or(0);
    // Upstream accepts 0 (no partition) though its message names 1-255.
    if !(0..=255).contains(&partition) {
        let msg = inclusive_range_error(1, 255);
        errs.push(FieldError::invalid(
            &path.child("partition"),
            partition,
            msg,
        ));
    }
}

fn glusterfs(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, "endpoints", path, errs);
    required(source, "path", path, errs);
    let Some(namespace) = set(source, "endpointsNamespace") else {
        return;
    };
    let namespace = namespace.as_str().unwrap_or_default();
    let at = path.child("endpointsNamespace");
    if namespace.is_empty() {
        let msg = "if the endpointnamespace is set, it must be a valid namespace name";
        errs.push(FieldError::invalid(&at, namespace, msg));
    } else {
        dns_label(&at, namespace, errs);
    }
}

fn flocker(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let (name, uuid) = (text(source, "datasetName"), text(source, "datasetUUID"));
    if name.is_empty() && uuid.is_empty() {
        let msg = "one of datasetName and datasetUUID is required";
        errs.push(FieldError::required(path, msg));
    }
    if !name.is_empty() && !uuid.is_empty() {
        let msg = "datasetName and datasetUUID can not be specified simultaneously";
        errs.push(FieldError::invalid(path, "resource", msg));
    }
    if name.contains('/') {
        let at = path.child("datasetName");
        errs.push(FieldError::invalid(&at, name, "must not contain '/'"));
    }
}

fn quobyte(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let registry = text(source, "registry");
    if registry.is_empty() {
        errs.push(FieldError::required(
            &path.child("registry"),
            QUOBYTE_REGISTRY,
        ));
    } else if text(source, "tenant").len() >= 65 {
        let msg = "must be a UUID and may not exceed a length of 64 characters";
        errs.push(FieldError::required(&path.child("tenant"), msg));
    } else {
        for pair in registry.split(',') {
            if !is_host_port(pair) {
                let at = path.child("registry");
                errs.push(FieldError::invalid(&at, registry, QUOBYTE_REGISTRY));
            }
        }
    }
    required(source, "volume", path, errs);
}

/// Whether Go's `net.SplitHostPort` accepts `s`.
fn is_host_port(s: &str) -> bool {
    let Some(colon) = s.rfind(':') else {
        return false;
    };
    let (j, k) = if s.starts_with('[') {
        match s.find(']') {
            Some(end) if end + 1 == colon => (1, end + 1),
            _ => return false,
        }
    } else if s[..colon].contains(':') {
        return false;
    } else {
        (0, 0)
    };
    !s[j..].contains('[') && !s[k..].contains(']')
}

fn iscsi_name_valid(name: &str) -> bool {
    if name.starts_with("iqn") {
        IQN.is_match(name)
    } else if name.starts_with("eui") {
        EUI.is_match(name)
    } else if name.starts_with("naa") {
        NAA.is_match(name)
    } else {
        false
    }
}

fn iscsi(source: &Value, pv_name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let portal = text(source, "targetPortal");
    if portal.is_empty() {
        errs.push(FieldError::required(&path.child("targetPortal"), ""));
    }
    let initiator = set(source, "initiatorName");
    if initiator.is_some() && pv_name.len() + 1 + portal.len() > 64 {
        let at = path.child("targetportal");
        errs.push(FieldError::invalid(&at, portal, ISCSI_TOO_LONG));
    }
    let iqn = text(source, "iqn");
    if iqn.is_empty() {
        errs.push(FieldError::required(&path.child("iqn"), ""));
    } else if !iscsi_name_valid(iqn) {
        errs.push(FieldError::invalid(&path.child("iqn"), iqn, ISCSI_FORMAT));
    }
    in_range(
        int(source, "lun").unwrap_or(0),
        LUN_RANGE,
        &path.child("lun"),
        errs,
    );
    let chap = is_true(source, "chapAuthDiscovery") || is_true(source, "chapAuthSession");
    let secret = set(source, "secretRef");
    if chap && secret.is_none() {
        errs.push(FieldError::required(&path.child("secretRef"), ""));
    }
    if let Some(secret) = secret {
        required(secret, "name", &path.child("secretRef"), errs);
    }
    if let Some(initiator) = initiator.and_then(Value::as_str) {
        if !iscsi_name_valid(initiator) {
            let at = path.child("initiatorname");
            errs.push(FieldError::invalid(&at, initiator, ISCSI_FORMAT));
        }
    }
}

/// A secret reference's name and namespace, both required when set
/// (Cinder and StorageOS volumes).
fn secret_name_and_namespace(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(secret) = set(source, "secretRef") {
        let at = path.child("secretRef");
        required(secret, "name", &at, errs);
        required(secret, "namespace", &at, errs);
    }
}

fn fibre_channel(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let (wwns, wwids) = (items(source, "targetWWNs"), items(source, "wwids"));
    let at = path.child("targetWWNs");
    if wwns.is_empty() && wwids.is_empty() {
        let msg = "must specify either targetWWNs or wwids, but not both";
        errs.push(FieldError::required(&at, msg));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        let msg = "targetWWNs and wwids can not be specified simultaneously";
        errs.push(FieldError::invalid(&at, Value::from(wwns.to_vec()), msg));
    }
    if !wwns.is_empty() {
        match set(source, "lun").and_then(Value::as_i64) {
            None => {
                let msg = "lun is required if targetWWNs is specified";
                errs.push(FieldError::required(&path.child("lun"), msg));
            }
            Some(lun) => in_range(lun, LUN_RANGE, &path.child("lun"), errs),
        }
    }
}

fn flex_volume(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, "driver", path, errs);
    let options = source.get("options").and_then(Value::as_object);
    for key in options.into_iter().flatten().map(|(k, _)| k) {
        let namespace = key.split_once('/').map_or(key.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            let at = path.child("options").key(key);
            let msg = "kubernetes.io and k8s.io namespaces are reserved";
            errs.push(FieldError::invalid(&at, key.as_str(), msg));
        }
    }
}

fn azure_file(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, "secretName", path, errs);
    required(source, "shareName", path, errs);
    let namespace = set(source, "secretNamespace").and_then(Value::as_str);
    if namespace.is_some_and(str::is_empty) {
        errs.push(FieldError::required(&path.child("secretNamespace"), ""));
    }
}

fn azure_disk(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, "diskName", path, errs);
    let uri = text(source, "diskURI");
    let uri_path = path.child("diskURI");
    if uri.is_empty() {
        errs.push(FieldError::required(&uri_path, ""));
    }
    let mode = set(source, "cachingMode").and_then(Value::as_str);
    if let Some(mode) = mode.filter(|m| !AZURE_CACHING_MODES.contains(m)) {
        let at = path.child("cachingMode");
        errs.push(FieldError::not_supported(&at, mode, AZURE_CACHING_MODES));
    }
    let kind = set(source, "kind").and_then(Value::as_str);
    if let Some(kind) = kind.filter(|k| !AZURE_DISK_KINDS.contains(k)) {
        let at = path.child("kind");
        errs.push(FieldError::not_supported(&at, kind, AZURE_DISK_KINDS));
    }
    match kind {
        Some("Managed") if !uri.starts_with("/subscriptions/") => {
            errs.push(FieldError::not_supported(
                &uri_path,
                uri,
                &[AZURE_MANAGED_URI],
            ));
        }
        Some(k) if k != "Managed" && !uri.starts_with("https://") => {
            errs.push(FieldError::not_supported(&uri_path, uri, &[AZURE_BLOB_URI]));
        }
        _ => {}
    }
}

fn storageos(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(source, "volumeName");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("volumeName"), ""));
    } else {
        dns_label(&path.child("volumeName"), name, errs);
    }
    let namespace = text(source, "volumeNamespace");
    if !namespace.is_empty() {
        dns_label(&path.child("volumeNamespace"), namespace, errs);
    }
    secret_name_and_namespace(source, path, errs);
}

fn csi(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    csi_driver(text(source, "driver"), &path.child("driver"), errs);
    required(source, "volumeHandle", path, errs);
    for key in [
        "controllerPublishSecretRef",
        "controllerExpandSecretRef",
        "nodePublishSecretRef",
        "nodeExpandSecretRef",
    ] {
        if let Some(secret) = set(source, key) {
            secret_reference(secret, &path.child(key), errs);
        }
    }
}

/// Upstream's `validatePVSecretReference`.
fn secret_reference(secret: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(secret, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        invalid_all(&path.child("name"), name, is_dns1123_subdomain(name), errs);
    }
    let namespace = text(secret, "namespace");
    if namespace.is_empty() {
        errs.push(FieldError::required(&path.child("namespace"), ""));
    } else {
        dns_label(&path.child("namespace"), namespace, errs);
    }
}
