//! Generator of the built-in type schemas of the `structured-merge` crate
//! (`crates/structured-merge/src/generated/builtin.schema`), of the JSON
//! shape table of the `go-json` crate (`crates/go-json/src/generated/shapes.table`)
//! and of the OpenAPI field table of kube-apiserver (required fields and
//! defaults, [`openapi`]).
//!
//! It parses upstream's Go type definitions — every API group and version
//! of kubernetes/api, apiextensions-apiserver's `apiextensions/v1`,
//! kube-aggregator's `apiregistration/v1`, and the apimachinery types they
//! use (ObjectMeta, LabelSelector, Condition, …) — and writes, for every
//! struct type, its fields with JSON names (inline embeds flattened), their
//! types, the `patchStrategy`/`patchMergeKey` tags and the `+listType`,
//! `+listMapKey`, `+mapType` and `+structType` markers, plus the root type
//! of every kind (each struct embedding `TypeMeta`). Types that marshal
//! themselves (Time, Quantity, IntOrString, RawExtension, JSON, …) are
//! scalars or untyped.
//!
//! Re-run it against git repositories (bare mirrors or checkouts) of
//! kubernetes/api, kubernetes/apimachinery,
//! kubernetes/apiextensions-apiserver and kubernetes/kube-aggregator at the
//! targeted release:
//!
//! ```text
//! cargo run -p structured-merge-codegen -- API APIMACHINERY APIEXTENSIONS AGGREGATOR [REV]
//! ```
//!
//! e.g. with the mirrors under /work/.mirror:
//! `cargo run -p structured-merge-codegen -- /work/.mirror/kubernetes+{api,apimachinery,apiextensions-apiserver,kube-aggregator}/repo`.
//! REV defaults to `HEAD`.

mod emit;
mod gotype;
mod openapi;
mod resolve;
mod shape;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use go_types::golang::{tag_value, DeclBody, TypeExpr};
use go_types::source::{Loader, Repo};
use resolve::{definition_name, Resolver};

const META_V1: &str = "k8s.io/apimachinery/pkg/apis/meta/v1";
/// The meta.k8s.io/v1 envelopes the server writes around objects, added
/// to the JSON shape table only.
const META_KINDS: &[&str] = &[
    "Status",
    "Table",
    "WatchEvent",
    "PartialObjectMetadata",
    "PartialObjectMetadataList",
    "List",
];
/// What apimachinery's `metav1.AddToGroupVersion` registers, added to the
/// JSON shape table only: the unversioned types at `v1`, and `WatchEvent`
/// and the options types in every group version (and, by its `init`, the
/// options at meta.k8s.io/v1).
const UNVERSIONED_KINDS: &[&str] = &[
    "Status",
    "APIVersions",
    "APIGroupList",
    "APIGroup",
    "APIResourceList",
];
const GROUP_VERSION_KINDS: &[&str] = &[
    "WatchEvent",
    "ListOptions",
    "GetOptions",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
];
const EXTRA_ROOTS: &[&str] = &[
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
    "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1",
];

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("{0}: {1}")]
    Io(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Go(#[from] go_types::GoError),
    #[error("{0}")]
    Resolve(String),
    #[error("usage: structured-merge-codegen API APIMACHINERY APIEXTENSIONS AGGREGATOR [REV]")]
    Usage,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("structured-merge-codegen: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), CodegenError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dirs, rev) = match args.as_slice() {
        [a, b, c, d] => ([a, b, c, d], "HEAD"),
        [a, b, c, d, rev] => ([a, b, c, d], rev.as_str()),
        _ => return Err(CodegenError::Usage),
    };
    let modules = [
        "k8s.io/api",
        "k8s.io/apimachinery",
        "k8s.io/apiextensions-apiserver",
        "k8s.io/kube-aggregator",
    ];
    let repos = modules
        .iter()
        .zip(dirs)
        .map(|(m, d)| Repo {
            module: (*m).to_owned(),
            git_dir: PathBuf::from(d),
        })
        .collect();
    let loader = Loader::new(repos, rev);
    let revisions = loader.revisions()?;
    let mut roots = loader.api_packages("k8s.io/api", "")?;
    roots.extend(EXTRA_ROOTS.iter().map(|s| (*s).to_owned()));
    let mut resolver = Resolver::new(loader);
    let mut kinds = Vec::new();
    for pkg in &roots {
        kinds.extend(package_kinds(&mut resolver, pkg)?);
    }
    kinds.sort_by(|a, b| (&a.api_version, &a.kind).cmp(&(&b.api_version, &b.kind)));
    let structs = resolver.emitted();
    let heading = header(&revisions, kinds.len(), structs.len());
    write(
        "../structured-merge/src/generated/builtin.schema",
        &emit::render(&heading, &kinds, &structs),
    )?;
    let group_versions: BTreeSet<String> = kinds.iter().map(|k| k.api_version.clone()).collect();
    let meta_kinds = META_KINDS.iter().map(|name| ("meta.k8s.io/v1", *name));
    let unversioned = UNVERSIONED_KINDS.iter().map(|name| ("v1", *name));
    let per_version = GROUP_VERSION_KINDS.iter().flat_map(|name| {
        let options = *name != "WatchEvent";
        group_versions
            .iter()
            .map(String::as_str)
            .chain(options.then_some("meta.k8s.io/v1"))
            .map(move |gv| (gv, *name))
    });
    for (api_version, name) in meta_kinds.chain(unversioned).chain(per_version) {
        resolver.emit_struct(META_V1, name)?;
        let kind = emit::Kind {
            api_version: api_version.to_owned(),
            kind: name.to_owned(),
            type_name: definition_name(META_V1, name),
        };
        if !kinds
            .iter()
            .any(|k| k.api_version == kind.api_version && k.kind == kind.kind)
        {
            kinds.push(kind);
        }
    }
    let structs = resolver.emitted();
    let heading = header(&revisions, kinds.len(), structs.len());
    write(
        "../go-json/src/generated/shapes.table",
        &shape::render(&heading, &kinds, &structs),
    )?;
    write(
        "../kube-apiserver/src/controlplane/openapi/generated/fields.table",
        &openapi::render(&heading, &structs),
    )
}

/// The comment heading a generated file.
fn header(revisions: &[String], kinds: usize, types: usize) -> String {
    format!(
        "Generated by structured-merge-codegen from upstream's Go types; do not edit.\n\
         {}\n{kinds} kinds, {types} types.",
        revisions.join("\n"),
    )
}

/// Writes a generated file, relative to this crate's directory.
fn write(path: &str, text: &str) -> Result<(), CodegenError> {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::write(&out, text).map_err(|e| CodegenError::Io(out.clone(), e))?;
    println!("wrote {} ({} lines)", out.display(), text.lines().count());
    Ok(())
}

/// Emits every struct type of an API package and returns its kinds.
fn package_kinds(resolver: &mut Resolver, pkg: &str) -> Result<Vec<emit::Kind>, CodegenError> {
    let package = resolver.package(pkg)?;
    let group = package
        .group_name
        .clone()
        .ok_or_else(|| CodegenError::Resolve(format!("{pkg}: no GroupName in register.go")))?;
    let version = pkg.rsplit('/').next().unwrap_or(pkg);
    let api_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut names: Vec<&String> = package.types.keys().collect();
    names.sort();
    let mut kinds = Vec::new();
    for name in names {
        let decl = &package.types[name];
        let DeclBody::Struct(fields) = &decl.body else {
            continue;
        };
        resolver.emit_struct(pkg, name)?;
        let embeds_type_meta = fields.iter().any(|f| {
            f.name.is_none()
                && matches!(&f.ty, TypeExpr::Qualified(alias, n)
                    if n == "TypeMeta" && decl.imports.get(alias).map(String::as_str) == Some(META_V1))
                && tag_value(&f.tag, "json").is_none_or(|j| j.split(',').next() == Some(""))
        });
        if embeds_type_meta {
            kinds.push(emit::Kind {
                api_version: api_version.clone(),
                kind: name.clone(),
                type_name: definition_name(pkg, name),
            });
        }
    }
    Ok(kinds)
}
