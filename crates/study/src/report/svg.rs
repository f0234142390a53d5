//! The studies' charts, drawn by tracelab-chart (inline SVG, byte for byte
//! the same when a report is rebuilt): lines over a log2 axis, bars over
//! categories, 95 % interval whiskers, a log y axis when values span
//! orders of magnitude.

pub use tracelab_chart::strip as strip_chart;
use tracelab_chart::{render, Chart, Point, Series, XAxis, YScale};

/// `series`: (label, [(x level name, y)]). With `log2_x` the level names
/// must be positive numbers; otherwise they are evenly spaced categories.
/// The y axis turns logarithmic when the values span orders of magnitude.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    log2_x: bool,
    series: &[(String, Vec<(String, f64)>)],
) -> String {
    let series: Vec<Series> = series
        .iter()
        .map(|(label, pts)| Series {
            label: label.clone(),
            points: pts.iter().map(|(x, y)| Point::new(x.clone(), *y)).collect(),
        })
        .collect();
    chart(title, x_label, y_label, log2_x, &series)
}

/// As [`line_chart`], with points that may carry a 95 % interval (drawn
/// as whiskers).
pub fn chart(title: &str, x_label: &str, y_label: &str, log2_x: bool, series: &[Series]) -> String {
    render(&Chart {
        title,
        x_label,
        y_label,
        x: if log2_x {
            XAxis::Log2
        } else {
            XAxis::Categories
        },
        y: YScale::Auto,
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log2_chart_of_a_study_says_its_scale() {
        let s = line_chart(
            "t",
            "batch",
            "ms",
            true,
            &[(
                "response".into(),
                vec![
                    ("1".into(), 0.07),
                    ("2".into(), 0.04),
                    ("1024".into(), 0.004),
                ],
            )],
        );
        assert!(s.starts_with("<svg"));
        assert!(s.contains("batch (log2 scale)"));
        // 0.004 .. 0.07 spans 17x: a linear y axis.
        assert!(!s.contains("(log scale)"));
    }

    #[test]
    fn a_strip_chart_spans_the_decades_of_its_values() {
        let s = strip_chart(
            "t",
            "cache",
            "tx",
            true,
            &[
                ("off".into(), vec![100.0, 300.0]),
                ("on".into(), vec![20_000.0, 40_000.0]),
            ],
        );
        // Decades 10^2 .. 10^5: the top tick is 100k, the lowest 100.
        assert!(
            s.contains(">100k</text>") && s.contains(">100</text>"),
            "{s}"
        );
        assert!(!s.contains(">1M</text>"), "{s}");
        assert_eq!(
            s.matches("<circle").count(),
            4 + 1,
            "a dot per value and the legend's"
        );
        // 100 sits on the x axis (tracelab-chart's frame: 360 high, 80
        // below the axis).
        assert!(s.contains("cy=\"280.0\""), "{s}");
    }
}
