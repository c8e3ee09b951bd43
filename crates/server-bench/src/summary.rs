//! The Markdown `--targets` prints: the targets table of issue 19 (each
//! figure with its target and whether it is met), then the figures behind
//! it: creates by requests in flight against raw etcd, resident memory by
//! stored objects, and the read loads.

use std::fmt::Write;
use std::time::Duration;

use crate::load::Load;
use crate::report::{group, mib, micros, millis, seconds};
use crate::targets::{Backend, BackendFigures, Figures};
use crate::Args;

/// The targets (issue 19).
const CPU_PER_CREATE: Duration = Duration::from_micros(250);
const CPU_PER_GET: Duration = Duration::from_micros(50);
const LIST_ITEMS_PER_CPU_SECOND: f64 = 1e6;
const RSS_PER_OBJECT: f64 = 3000.0;
const START: Duration = Duration::from_millis(100);
const RESTART: Duration = Duration::from_secs(2);

/// Creates/s as a share of raw etcd's at the same concurrency.
fn create_ratio_target(backend: Backend) -> f64 {
    match backend {
        Backend::Embedded => 1.0,
        Backend::Etcd => 0.6,
    }
}

/// One row of the targets table: the figure per backend and whether it
/// meets the target.
struct Target {
    figure: String,
    measured: Vec<(Backend, String, bool)>,
    target: String,
}

impl Target {
    fn row(&self) -> String {
        // Each value names its backend, unless the figure does.
        let measured: Vec<String> = self
            .measured
            .iter()
            .map(
                |(backend, value, _)| match self.figure.contains(backend.label()) {
                    true => value.clone(),
                    false => format!("{value} ({})", backend.label()),
                },
            )
            .collect();
        let met: Vec<_> = self.measured.iter().filter(|m| m.2).collect();
        let status = if met.len() == self.measured.len() {
            "met".to_string()
        } else if met.is_empty() {
            "not met".to_string()
        } else {
            let on: Vec<_> = met.iter().map(|m| m.0.on()).collect();
            format!("met {} only", on.join(", "))
        };
        format!(
            "| {} | {} | {} | {status} |",
            self.figure,
            measured.join("; "),
            self.target
        )
    }
}

/// Renders the tables.
pub fn render(args: &Args, figures: &Figures) -> String {
    let mut out = String::new();
    let object_bytes = figures.backends.first().map_or(0, |b| b.object_bytes);
    let _ = writeln!(
        out,
        "kube-apiserver {} ({}); ConfigMaps with a {} B value ({} B as JSON); {:?} per \
         load; creates at {:?} in flight, GETs and LISTs at {}; HTTP/2 over {} \
         connection(s) with the admin's client certificate; raw etcd: create transactions \
         from the bench over {} gRPC connection(s)\n",
        figures.version,
        args.kube_apiserver.display(),
        args.value_bytes,
        object_bytes,
        args.seconds,
        args.steps,
        args.concurrency,
        args.connections,
        args.connections,
    );
    out.push_str("| figure | measured | target | status |\n|---|---|---|---|\n");
    if let Some((step, raw)) = figures.raw_etcd.last() {
        let _ = writeln!(
            out,
            "| raw etcd create transactions/s, {step} in flight | {} (p99 {}; etcd CPU {} per \
             transaction) | the reference | — |",
            group(raw.rate().round() as u64),
            raw.p99.map_or_else(|| "n/a".into(), micros),
            per_request(raw),
        );
    }
    for target in targets(args, figures) {
        let _ = writeln!(out, "{}", target.row());
    }
    creates_table(&mut out, figures);
    memory_table(&mut out, figures);
    reads_table(&mut out, args, figures);
    out
}

/// The rows of the targets table.
fn targets(args: &Args, figures: &Figures) -> Vec<Target> {
    let raw = figures.raw_etcd.last();
    let each = |f: &dyn Fn(&BackendFigures) -> (String, bool)| {
        figures
            .backends
            .iter()
            .map(|b| {
                let (value, met) = f(b);
                (b.backend, value, met)
            })
            .collect::<Vec<_>>()
    };
    let mut rows = Vec::new();
    for b in &figures.backends {
        let Some(((step, load), (_, raw))) = b.creates.last().zip(raw) else {
            continue;
        };
        let ratio = load.rate() / raw.rate().max(f64::MIN_POSITIVE);
        let wanted = create_ratio_target(b.backend);
        rows.push(Target {
            figure: format!("creates/s, {step} clients, {}", b.backend.on()),
            measured: vec![(
                b.backend,
                format!(
                    "{}, {ratio:.2}× raw etcd",
                    group(load.rate().round() as u64)
                ),
                ratio >= wanted,
            )],
            target: format!("≥ {wanted:.1}× raw etcd"),
        });
    }
    rows.push(Target {
        figure: "server CPU per create".into(),
        measured: each(&|b| cpu_figure(b.creates.last().map(|c| &c.1), CPU_PER_CREATE)),
        target: format!("≤ {}", millis(CPU_PER_CREATE)),
    });
    rows.push(Target {
        figure: "server CPU per GET of one object".into(),
        measured: each(&|b| cpu_figure(Some(&b.get), CPU_PER_GET)),
        target: format!("≤ {}", millis(CPU_PER_GET)),
    });
    let items = args.cache_list_objects;
    for (encoding, pick) in [
        ("JSON", (|b| &b.list_json) as fn(&BackendFigures) -> &Load),
        ("protobuf", |b| &b.list_protobuf),
    ] {
        rows.push(Target {
            figure: format!(
                "LIST of {} objects from the watch cache, {encoding}",
                group(items)
            ),
            measured: each(&|b| list_figure(pick(b), items)),
            target: "≥ 1 M items per server CPU-second".into(),
        });
    }
    rows.extend(memory_targets(figures));
    rows.push(Target {
        figure: "start to `/readyz` ok, empty data dir (certificates included)".into(),
        measured: each(&|b| (millis(b.startup.readyz), b.startup.readyz <= START)),
        target: format!("≤ {}", millis(START)),
    });
    let restarted = figures.backends.first().map_or(0, |b| b.restart_objects);
    rows.push(Target {
        figure: format!("restart to `/readyz` ok with {} objects", group(restarted)),
        measured: each(&|b| (millis(b.restart.readyz), b.restart.readyz <= RESTART)),
        target: format!("≤ {}", seconds(RESTART)),
    });
    rows
}

/// Resident memory per stored object at each measured count.
fn memory_targets(figures: &Figures) -> Vec<Target> {
    let counts: Vec<u64> = figures
        .backends
        .first()
        .map(|b| b.rss.iter().map(|r| r.0).collect())
        .unwrap_or_default();
    let object_bytes = figures.backends.first().map_or(0, |b| b.object_bytes);
    counts
        .into_iter()
        .map(|count| Target {
            figure: format!(
                "resident memory per stored object (≈ {:.1} KB of JSON each), {} objects",
                object_bytes as f64 / 1000.0,
                group(count)
            ),
            measured: figures
                .backends
                .iter()
                .filter_map(|b| {
                    let per = per_object(b, count)?;
                    Some((b.backend, kb(per), per <= RSS_PER_OBJECT))
                })
                .collect(),
            target: format!("≤ {}", kb(RSS_PER_OBJECT)),
        })
        .collect()
}

/// VmRSS growth per object from the base to `count` stored objects.
fn per_object(b: &BackendFigures, count: u64) -> Option<f64> {
    let rss = b.rss.iter().find(|r| r.0 == count)?.1;
    (count > 0).then(|| rss.saturating_sub(b.rss_base) as f64 / count as f64)
}

fn kb(bytes: f64) -> String {
    format!("{:.1} KB", bytes / 1000.0)
}

fn cpu_figure(load: Option<&Load>, target: Duration) -> (String, bool) {
    match load.and_then(Load::cpu_per_request) {
        Some(cpu) => (millis(cpu), cpu <= target),
        None => ("n/a".into(), false),
    }
}

fn list_figure(load: &Load, items: u64) -> (String, bool) {
    let Some(cpu) = load.cpu_per_request() else {
        return ("n/a".into(), false);
    };
    let per_second = items as f64 / cpu.as_secs_f64().max(f64::MIN_POSITIVE);
    (
        format!(
            "{} of server CPU per list, {} items per CPU-s",
            millis(cpu),
            group(per_second.round() as u64)
        ),
        per_second >= LIST_ITEMS_PER_CPU_SECOND,
    )
}

fn per_request(load: &Load) -> String {
    load.cpu_per_request().map_or_else(|| "n/a".into(), millis)
}

/// Creates/s by requests in flight: raw etcd and each backend.
fn creates_table(out: &mut String, figures: &Figures) {
    out.push_str(
        "\n| requests in flight | writer | creates/s | × raw etcd | p50 | p99 | errors | \
         CPU per create |\n|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (i, (step, raw)) in figures.raw_etcd.iter().enumerate() {
        let series = std::iter::once(("raw etcd (etcd's CPU)", raw)).chain(
            figures
                .backends
                .iter()
                .filter_map(|b| Some((b.backend.label(), &b.creates.get(i)?.1))),
        );
        for (writer, load) in series {
            let _ = writeln!(
                out,
                "| {step} | {writer} | {} | {:.2} | {} | {} | {} | {} |",
                group(load.rate().round() as u64),
                load.rate() / raw.rate().max(f64::MIN_POSITIVE),
                load.p50.map_or_else(|| "n/a".into(), micros),
                load.p99.map_or_else(|| "n/a".into(), micros),
                group(load.errors),
                per_request(load),
            );
        }
    }
}

/// VmRSS by stored objects, per backend, and after the restart.
fn memory_table(out: &mut String, figures: &Figures) {
    out.push_str("\n| stored objects | server | VmRSS | per object over the empty server |\n");
    out.push_str("|---:|---|---:|---:|\n");
    for b in &figures.backends {
        let label = b.backend.label();
        let _ = writeln!(out, "| 0 | {label} | {} | — |", mib(b.rss_base));
        for &(count, rss) in &b.rss {
            let per = per_object(b, count).map_or_else(|| "n/a".into(), kb);
            let _ = writeln!(out, "| {} | {label} | {} | {per} |", group(count), mib(rss));
        }
        let restarted = b.restart.memory.rss.saturating_sub(b.rss_base) as f64;
        let _ = writeln!(
            out,
            "| {} | {label}, just restarted | {} | {} |",
            group(b.restart_objects),
            mib(b.restart.memory.rss),
            kb(restarted / b.restart_objects.max(1) as f64),
        );
    }
}

/// The read loads, with their latencies.
fn reads_table(out: &mut String, args: &Args, figures: &Figures) {
    out.push_str(
        "\n| load | server | requests | errors | requests/s | p50 | p99 | server CPU-s | \
         CPU per request |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let list = group(args.cache_list_objects);
    for b in &figures.backends {
        for (name, load) in [
            ("GET one ConfigMap".to_string(), &b.get),
            (format!("LIST {list} ConfigMaps, JSON"), &b.list_json),
            (
                format!("LIST {list} ConfigMaps, protobuf"),
                &b.list_protobuf,
            ),
        ] {
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |",
                b.backend.label(),
                group(load.requests),
                group(load.errors),
                group(load.rate().round() as u64),
                load.p50.map_or_else(|| "n/a".into(), micros),
                load.p99.map_or_else(|| "n/a".into(), micros),
                seconds(load.cpu),
                per_request(load),
            );
        }
    }
    let failed = figures.backends.iter().flat_map(|b| {
        [&b.get, &b.list_json, &b.list_protobuf]
            .into_iter()
            .chain(b.creates.iter().map(|c| &c.1))
            .filter_map(move |l| Some((b.backend.label(), l.first_error.as_deref()?)))
    });
    for (label, error) in failed {
        let _ = writeln!(out, "\nfirst error on the {label}: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(met: &[(Backend, bool)]) -> String {
        Target {
            figure: "f".into(),
            measured: met.iter().map(|&(b, m)| (b, "1 ms".into(), m)).collect(),
            target: "≤ 2 ms".into(),
        }
        .row()
    }

    #[test]
    fn status_says_which_backends_meet_the_target() {
        use Backend::{Embedded, Etcd};
        assert_eq!(
            target(&[(Embedded, true), (Etcd, true)]),
            "| f | 1 ms (embedded store); 1 ms (etcd) | ≤ 2 ms | met |"
        );
        assert!(target(&[(Embedded, false), (Etcd, false)]).ends_with("| not met |"));
        assert!(target(&[(Embedded, true), (Etcd, false)])
            .ends_with("| met on the embedded store only |"));
        assert!(target(&[(Embedded, false), (Etcd, true)]).ends_with("| met on etcd only |"));
        assert!(target(&[(Etcd, true)]).ends_with("| met |"));
    }

    #[test]
    fn a_figure_naming_its_backend_shows_the_bare_value() {
        let row = Target {
            figure: "creates/s, on etcd".into(),
            measured: vec![(Backend::Etcd, "5".into(), false)],
            target: "t".into(),
        }
        .row();
        assert_eq!(row, "| creates/s, on etcd | 5 | t | not met |");
    }

    #[test]
    fn memory_per_object_is_growth_over_the_empty_server() {
        let load = || Load::new(crate::load::Tally::new().expect("a tally"), Duration::ZERO);
        let startup = crate::server::Startup {
            kubeconfig: Duration::ZERO,
            livez: Duration::ZERO,
            readyz: Duration::ZERO,
            memory: crate::procfs::Memory { rss: 0, peak: 0 },
            cpu: Duration::ZERO,
        };
        let b = BackendFigures {
            backend: Backend::Embedded,
            startup,
            object_bytes: 1400,
            rss_base: 1_000_000,
            rss: vec![(1000, 4_000_000)],
            restart: startup,
            restart_objects: 1000,
            get: load(),
            list_json: load(),
            list_protobuf: load(),
            creates: Vec::new(),
        };
        assert_eq!(per_object(&b, 1000), Some(3000.0));
        assert_eq!(per_object(&b, 10), None);
        assert_eq!(kb(3000.0), "3.0 KB");
    }
}
