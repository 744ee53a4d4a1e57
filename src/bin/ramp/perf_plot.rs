//! The PNG of `ramp perf sweep --plot FILE.png`: mean and p99 response time
//! against bit error rate (log-log), the model as lines, the measurement as
//! points, one colour per (transport, protocol, size). The loss-free point
//! is drawn at 1e-8 (a log axis has no 0). Drawn as `ramp bench --loggp
//! --plot` draws (`loggp_plot.rs`: its font, ranges and labels).

use plotters::prelude::*;

use crate::loggp_plot::{load_font, log_log_chart};
use crate::perf_measure::Row;
use crate::plot_lines::{legend, line};

/// Where the loss-free points go on the log axis.
const BER_ZERO_AT: f64 = 1e-8;

struct Series {
    name: String,
    model: Vec<(f64, f64)>,
    measured: Vec<(f64, f64)>,
}

fn series(rows: &[Row], p99: bool) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for r in rows {
        let name = format!("{} {} {} B", r.transport, r.protocol.name(), r.bytes);
        let x = if r.ber > 0.0 { r.ber } else { BER_ZERO_AT };
        let (m, y) = if p99 {
            (r.model.p99_us, r.p99)
        } else {
            (r.model.mean_us, r.mean)
        };
        let i = match out.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                out.push(Series {
                    name,
                    model: Vec::new(),
                    measured: Vec::new(),
                });
                out.len() - 1
            }
        };
        out[i].model.push((x, m));
        out[i].measured.push((x, y));
    }
    out
}

fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    text: bool,
    title: &str,
    lines: &[Series],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("plot: {e}");
    let pts = lines
        .iter()
        .flat_map(|l| l.model.iter().chain(l.measured.iter()).copied());
    let mut chart = log_log_chart(
        area,
        text,
        title,
        ("bit error rate (loss-free at 1e-8)", "response time, us"),
        &|v| format!("{v:.0e}"),
        pts,
    )?;
    for (i, l) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        line(&mut chart, text, &l.name, color, l.model.iter().copied())?;
        chart
            .draw_series(
                l.measured
                    .iter()
                    .map(|&p| Cross::new(p, 5, color.stroke_width(2))),
            )
            .map_err(e)?;
    }
    legend(&mut chart, text, 13, SeriesLabelPosition::UpperLeft)?;
    Ok(())
}

/// Writes the mean and p99 panels to `path`; the font used, or None.
pub fn write(path: &str, font: Option<&str>, rows: &[Row]) -> Result<Option<String>, String> {
    let font = load_font(font);
    let text = font.is_some();
    let root = BitMapBackend::new(path, (1400, 650)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("plot {path}: {e}");
    root.fill(&WHITE).map_err(e)?;
    let (left, right) = root.split_horizontally(700);
    panel(
        &left,
        text,
        "mean response time: model (lines), measured (x)",
        &series(rows, false),
    )?;
    panel(
        &right,
        text,
        "p99 response time: model (lines), measured (x)",
        &series(rows, true),
    )?;
    root.present().map_err(e)?;
    Ok(font)
}
