//! The PNG of `ramp bench --rails --plot FILE.png`, two panels over the
//! same time axis: above, Mbit/s sent on each path (one line per path that
//! carried data); below, the total of new data acknowledged. On both, the
//! path events as vertical lines (failed red, recovered green, partitioned
//! purple, rejoined blue; a rail's link going down black, up grey), labelled at the top of the upper panel, one
//! label per kind and sample ("failed x2": two paths failed between the
//! same two samples), staggered when close: MN-uDAPL's failure figure. Font and fallbacks as
//! `loggp_plot.rs`.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::bench_rails::Trace;
use crate::loggp_plot::load_font;

/// A line of a panel: its name, colour and points (seconds, Mbit/s).
type Line = (String, RGBAColor, Vec<(f64, f64)>);

fn event_color(what: &str) -> RGBColor {
    match what {
        "failed" => RGBColor(220, 30, 30),
        "recovered" => RGBColor(20, 150, 40),
        "partitioned" => RGBColor(140, 40, 170),
        // a rail's own link (`bench_links.rs`): the cut, and its mending
        w if w.starts_with("link") && w.ends_with("down") => RGBColor(0, 0, 0),
        w if w.starts_with("link") => RGBColor(150, 150, 150),
        _ => RGBColor(30, 80, 220),
    }
}

/// The events, one per (sample, kind), with their counts.
fn marks(tr: &Trace) -> Vec<(f64, &str, usize)> {
    let mut marks: Vec<(f64, &str, usize)> = Vec::new();
    for (t, what, _) in &tr.events {
        match marks.iter_mut().find(|m| m.0 == *t && m.1 == *what) {
            Some(m) => m.2 += 1,
            None => marks.push((*t, what, 1)),
        }
    }
    marks
}

/// One panel: `lines` (name, colour, points) against time, the events
/// marked (labelled when `labels`).
fn panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    text: bool,
    title: &str,
    t_end: f64,
    lines: &[Line],
    marks: &[(f64, &str, usize)],
    labels: bool,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<_>| format!("plot: {e}");
    let y_max = lines
        .iter()
        .flat_map(|l| l.2.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * if labels { 1.35 } else { 1.1 };
    let mut b = ChartBuilder::on(area);
    b.margin(12)
        .x_label_area_size(if text { 40 } else { 5 })
        .y_label_area_size(if text { 70 } else { 5 });
    if text {
        b.caption(title, ("sans-serif", 18));
    }
    let mut chart = b.build_cartesian_2d(0.0..t_end, 0.0..y_max).map_err(e)?;
    if text {
        chart
            .configure_mesh()
            .light_line_style(RGBColor(236, 236, 236))
            .x_desc("time, s")
            .y_desc("Mbit/s")
            .x_label_formatter(&|v| format!("{v:.1}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(e)?;
    }
    let mut row = 0;
    for (k, &(t, what, n)) in marks.iter().enumerate() {
        let c = event_color(what);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(t, 0.0), (t, y_max)],
                c.stroke_width(1),
            )))
            .map_err(e)?;
        // staggered when close to the one before, so that labels stay readable
        row = match k {
            0 => 0,
            _ if t - marks[k - 1].0 < t_end / 40.0 => row + 1,
            _ => 0,
        };
        if text && labels {
            let y = y_max * (0.97 - 0.06 * (row % 4) as f64);
            let label = match n {
                1 => format!(" {what}"),
                n => format!(" {what} x{n}"),
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (t, y),
                    ("sans-serif", 13).into_font().color(&c),
                )))
                .map_err(e)?;
        }
    }
    for (name, color, pts) in lines {
        let color = *color;
        let s = chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(e)?;
        if text {
            s.label(name.clone()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    if text {
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(e)?;
    }
    Ok(())
}

/// Writes the plot of `tr` to `path`; the font used, or None.
pub fn write(path: &str, font: Option<&str>, tr: &Trace) -> Result<Option<String>, String> {
    let font = load_font(font);
    let text = font.is_some();
    let root = BitMapBackend::new(path, (1400, 900)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("plot {path}: {e}");
    root.fill(&WHITE).map_err(e)?;
    let t_end = tr.rows.last().map_or(1.0, |r| r.0).max(0.1);
    // the paths that carried anything (the others stay off the plot)
    let paths: Vec<Line> = (0..tr.paths.len())
        .filter(|&i| tr.rows.iter().any(|r| r.1.get(i).is_some_and(|&v| v > 0.5)))
        .enumerate()
        .map(|(n, i)| {
            let pts = tr
                .rows
                .iter()
                .map(|(t, row, _)| (*t, row.get(i).copied().unwrap_or(0.0)));
            (
                format!("p{i}: {}", tr.paths[i]),
                Palette99::pick(n + 1).to_rgba(),
                pts.collect(),
            )
        })
        .collect();
    let total = vec![(
        "total acknowledged".to_string(),
        BLACK.to_rgba(),
        tr.rows.iter().map(|(t, _, v)| (*t, *v)).collect(),
    )];
    let marks = marks(tr);
    let (upper, lower) = root.split_vertically(560);
    panel(
        &upper,
        text,
        "ramp bench --rails: Mbit/s sent on each path (local rail -> peer address), path events",
        t_end,
        &paths,
        &marks,
        true,
    )?;
    panel(
        &lower,
        text,
        "new data acknowledged, all paths",
        t_end,
        &total,
        &marks,
        false,
    )?;
    root.present().map_err(e)?;
    Ok(font)
}
