//! The PNG of `ramp bench --loggp --plot FILE.png`: cost per message
//! against burst size and bandwidth against message size (both log-log),
//! one line per transport and baseline. Drawn with `plotters` (bitmap
//! backend, its pure-Rust PNG encoder); text with `ab_glyph` from a
//! TrueType font read at run time (Debian's fonts-dejavu-core). Without a
//! font the lines are drawn without any text, and the caller says so.

use plotters::prelude::*;

use crate::plot_lines::{legend, line};

/// Where a sans-serif TrueType font is looked for.
const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// One line: its name and its points.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Registers the first font found (`font`, else the usual places) as
/// "sans-serif": its path, or None.
pub(crate) fn load_font(font: Option<&str>) -> Option<String> {
    let places: Vec<&str> = font.map_or(FONTS.to_vec(), |f| vec![f]);
    for path in places {
        if let Ok(bytes) = std::fs::read(path) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Some(path.to_string());
            }
        }
    }
    None
}

/// The range of the positive values `v`, widened a little, for a log axis.
pub(crate) fn log_range(v: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = v
        .filter(|x| x.is_finite() && *x > 0.0)
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    if lo > hi {
        return 1.0..10.0;
    }
    lo / 1.5..(hi * 1.5).max(lo * 2.0)
}

/// The power of ten at or just below `v` (a hair lower: the axis's first
/// key point is the first power of ten not below the range's start).
pub(crate) fn decade_below(v: f64) -> f64 {
    10f64.powf(v.log10().floor()) * 0.999
}

/// An axis label: 3 significant digits at most, k and M for thousands and
/// millions.
pub(crate) fn tick(v: &f64) -> String {
    let v = *v;
    if v >= 1e6 {
        format!("{}M", tick(&(v / 1e6)))
    } else if v >= 1e4 {
        format!("{}k", tick(&(v / 1e3)))
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else if v >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The log-log chart of both plots (`perf_plot.rs` too): ranges from
/// `points`, the y axis from a whole decade (a range from 0.15 us showed no
/// label below 1.0), the caption and, with a font, a light mesh labelled
/// `descs` (the mesh draws its labels even when asked for none: without a
/// font, no mesh, the lines only).
pub(crate) fn log_log_chart<'a, 'b>(
    area: &'a DrawingArea<BitMapBackend<'b>, plotters::coord::Shift>,
    text: bool,
    title: &str,
    descs: (&str, &str),
    x_label: &dyn Fn(&f64) -> String,
    points: impl Iterator<Item = (f64, f64)> + Clone,
) -> Result<LogLogChart<'a, 'b>, String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("plot: {e}");
    let xr = log_range(points.clone().map(|p| p.0));
    let yr = log_range(points.map(|p| p.1));
    let yr = decade_below(yr.start)..yr.end;
    let mut b = ChartBuilder::on(area);
    b.margin(12)
        .x_label_area_size(if text { 45 } else { 5 })
        .y_label_area_size(if text { 70 } else { 5 });
    if text {
        b.caption(title, ("sans-serif", 20));
    }
    let mut chart = b
        .build_cartesian_2d(xr.log_scale(), yr.log_scale())
        .map_err(e)?;
    if text {
        chart
            .configure_mesh()
            .light_line_style(RGBColor(236, 236, 236))
            .x_desc(descs.0)
            .y_desc(descs.1)
            .x_label_formatter(x_label)
            .y_label_formatter(&tick)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(e)?;
    }
    Ok(chart)
}

/// What `log_log_chart` gives.
pub(crate) type LogLogChart<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<
        plotters::coord::combinators::LogCoord<f64>,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    text: bool,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    lines: &[Line],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("plot: {e}");
    let pts = lines.iter().flat_map(|l| l.points.iter().copied());
    let mut chart = log_log_chart(area, text, title, (x_desc, y_desc), &tick, pts)?;
    for (i, l) in lines.iter().enumerate() {
        if l.points.is_empty() {
            continue;
        }
        let color = Palette99::pick(i).to_rgba();
        line(&mut chart, text, &l.name, color, l.points.iter().copied())?;
        chart
            .draw_series(l.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(e)?;
    }
    legend(&mut chart, text, 14, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

/// Writes the two panels to `path`; the font used, or None (no text).
pub fn write(
    path: &str,
    font: Option<&str>,
    bursts: &[Line],
    bandwidth: &[Line],
) -> Result<Option<String>, String> {
    let font = load_font(font);
    let text = font.is_some();
    let root = BitMapBackend::new(path, (1400, 600)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("plot {path}: {e}");
    root.fill(&WHITE).map_err(e)?;
    let (left, right) = root.split_horizontally(700);
    panel(
        &left,
        text,
        "LogGP: cost per message against burst size",
        "burst size (messages)",
        "microseconds per message",
        bursts,
    )?;
    panel(
        &right,
        text,
        "bandwidth against message size",
        "message size (bytes)",
        "MiB/s",
        bandwidth,
    )?;
    root.present().map_err(e)?;
    Ok(font)
}
