//! The plots `--targets` writes with `--plot-dir` (SVG, drawn by
//! `plotters` from the measured figures): creates/s against requests in
//! flight for raw etcd and each backend (`throughput.svg`), and the
//! server's resident memory against stored objects (`memory.svg`).

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::targets::Figures;
use crate::BenchError;

const SIZE: (u32, u32) = (800, 480);

/// One line of a plot: its name and its points.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

/// Writes `throughput.svg` and `memory.svg` into `dir`.
pub fn write_all(dir: &Path, figures: &Figures) -> Result<(), BenchError> {
    std::fs::create_dir_all(dir)?;
    let rate = |loads: &[(usize, crate::load::Load)]| {
        loads
            .iter()
            .map(|(step, load)| (*step as f64, load.rate()))
            .collect()
    };
    let mut throughput = vec![Series {
        name: "raw etcd (create transactions)".into(),
        points: rate(&figures.raw_etcd),
    }];
    throughput.extend(figures.backends.iter().map(|b| Series {
        name: format!("kube-apiserver {}", b.backend.on()),
        points: rate(&b.creates),
    }));
    draw(
        &dir.join("throughput.svg"),
        "Creates/s against requests in flight (1 KiB ConfigMaps)",
        ("requests in flight (log scale)", "creates/s"),
        &throughput,
        true,
    )?;
    let memory: Vec<Series> = figures
        .backends
        .iter()
        .map(|b| Series {
            name: format!("kube-apiserver {}", b.backend.on()),
            points: std::iter::once((0.0, b.rss_base))
                .chain(b.rss.iter().copied().map(|(n, rss)| (n as f64, rss)))
                .map(|(n, rss)| (n, rss as f64 / (1024.0 * 1024.0)))
                .collect(),
        })
        .collect();
    draw(
        &dir.join("memory.svg"),
        "Server resident memory (VmRSS) against stored ConfigMaps",
        ("stored objects", "VmRSS, MiB"),
        &memory,
        false,
    )
}

/// Draws `series` as lines with dots; `log_x` puts x on a log scale.
fn draw(
    path: &Path,
    title: &str,
    descs: (&str, &str),
    series: &[Series],
    log_x: bool,
) -> Result<(), BenchError> {
    let points = || series.iter().flat_map(|s| s.points.iter().copied());
    let x_max = points().map(|p| p.0).fold(1.0, f64::max);
    let y_max = points().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let drawn = if log_x {
        chart(
            &root,
            title,
            descs,
            (1.0..x_max * 1.2).log_scale(),
            y_max,
            series,
        )
    } else {
        chart(&root, title, descs, 0.0..x_max * 1.05, y_max, series)
    };
    drawn
        .and_then(|()| root.present())
        .map_err(|e| BenchError::Plot(format!("{}: {e}", path.display())))
}

type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Draws the axes over `x` and `0..y_max`, then each series with a legend
/// entry.
fn chart<'a, X>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    x: X,
    y_max: f64,
    series: &[Series],
) -> DrawResult
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
}
