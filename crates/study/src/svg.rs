//! The studies' charts, drawn by tracelab-chart (inline SVG, byte for byte
//! the same when a report is rebuilt): lines over a log2 axis, bars over
//! categories, 95 % interval whiskers, a log y axis when values span
//! orders of magnitude.

use std::fmt::Write as _;

use tracelab_chart::{esc, nice_ceiling, render, tick, Chart, Point, Series, XAxis, YScale};

// The strip chart's frame (the others' is tracelab-chart's).
const W: f64 = 720.0;
const H: f64 = 360.0;
const L: f64 = 70.0;
const R: f64 = 180.0;
const T: f64 = 40.0;
const B: f64 = 80.0;
const COLOURS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

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

/// One column of dots per category (`cats`: (name, values)), each value a
/// dot spread across its slot in the order given, the mean a bar across
/// it; with `log_y`, a log10 axis over the decades the values span (for
/// values orders of magnitude apart, as cached and uncached tallies are).
pub fn strip_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    log_y: bool,
    cats: &[(String, Vec<f64>)],
) -> String {
    let all: Vec<f64> = cats
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite() && (!log_y || *v > 0.0))
        .collect();
    let hi = all.iter().copied().fold(0.0f64, f64::max);
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let (y0, y1) = if log_y {
        let a = if lo.is_finite() {
            lo.log10().floor()
        } else {
            0.0
        };
        let b = if hi > 0.0 { hi.log10().ceil() } else { 1.0 };
        (a, if b > a { b } else { a + 1.0 })
    } else {
        (0.0, nice_ceiling(hi))
    };
    let ypos = |v: f64| -> f64 {
        let t = if log_y { v.max(1e-300).log10() } else { v };
        H - B - ((t - y0) / (y1 - y0)).clamp(0.0, 1.0) * (H - T - B)
    };
    let n = cats.len().max(1) as f64;
    let slot = (W - L - R) / n;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        (W - R + L) / 2.0,
        esc(title)
    );
    let _ = writeln!(
        s,
        "<path d=\"M{L} {T} V{} H{}\" fill=\"none\" stroke=\"#333\"/>",
        H - B,
        W - R
    );
    let ticks: Vec<f64> = if log_y {
        (y0 as i32..=y1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=4).map(|i| y1 * f64::from(i) / 4.0).collect()
    };
    for t in ticks {
        let y = ypos(t);
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - R,
            L - 6.0,
            y + 4.0,
            tick(t)
        );
    }
    let _ = writeln!(
        s,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        (H - B + T) / 2.0,
        esc(y_label),
        if log_y { " (log scale)" } else { "" }
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        (W - R + L) / 2.0,
        H - 4.0,
        esc(x_label)
    );
    for (i, (name, vals)) in cats.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let mid = L + slot * (i as f64 + 0.5);
        let _ = writeln!(
            s,
            "<text transform=\"translate({:.1} {}) rotate(-25)\" text-anchor=\"end\">{}</text>",
            mid + 4.0,
            H - B + 14.0,
            esc(name)
        );
        let k = vals.len();
        for (j, v) in vals.iter().enumerate() {
            if !v.is_finite() || (log_y && *v <= 0.0) {
                continue;
            }
            let dx = if k > 1 {
                (j as f64 / (k - 1) as f64 - 0.5) * slot * 0.6
            } else {
                0.0
            };
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{c}\" fill-opacity=\"0.6\"/>",
                mid + dx,
                ypos(*v)
            );
        }
        let good: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite()).collect();
        if !good.is_empty() {
            let mean = good.iter().sum::<f64>() / good.len() as f64;
            let _ = writeln!(
                s,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#222\" stroke-width=\"2\"/>",
                mid - slot * 0.35,
                mid + slot * 0.35,
                ypos(mean),
                ypos(mean)
            );
        }
    }
    let _ = writeln!(
        s,
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#222\" stroke-width=\"2\"/><text x=\"{3}\" y=\"{4}\">mean</text>",
        W - R + 12.0,
        W - R + 32.0,
        T + 10.0,
        W - R + 38.0,
        T + 14.0
    );
    let _ = writeln!(
        s,
        "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"#555\"/><text x=\"{}\" y=\"{}\">a session</text>",
        W - R + 22.0,
        T + 28.0,
        W - R + 38.0,
        T + 32.0
    );
    s.push_str("</svg>\n");
    s
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
        // 100 sits on the x axis.
        assert!(s.contains(&format!("cy=\"{:.1}\"", H - B)), "{s}");
    }
}
