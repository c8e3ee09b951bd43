//! Pod volumes (upstream's `ValidateVolumes` and `validateVolumeSource`):
//! unique DNS-label names, exactly one source, and the required fields of
//! the common sources (configMap, secret, emptyDir, hostPath,
//! persistentVolumeClaim, projected, downwardAPI, nfs, csi, ephemeral).

use std::collections::{HashMap, HashSet};

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::quantity::Quantity;
use apimachinery::validation::{is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;

use super::{dns_label, int, invalid_all, items, set, text};

/// The volume sources of a pod, in upstream's order, with the name under
/// which upstream reports a second source (two of them are misspelt).
const SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];
const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];
const MIN_TOKEN_SECONDS: i64 = 10 * 60;
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

/// The valid volumes of a pod by name (a volume with errors is left out,
/// as upstream does, so mounts of it report it as not found).
pub(super) type Volumes<'a> = HashMap<&'a str, &'a Value>;

/// Validates `spec.volumes` and returns the valid ones by name.
pub(super) fn validate_volumes<'a>(
    spec: &'a Value,
    path: &Path,
    is_pod: bool,
    errs: &mut Vec<FieldError>,
) -> Volumes<'a> {
    let mut names = HashSet::new();
    let mut volumes = HashMap::new();
    for (i, volume) in items(spec, "volumes").iter().enumerate() {
        let idx = path.index(i);
        let name_path = idx.child("name");
        let mut el = Vec::new();
        validate_source(volume, &idx, is_pod, &mut el);
        let name = text(volume, "name");
        if name.is_empty() {
            el.push(FieldError::required(&name_path, ""));
        } else {
            dns_label(&name_path, name, &mut el);
        }
        if names.contains(name) {
            el.push(FieldError::duplicate(&name_path, name));
        }
        if el.is_empty() {
            names.insert(name);
            volumes.insert(name, volume);
        } else {
            errs.append(&mut el);
        }
    }
    volumes
}

/// Exactly one source, and that source's own rules.
fn validate_source(volume: &Value, path: &Path, is_pod: bool, errs: &mut Vec<FieldError>) {
    let mut found = false;
    for (key, reported) in SOURCES {
        let Some(source) = set(volume, key) else {
            continue;
        };
        if found {
            errs.push(FieldError::forbidden(
                &path.child(reported),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        found = true;
        validate_one_source(key, source, path, is_pod, errs);
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
}

fn validate_one_source(
    key: &str,
    source: &Value,
    path: &Path,
    is_pod: bool,
    errs: &mut Vec<FieldError>,
) {
    let p = path.child(key);
    match key {
        "emptyDir" => empty_dir(source, &p, errs),
        "hostPath" => host_path(source, &p, errs),
        "secret" => keyed_source(source, "secretName", &p, errs),
        "configMap" => keyed_source(source, "name", &p, errs),
        "persistentVolumeClaim" => required(source, "claimName", &p, errs),
        "nfs" => nfs(source, &p, errs),
        "downwardAPI" => {
            file_mode(source, "defaultMode", &p, errs);
            for file in items(source, "items") {
                downward_api_file(file, &p, errs);
            }
        }
        "projected" => {
            file_mode(source, "defaultMode", &p, errs);
            projection_sources(source, &p, errs);
        }
        "csi" => csi_driver(text(source, "driver"), &p.child("driver"), errs),
        "ephemeral" if set(source, "volumeClaimTemplate").is_none() => {
            errs.push(FieldError::required(&p.child("volumeClaimTemplate"), ""));
        }
        "image" if is_pod => required(source, "reference", &p, errs),
        _ => {}
    }
}

pub(super) fn required(source: &Value, key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if text(source, key).is_empty() {
        errs.push(FieldError::required(&path.child(key), ""));
    }
}

fn empty_dir(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let negative = source
        .get("sizeLimit")
        .and_then(quantity)
        .is_some_and(|q| q.is_negative());
    if negative {
        errs.push(FieldError::forbidden(
            &path.child("sizeLimit"),
            "SizeLimit field must be a valid resource quantity",
        ));
    }
}

/// A quantity given as a string or a JSON number.
pub(super) fn quantity(value: &Value) -> Option<Quantity> {
    match value {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

pub(super) fn host_path(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let host = text(source, "path");
    if host.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
        return;
    }
    no_backsteps(host, &path.child("path"), errs);
    if let Some(kind) = source.get("type").and_then(Value::as_str) {
        if !HOST_PATH_TYPES.contains(&kind) {
            errs.push(FieldError::not_supported(
                &path.child("type"),
                kind,
                HOST_PATH_TYPES,
            ));
        }
    }
}

pub(super) fn nfs(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, "server", path, errs);
    let dir = text(source, "path");
    if dir.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    if !dir.starts_with('/') {
        errs.push(FieldError::invalid(
            &path.child("path"),
            dir,
            "must be an absolute path",
        ));
    }
}

/// A secret or configMap source: its name, mode and key-to-path items.
fn keyed_source(source: &Value, name_key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    required(source, name_key, path, errs);
    file_mode(source, "defaultMode", path, errs);
    for (i, item) in items(source, "items").iter().enumerate() {
        key_to_path(item, &path.child("items").index(i), errs);
    }
}

fn key_to_path(item: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    required(item, "key", path, errs);
    let target = text(item, "path");
    if target.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    local_non_reserved_path(target, &path.child("path"), errs);
    file_mode(item, "mode", path, errs);
}

fn file_mode(obj: &Value, key: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(mode) = int(obj, key) {
        if !(0..=0o777).contains(&mode) {
            errs.push(FieldError::invalid(&path.child(key), mode, FILE_MODE_MSG));
        }
    }
}

/// Upstream's `validatePathNoBacksteps`: no `..` element.
pub(super) fn no_backsteps(target: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if target
        .replace('\\', "/")
        .split('/')
        .any(|part| part == "..")
    {
        errs.push(FieldError::invalid(path, target, "must not contain '..'"));
    }
}

/// Upstream's `validateLocalDescendingPath`: relative, without backsteps.
pub(super) fn local_descending_path(target: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if target.starts_with('/') {
        errs.push(FieldError::invalid(path, target, "must be a relative path"));
    }
    no_backsteps(target, path, errs);
}

/// Upstream's `ValidateLocalNonReservedPath`.
fn local_non_reserved_path(target: &str, path: &Path, errs: &mut Vec<FieldError>) {
    local_descending_path(target, path, errs);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(FieldError::invalid(
            path,
            target,
            "must not start with '..'",
        ));
    }
}

fn downward_api_file(file: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let target = text(file, "path");
    if target.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    local_non_reserved_path(target, &path.child("path"), errs);
    if let Some(field_ref) = set(file, "fieldRef") {
        object_field_selector(field_ref, VOLUME_FIELD_PATHS, &path.child("fieldRef"), errs);
        if set(file, "resourceFieldRef").is_some() {
            errs.push(FieldError::invalid(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(resource_ref) = set(file, "resourceFieldRef") {
        resource_field_selector(resource_ref, &path.child("resourceFieldRef"), true, errs);
    } else {
        errs.push(FieldError::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    file_mode(file, "mode", path, errs);
}

/// Upstream's `validateObjectFieldSelector` with the paths `supported`
/// (a missing `apiVersion` is defaulted to `v1`).
pub(super) fn object_field_selector(
    selector: &Value,
    supported: &[&str],
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let version = selector
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("v1");
    if version.is_empty() {
        errs.push(FieldError::required(&path.child("apiVersion"), ""));
        return;
    }
    let field_path = text(selector, "fieldPath");
    if field_path.is_empty() {
        errs.push(FieldError::required(&path.child("fieldPath"), ""));
        return;
    }
    let internal = match convert_field_label(version, field_path) {
        Ok(internal) => internal,
        Err(e) => {
            let msg = format!("error converting fieldPath: {e}");
            errs.push(FieldError::invalid(
                &path.child("fieldPath"),
                field_path,
                msg,
            ));
            return;
        }
    };
    match split_subscript(internal) {
        Some(("metadata.annotations", key)) => {
            invalid_all(path, key, is_qualified_name(&key.to_lowercase()), errs);
        }
        Some(("metadata.labels", key)) => invalid_all(path, key, is_qualified_name(key), errs),
        Some((base, _)) => errs.push(FieldError::invalid(
            path,
            base,
            "does not support subscript",
        )),
        None if !supported.contains(&internal) => {
            errs.push(FieldError::not_supported(
                &path.child("fieldPath"),
                internal,
                supported,
            ));
        }
        None => {}
    }
}

/// Upstream's `ConvertDownwardAPIFieldLabel` for pods.
fn convert_field_label<'a>(version: &str, label: &'a str) -> Result<&'a str, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((base, _)) = split_subscript(label) {
        return match base {
            "metadata.annotations" | "metadata.labels" => Ok(label),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label),
        "spec.host" => Ok("spec.nodeName"),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `metadata.labels['key']` → (`metadata.labels`, `key`).
fn split_subscript(label: &str) -> Option<(&str, &str)> {
    let inner = label.strip_suffix("']")?;
    let open = inner.find("['")?;
    Some((&inner[..open], &inner[open + 2..]))
}

const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// Upstream's `validateContainerResourceFieldSelector` (the divisor is
/// not checked).
pub(super) fn resource_field_selector(
    selector: &Value,
    path: &Path,
    volume: bool,
    errs: &mut Vec<FieldError>,
) {
    let resource = text(selector, "resource");
    if volume && text(selector, "containerName").is_empty() {
        errs.push(FieldError::required(&path.child("containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(&path.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("requests.hugepages-")
        && !resource.starts_with("limits.hugepages-")
    {
        errs.push(FieldError::not_supported(
            &path.child("resource"),
            resource,
            RESOURCE_FIELD_PATHS,
        ));
    }
}

/// The sources of a projected volume; target paths must not collide.
fn projection_sources(projection: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let mut paths = HashSet::new();
    for (i, source) in items(projection, "sources").iter().enumerate() {
        let src = path.child("sources").index(i);
        let mut count = 0;
        for key in ["secret", "configMap"] {
            if let Some(s) = set(source, key) {
                count += 1;
                projected_keyed(s, &src.child(key), path, &mut paths, errs);
            }
        }
        if let Some(api) = set(source, "downwardAPI") {
            count += 1;
            for file in items(api, "items") {
                downward_api_file(file, &src.child("downwardAPI"), errs);
                claim_path(
                    text(file, "path"),
                    text(file, "path"),
                    path,
                    &mut paths,
                    errs,
                );
            }
        }
        if let Some(token) = set(source, "serviceAccountToken") {
            count += 1;
            service_account_token(token, &src.child("serviceAccountToken"), path, errs);
        }
        if set(source, "clusterTrustBundle").is_some() {
            count += 1;
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                &src,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
}

fn projected_keyed<'a>(
    source: &'a Value,
    path: &Path,
    projected: &Path,
    paths: &mut HashSet<&'a str>,
    errs: &mut Vec<FieldError>,
) {
    let name = text(source, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    for (i, item) in items(source, "items").iter().enumerate() {
        key_to_path(item, &path.child("items").index(i), errs);
        claim_path(text(item, "path"), name, projected, paths, errs);
    }
}

/// Records a projected file path; a repeat is "conflicting duplicate paths"
/// reported at the projected volume with `shown` as the value.
fn claim_path<'a>(
    target: &'a str,
    shown: &str,
    projected: &Path,
    paths: &mut HashSet<&'a str>,
    errs: &mut Vec<FieldError>,
) {
    if !target.is_empty() && !paths.insert(target) {
        errs.push(FieldError::invalid(
            projected,
            shown,
            "conflicting duplicate paths",
        ));
    }
}

fn service_account_token(token: &Value, path: &Path, projected: &Path, errs: &mut Vec<FieldError>) {
    let seconds = int(token, "expirationSeconds").unwrap_or(3600);
    let expiration = path.child("expirationSeconds");
    if seconds < MIN_TOKEN_SECONDS {
        errs.push(FieldError::invalid(
            &expiration,
            seconds,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_TOKEN_SECONDS {
        errs.push(FieldError::invalid(
            &expiration,
            seconds,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let target = text(token, "path");
    if target.is_empty() {
        errs.push(FieldError::required(&projected.child("path"), ""));
    } else {
        local_non_reserved_path(target, &projected.child("path"), errs);
    }
}

/// Upstream's `ValidateCSIDriverName`.
pub(super) fn csi_driver(driver: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if driver.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if driver.len() > 63 {
        errs.push(FieldError::too_long(path, Some(63)));
    }
    invalid_all(
        path,
        driver,
        is_dns1123_subdomain(&driver.to_lowercase()),
        errs,
    );
}
