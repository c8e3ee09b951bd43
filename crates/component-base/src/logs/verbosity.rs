//! klog's verbosity: the global `-v` level, changeable at run time
//! (`/debug/flags/v`), and `--vmodule`'s per-file levels (klog's `V`,
//! `Level` and `moduleSpec`).
//!
//! Our events are `tracing` events; their level maps onto klog's V levels
//! so that `-v` means what it means upstream: `info!` is V(0), `debug!`
//! V(2) and `trace!` V(5), and an event may name its own level with a `v`
//! field (`debug!(v = 4, ...)`). Warnings and errors always show.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::RwLock;

use tracing::Level;

static VERBOSITY: AtomicU32 = AtomicU32::new(0);
static VMODULE: RwLock<Vec<Filter>> = RwLock::new(Vec::new());

/// The V level an event of `level` has when it names none.
pub fn default_v(level: &Level) -> u32 {
    match *level {
        Level::TRACE => 5,
        Level::DEBUG => 2,
        _ => 0,
    }
}

/// The tracing level that lets events up to V(`v`) through.
pub fn level_for(v: u32) -> Level {
    match v {
        0..=1 => Level::INFO,
        2..=4 => Level::DEBUG,
        _ => Level::TRACE,
    }
}

/// The global verbosity (`-v`).
pub fn verbosity() -> u32 {
    VERBOSITY.load(Ordering::Relaxed)
}

/// Sets the global verbosity; events newly enabled show at once.
pub fn set_verbosity(v: u32) {
    VERBOSITY.store(v, Ordering::Relaxed);
    tracing_core::callsite::rebuild_interest_cache();
}

/// Sets `--vmodule` (already parsed by [`parse_vmodule`]).
pub fn set_vmodule(filters: Vec<Filter>) {
    *VMODULE.write().unwrap_or_else(|e| e.into_inner()) = filters;
    tracing_core::callsite::rebuild_interest_cache();
}

/// The highest level anything may log at: the global one or a vmodule's.
pub fn max_v() -> u32 {
    let vmodule = VMODULE.read().unwrap_or_else(|e| e.into_inner());
    vmodule.iter().map(|f| f.level).fold(verbosity(), u32::max)
}

/// klog's `V(level).Enabled()` for code in `file` (a source path).
pub fn enabled(level: u32, file: Option<&str>) -> bool {
    if verbosity() >= level {
        return true;
    }
    let vmodule = VMODULE.read().unwrap_or_else(|e| e.into_inner());
    if vmodule.is_empty() {
        return false;
    }
    let Some(file) = file else {
        return false;
    };
    vmodule
        .iter()
        .find(|f| f.matches(file))
        .is_some_and(|f| f.level >= level)
}

/// One `pattern=N` item of `--vmodule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pattern: String,
    level: u32,
}

impl Filter {
    /// As klog: a pattern with a `/` matches the whole path, any other
    /// the file's name, both without the `.rs` extension; `*` and `?` are
    /// globs that stop at `/`. A `mod.rs` file also answers to the name of
    /// its directory (the module's name).
    fn matches(&self, file: &str) -> bool {
        let path = file.strip_suffix(".rs").unwrap_or(file);
        if self.pattern.contains('/') {
            return glob(self.pattern.as_bytes(), path.as_bytes());
        }
        let mut names = path.rsplit('/');
        let base = names.next().unwrap_or(path);
        if glob(self.pattern.as_bytes(), base.as_bytes()) {
            return true;
        }
        base == "mod"
            && names
                .next()
                .is_some_and(|dir| glob(self.pattern.as_bytes(), dir.as_bytes()))
    }
}

/// Parses `--vmodule` (`pattern=N,...`), with klog's messages.
pub fn parse_vmodule(raw: &str) -> Result<Vec<Filter>, String> {
    let mut filters = Vec::new();
    for item in raw.split(',').filter(|item| !item.is_empty()) {
        let Some((pattern, level)) = item.split_once('=').filter(|(p, _)| !p.is_empty()) else {
            return Err(format!("{item:?} does not have the pattern=N format"));
        };
        let level = level
            .parse::<u32>()
            .ok()
            .filter(|level| i32::try_from(*level).is_ok())
            .ok_or_else(|| format!("parsing verbosity in {item:?}: strconv.ParseUint: parsing {level:?}: invalid syntax"))?;
        filters.push(Filter {
            pattern: pattern.to_owned(),
            level,
        });
    }
    Ok(filters)
}

/// Go's `filepath.Match` for `*` and `?` (neither crosses a `/`).
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len())
            .take_while(|&i| i == 0 || name[i - 1] != b'/')
            .any(|i| glob(rest, &name[i..])),
        Some((b'?', rest)) => name
            .split_first()
            .is_some_and(|(c, name)| *c != b'/' && glob(rest, name)),
        Some((c, rest)) => name
            .split_first()
            .is_some_and(|(n, name)| n == c && glob(rest, name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(pattern: &str, level: u32) -> Filter {
        Filter {
            pattern: pattern.into(),
            level,
        }
    }

    #[test]
    fn patterns_match_file_names_as_klog() {
        let file = "crates/apiserver/src/filters/httplog.rs";
        assert!(filter("httplog", 3).matches(file));
        assert!(filter("http*", 3).matches(file));
        assert!(filter("httplo?", 3).matches(file));
        assert!(!filter("http", 3).matches(file));
        assert!(filter("crates/*/src/filters/*", 3).matches(file));
        assert!(!filter("*/filters/*", 3).matches(file));
        assert!(!filter("filters/*", 3).matches(file));
        assert!(filter("crates/apiserver/src/filters/httplog", 3).matches(file));
        // A module in a mod.rs answers to its directory's name.
        assert!(filter("filters", 3).matches("crates/apiserver/src/filters/mod.rs"));
    }

    #[test]
    fn vmodule_parses_with_klogs_messages() {
        assert_eq!(
            parse_vmodule("httplog=3,store*=5").unwrap(),
            [filter("httplog", 3), filter("store*", 5)]
        );
        assert_eq!(parse_vmodule("").unwrap(), []);
        assert_eq!(
            parse_vmodule("x").unwrap_err(),
            "\"x\" does not have the pattern=N format"
        );
        assert!(parse_vmodule("x=a").unwrap_err().contains("invalid syntax"));
    }

    #[test]
    fn levels_map_onto_tracing() {
        assert_eq!(default_v(&Level::INFO), 0);
        assert_eq!(default_v(&Level::DEBUG), 2);
        assert_eq!(default_v(&Level::TRACE), 5);
        assert_eq!(level_for(1), Level::INFO);
        assert_eq!(level_for(3), Level::DEBUG);
        assert_eq!(level_for(9), Level::TRACE);
    }
}
