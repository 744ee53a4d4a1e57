//! The PNG of `ramp bench --rails --plot FILE.png`: Mbit/s sent on each
//! path against time, one line per path that carried data, the total of
//! new data acknowledged in black, and the path events as vertical lines
//! (failed red, recovered green, partitioned purple, rejoined blue),
//! labelled at the top (one label per kind and sample: "failed x2" when
//! two paths failed between the same two samples): MN-uDAPL's failure
//! figure. Font and fallbacks as `loggp_plot.rs`.

use plotters::prelude::*;

use crate::bench_rails::Trace;
use crate::loggp_plot::load_font;

fn event_color(what: &str) -> RGBColor {
    match what {
        "failed" => RGBColor(220, 30, 30),
        "recovered" => RGBColor(20, 150, 40),
        "partitioned" => RGBColor(140, 40, 170),
        _ => RGBColor(30, 80, 220),
    }
}

/// Writes the plot of `tr` to `path`; the font used, or None.
pub fn write(path: &str, font: Option<&str>, tr: &Trace) -> Result<Option<String>, String> {
    let font = load_font(font);
    let text = font.is_some();
    let root = BitMapBackend::new(path, (1400, 650)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("plot {path}: {e}");
    root.fill(&WHITE).map_err(e)?;
    let t_end = tr.rows.last().map_or(1.0, |r| r.0).max(0.1);
    let y_max = tr
        .rows
        .iter()
        .flat_map(|(_, row, total)| row.iter().chain(std::iter::once(total)))
        .fold(1.0f64, |a, &b| a.max(b))
        * 1.15;
    let mut b = ChartBuilder::on(&root);
    b.margin(14)
        .x_label_area_size(if text { 45 } else { 5 })
        .y_label_area_size(if text { 70 } else { 5 });
    if text {
        b.caption(
            "ramp bench --rails: Mbit/s sent per path, total acknowledged, path events",
            ("sans-serif", 20),
        );
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
    // which paths carried anything (the others stay off the plot)
    let used: Vec<usize> = (0..tr.paths.len())
        .filter(|&i| tr.rows.iter().any(|r| r.1.get(i).is_some_and(|&v| v > 0.5)))
        .collect();
    for (n, &i) in used.iter().enumerate() {
        let color = Palette99::pick(n + 1).to_rgba();
        let pts = tr
            .rows
            .iter()
            .map(|(t, row, _)| (*t, row.get(i).copied().unwrap_or(0.0)));
        let s = chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(e)?;
        if text {
            s.label(format!("p{i}: {}", tr.paths[i]))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
    }
    let total = tr.rows.iter().map(|(t, _, v)| (*t, *v));
    let s = chart
        .draw_series(LineSeries::new(total, BLACK.stroke_width(2)))
        .map_err(e)?;
    if text {
        s.label("total acknowledged")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    // one mark per (sample, kind), the count beside it
    let mut marks: Vec<(f64, &str, usize)> = Vec::new();
    for (t, what, _) in &tr.events {
        match marks.iter_mut().find(|m| m.0 == *t && m.1 == *what) {
            Some(m) => m.2 += 1,
            None => marks.push((*t, what, 1)),
        }
    }
    let mut row = 0;
    for (k, &(t, what, n)) in marks.iter().enumerate() {
        // staggered within a sample so that its labels stay readable
        row = if k > 0 && marks[k - 1].0 == t {
            row + 1
        } else {
            0
        };
        let c = event_color(what);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(t, 0.0), (t, y_max)],
                c.stroke_width(1),
            )))
            .map_err(e)?;
        if text {
            let y = y_max * (0.97 - 0.05 * (row % 6) as f64);
            let label = if n > 1 {
                format!(" {what} x{n}")
            } else {
                format!(" {what}")
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
    root.present().map_err(e)?;
    Ok(font)
}
