//! What the PNGs share (`bench_rails_plot.rs`, `loggp_plot.rs`,
//! `perf_plot.rs`): a line in its colour with its legend entry, and the
//! legend's box. Without a font (`text` false) neither has any text.

use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;

/// A chart of the bitmap backend on an (x, y) plane of any axes.
pub(crate) type Chart<'a, 'b, X, Y> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<X, Y>>;

/// Draws `points` as a line of `color`, 2 pixels wide, and with `text`
/// enters it in the legend as `name`.
pub(crate) fn line<X, Y>(
    chart: &mut Chart<'_, '_, X, Y>,
    text: bool,
    name: &str,
    color: RGBAColor,
    points: impl IntoIterator<Item = (X::ValueType, Y::ValueType)>,
) -> Result<(), String>
where
    X: Ranged,
    Y: Ranged,
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
{
    let s = chart
        .draw_series(LineSeries::new(points, color.stroke_width(2)))
        .map_err(|e| format!("plot: {e}"))?;
    if text {
        s.label(name).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
        });
    }
    Ok(())
}

/// With `text`, the legend of the lines entered, in a box at `at`, its
/// names `size` pixels high.
pub(crate) fn legend<'a, 'b: 'a, X, Y>(
    chart: &mut Chart<'a, 'b, X, Y>,
    text: bool,
    size: u32,
    at: SeriesLabelPosition,
) -> Result<(), String>
where
    X: Ranged,
    Y: Ranged,
{
    if text {
        chart
            .configure_series_labels()
            .label_font(("sans-serif", size))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(at)
            .draw()
            .map_err(|e| format!("plot: {e}"))?;
    }
    Ok(())
}
