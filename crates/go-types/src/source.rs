//! Reads Go packages from upstream's git repositories (bare mirrors or
//! checkouts) at a given revision, by import path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use crate::golang::{self, TypeDecl};
use crate::GoError;

/// A repository and the import path prefix it serves.
#[derive(Debug, Clone)]
pub struct Repo {
    /// `k8s.io/api`.
    pub module: String,
    pub git_dir: PathBuf,
}

/// The type declarations of one package.
#[derive(Debug)]
pub struct Package {
    pub types: HashMap<String, TypeDecl>,
    /// `GroupName` declared in the package's register.go, if any.
    pub group_name: Option<String>,
    /// The package's string constants, by name.
    pub constants: HashMap<String, String>,
}

pub struct Loader {
    repos: Vec<Repo>,
    rev: String,
    cache: HashMap<String, Rc<Package>>,
}

impl Loader {
    pub fn new(repos: Vec<Repo>, rev: impl Into<String>) -> Self {
        Loader {
            repos,
            rev: rev.into(),
            cache: HashMap::new(),
        }
    }

    /// A loader over in-memory packages (import path, Go source).
    pub fn from_sources(sources: &[(&str, &str)]) -> Result<Self, GoError> {
        let mut loader = Loader::new(Vec::new(), "HEAD");
        for (pkg, src) in sources {
            let mut decls = Vec::new();
            golang::parse_file(src, pkg, &mut decls)?;
            let types = decls.into_iter().map(|d| (d.name.clone(), d)).collect();
            let package = Package {
                types,
                group_name: declared_group_name(src),
                constants: golang::string_constants(src).into_iter().collect(),
            };
            loader.cache.insert((*pkg).to_owned(), Rc::new(package));
        }
        Ok(loader)
    }

    /// The repository and directory of an import path.
    fn locate(&self, pkg: &str) -> Result<(&Repo, String), GoError> {
        self.repos
            .iter()
            .find_map(|r| {
                let rest = pkg.strip_prefix(r.module.as_str())?;
                (rest.is_empty() || rest.starts_with('/'))
                    .then(|| (r, rest.trim_start_matches('/').to_owned()))
            })
            .ok_or_else(|| GoError::Resolve(format!("no repository for package {pkg}")))
    }

    pub fn load(&mut self, pkg: &str) -> Result<Rc<Package>, GoError> {
        if let Some(p) = self.cache.get(pkg) {
            return Ok(p.clone());
        }
        let (repo, dir) = self.locate(pkg)?;
        let git_dir = repo.git_dir.clone();
        let listing = git(
            &git_dir,
            &["ls-tree", "--name-only", &format!("{}:{dir}", self.rev)],
        )?;
        let mut decls = Vec::new();
        let mut group_name = None;
        let mut constants = HashMap::new();
        for file in listing.lines().filter(|f| is_type_source(f)) {
            let path = if dir.is_empty() {
                file.to_owned()
            } else {
                format!("{dir}/{file}")
            };
            let src = git(&git_dir, &["show", &format!("{}:{path}", self.rev)])?;
            if file == "register.go" {
                group_name = declared_group_name(&src);
            }
            golang::parse_file(&src, &format!("{pkg}/{file}"), &mut decls)?;
            constants.extend(golang::string_constants(&src));
        }
        let mut types = HashMap::new();
        for d in decls {
            // Files selected by build tags may declare a type twice.
            types.entry(d.name.clone()).or_insert(d);
        }
        let package = Rc::new(Package {
            types,
            group_name,
            constants,
        });
        self.cache.insert(pkg.to_owned(), package.clone());
        Ok(package)
    }

    /// `module commit` of every repository, for the generated file's header.
    pub fn revisions(&self) -> Result<Vec<String>, GoError> {
        self.repos
            .iter()
            .map(|r| {
                let commit = git(&r.git_dir, &["rev-parse", &self.rev])?;
                Ok(format!("{} {}", r.module, commit.trim()))
            })
            .collect()
    }

    /// The contents of every file named `name` in a repository, sorted by
    /// path.
    pub fn files_named(&self, module: &str, name: &str) -> Result<Vec<String>, GoError> {
        let repo = self.repo(module)?;
        let listing = git(&repo.git_dir, &["ls-tree", "-r", "--name-only", &self.rev])?;
        let mut paths: Vec<&str> = listing
            .lines()
            .filter(|p| p.rsplit('/').next() == Some(name))
            .collect();
        paths.sort_unstable();
        paths
            .into_iter()
            .map(|p| git(&repo.git_dir, &["show", &format!("{}:{p}", self.rev)]))
            .collect()
    }

    fn repo(&self, module: &str) -> Result<&Repo, GoError> {
        self.repos
            .iter()
            .find(|r| r.module == module)
            .ok_or_else(|| GoError::Resolve(format!("no repository for {module}")))
    }

    /// Directories under `dir` of a repository that hold a register.go.
    pub fn api_packages(&self, module: &str, dir: &str) -> Result<Vec<String>, GoError> {
        let repo = self.repo(module)?;
        let spec = if dir.is_empty() {
            self.rev.clone()
        } else {
            format!("{}:{dir}", self.rev)
        };
        let listing = git(&repo.git_dir, &["ls-tree", "-r", "--name-only", &spec])?;
        let mut pkgs: Vec<String> = listing
            .lines()
            .filter_map(|f| f.strip_suffix("/register.go"))
            .map(|d| {
                let full = if dir.is_empty() {
                    d.to_owned()
                } else {
                    format!("{dir}/{d}")
                };
                format!("{module}/{full}")
            })
            .collect();
        pkgs.sort();
        Ok(pkgs)
    }
}

fn is_type_source(file: &str) -> bool {
    file.ends_with(".go")
        && !file.ends_with("_test.go")
        && !file.starts_with("zz_")
        && !file.contains("generated")
        && !file.ends_with(".pb.go")
}

fn declared_group_name(src: &str) -> Option<String> {
    src.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("const GroupName = ")?;
        Some(rest.trim().trim_matches('"').to_owned())
    })
}

fn git(dir: &Path, args: &[&str]) -> Result<String, GoError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| GoError::Io(dir.to_owned(), e))?;
    if !out.status.success() {
        return Err(GoError::Git(
            format!("git -C {} {}", dir.display(), args.join(" ")),
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| GoError::Git(args.join(" "), e.to_string()))
}
