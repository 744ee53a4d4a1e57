//! The PNG of `ramp bench --rails --plot FILE.png`, two panels over the
//! same time axis: above, Mbit/s sent on each path (one line per path that
//! carried data); below, the total of new data acknowledged and what each
//! rail's link sent (the kernel's counters: a path goes out on the link
//! its remote address is routed to). On both, the
//! path events as vertical lines (failed red, recovered green, partitioned
//! purple, rejoined blue; a rail's link going down black, up grey), labelled at the top of the upper panel, one
//! label per kind and sample ("failed x2": two paths failed between the
//! same two samples), staggered when close: MN-uDAPL's failure figure. Font and fallbacks as
//! `loggp_plot.rs`.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::bench_rails_trace::Trace;
use crate::loggp_plot::load_font;
use crate::plot_lines::{legend, line};

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

/// The events' labels, each in the first of `LABEL_ROWS` rows where it
/// does not run into the label before it (a label's width guessed from
/// its length: 7 pixels a character of 1300 for the whole time axis):
/// (row, time, text, colour).
fn label_rows(marks: &[(f64, &str, usize)], t_end: f64) -> Vec<(usize, f64, String, RGBColor)> {
    const LABEL_ROWS: usize = 6;
    let mut free_from = [f64::MIN; LABEL_ROWS];
    let mut out = Vec::new();
    for &(t, what, n) in marks {
        let label = match n {
            1 => format!(" {what}"),
            n => format!(" {what} x{n}"),
        };
        let width = label.len() as f64 * 7.0 / 1300.0 * t_end;
        let row = (0..LABEL_ROWS)
            .find(|&r| free_from[r] <= t)
            .unwrap_or_else(|| {
                (0..LABEL_ROWS)
                    .min_by(|&a, &b| free_from[a].total_cmp(&free_from[b]))
                    .unwrap_or(0)
            });
        free_from[row] = t + width;
        out.push((row, t, label, event_color(what)));
    }
    out
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
        * if labels { 1.6 } else { 1.1 };
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
    for &(t, what, _) in marks {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(t, 0.0), (t, y_max)],
                event_color(what).stroke_width(1),
            )))
            .map_err(e)?;
    }
    if text && labels {
        for (row, t, label, c) in label_rows(marks, t_end) {
            let y = y_max * (0.97 - 0.055 * row as f64);
            let font = ("sans-serif", 13).into_font().color(&c);
            chart
                .draw_series(std::iter::once(Text::new(label, (t, y), font)))
                .map_err(e)?;
        }
    }
    for (name, color, pts) in lines {
        line(&mut chart, text, name, *color, pts.iter().copied())?;
    }
    legend(&mut chart, text, 13, SeriesLabelPosition::LowerRight)?;
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
    let mut total = vec![(
        "total acknowledged".to_string(),
        BLACK.to_rgba(),
        tr.rows.iter().map(|(t, _, v)| (*t, *v)).collect(),
    )];
    // what each rail's link sent (the kernel's counters), thin and pale
    for (c, (rail, iface)) in tr.links.iter().enumerate() {
        let pts = tr.rows.iter().zip(&tr.link_rows);
        let pts = pts.map(|(r, l)| (r.0, l.get(c).copied().unwrap_or(0.0)));
        total.push((
            format!("sent on rail {rail}'s link {iface}"),
            Palette99::pick(c + 10).mix(0.7),
            pts.collect(),
        ));
    }
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
        "new data acknowledged, all paths; sent on each rail's link (kernel counters)",
        t_end,
        &total,
        &marks,
        false,
    )?;
    root.present().map_err(e)?;
    Ok(font)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_rails_trace::PathKey;

    #[test]
    fn close_labels_take_other_rows_and_far_ones_the_first() {
        let marks = [
            (1.0, "link rail1 down", 1),
            (1.05, "failed", 2),
            (1.1, "partitioned", 1),
            (5.0, "recovered", 1),
        ];
        let rows: Vec<(usize, String)> = label_rows(&marks, 10.0)
            .into_iter()
            .map(|(r, _, l, _)| (r, l))
            .collect();
        assert_eq!(
            rows,
            [
                (0, " link rail1 down".into()),
                (1, " failed x2".into()),
                (2, " partitioned".into()),
                (0, " recovered".into()),
            ]
        );
    }

    #[test]
    fn a_trace_is_drawn_to_a_png() {
        let key = |r: u8| PathKey {
            rail: r,
            local: format!("10.0.{r}.1:1").parse().unwrap(),
            remote: format!("10.0.{r}.2:1").parse().unwrap(),
        };
        let tr = Trace {
            paths: vec![key(0), key(1)],
            rows: (1..40)
                .map(|i| (i as f64 * 0.05, vec![100.0, (i % 7) as f64 * 10.0], 150.0))
                .collect(),
            events: vec![
                (1.0, "link rail1 down", "rail1".into()),
                (1.0, "failed", "-".into()),
            ],
            links: vec![(0, "eth0".into()), (1, "rail1".into())],
            link_rows: (1..40).map(|_| vec![100.0, 50.0]).collect(),
        };
        let f = std::env::temp_dir().join(format!("ramp-rails-plot-{}.png", std::process::id()));
        write(f.to_str().unwrap(), None, &tr).unwrap();
        let png = std::fs::read(&f).unwrap();
        let _ = std::fs::remove_file(&f);
        assert_eq!(&png[1..4], b"PNG");
    }
}
