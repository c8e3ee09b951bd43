//! Code generator for the `protobuf-codec` crate.
//!
//! Joins a protobuf schema (tags and wire types) with the `k8s-openapi`
//! types of the targeted Kubernetes version (JSON names, required fields,
//! resource kinds) and writes the static schema tables to
//! `crates/protobuf/src/generated.rs`.
//!
//! The protobuf schema comes from upstream's `generated.proto` files, and
//! which zero numbers and bools to drop on decoding from upstream's Go
//! type declarations ([`gofields`]): pass git repositories (bare mirrors or
//! checkouts) of kubernetes/api, kubernetes/apimachinery,
//! kubernetes/apiextensions-apiserver and kubernetes/kube-aggregator at the
//! targeted release, and optionally the revision (default `HEAD`):
//! `cargo run -p protobuf-codegen -- API APIMACHINERY APIEXTENSIONS AGGREGATOR [REV]`,
//! e.g. `cargo run -p protobuf-codegen -- /work/.mirror/kubernetes+{api,apimachinery,apiextensions-apiserver,kube-aggregator}/repo`.
//! With `--k8s-pb` first, the protobuf schema is read from the prost
//! sources of the `k8s-pb` crate instead, which trail Kubernetes releases
//! (missing newer fields and kinds).

mod emit;
mod gofields;
mod openapi;
mod pb;
mod proto;

use std::path::{Path, PathBuf};
use std::process::Command;

use go_types::source::{Loader, Repo};

/// The upstream repositories, in the order their paths are given.
const MODULES: [&str; 4] = [
    "k8s.io/api",
    "k8s.io/apimachinery",
    "k8s.io/apiextensions-apiserver",
    "k8s.io/kube-aggregator",
];

/// The `k8s-openapi` version module the server targets.
const OPENAPI_VERSION_MODULE: &str = "v1_37";

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("reading {0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    #[error("running cargo metadata: {0}")]
    Metadata(String),
    #[error("package {0} not found in cargo metadata")]
    MissingPackage(&'static str),
    #[error("cannot parse field declaration {0}")]
    Parse(String),
    #[error(transparent)]
    Go(#[from] go_types::GoError),
    #[error("usage: protobuf-codegen [--k8s-pb] API APIMACHINERY APIEXTENSIONS AGGREGATOR [REV]")]
    Usage,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("protobuf-codegen: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), CodegenError> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pb_root = package_dir(manifest_dir, "k8s-pb")?;
    let oa_root = package_dir(manifest_dir, "k8s-openapi")?;
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let from_k8s_pb = args.first().is_some_and(|a| a == "--k8s-pb");
    if from_k8s_pb {
        args.remove(0);
    }
    let (dirs, rev) = match args.as_slice() {
        [a, b, c, d] => ([a, b, c, d], "HEAD"),
        [a, b, c, d, rev] => ([a, b, c, d], rev.as_str()),
        _ => return Err(CodegenError::Usage),
    };
    let repos = MODULES
        .iter()
        .zip(dirs)
        .map(|(module, dir)| Repo {
            module: (*module).to_owned(),
            git_dir: PathBuf::from(dir),
        })
        .collect();
    let loader = Loader::new(repos, rev);
    let (pb, source) = if from_k8s_pb {
        (pb::parse(&pb_root.join("src"))?, "k8s-pb")
    } else {
        (
            proto::parse(&loader, &MODULES)?,
            "upstream's generated.proto files",
        )
    };
    let mut go = gofields::GoFields::new(loader);
    let oa = openapi::parse(&oa_root.join("src").join(OPENAPI_VERSION_MODULE))?;
    let (code, report) = emit::generate(source, &pb, &oa, &mut go);
    let out = manifest_dir.join("../protobuf/src/generated.rs");
    std::fs::write(&out, code).map_err(|e| CodegenError::Io(out.clone(), e))?;
    eprintln!("{report}");
    eprintln!("wrote {}", out.display());
    Ok(())
}

/// Finds a dependency's source directory through `cargo metadata`.
fn package_dir(manifest_dir: &Path, name: &'static str) -> Result<PathBuf, CodegenError> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(manifest_dir.join("../protobuf/Cargo.toml"))
        .output()
        .map_err(|e| CodegenError::Metadata(e.to_string()))?;
    if !output.status.success() {
        return Err(CodegenError::Metadata(
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ));
    }
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| CodegenError::Metadata(e.to_string()))?;
    meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name)
        .and_then(|p| p["manifest_path"].as_str())
        .and_then(|m| Path::new(m).parent().map(Path::to_path_buf))
        .ok_or(CodegenError::MissingPackage(name))
}

/// All files below `dir`, sorted for a deterministic output.
pub fn walk(dir: &Path) -> Result<Vec<PathBuf>, CodegenError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| CodegenError::Io(d.clone(), e))?;
        for entry in entries {
            let path = entry.map_err(|e| CodegenError::Io(d.clone(), e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}
