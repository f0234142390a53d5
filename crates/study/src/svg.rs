//! Charts as inline SVG: lines over a numeric (log2) axis, bars over
//! categories. Written by hand rather than with plotters:
//! the output must be byte-for-byte the same when a report is rebuilt
//! (no font measuring, no floating layout), it needs only lines, points,
//! axes and a log2 or categorical x axis, and it keeps fonts out of the
//! build.

use std::fmt::Write as _;

use crate::report::esc;

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
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    log2_x: bool,
    series: &[(String, Vec<(String, f64)>)],
) -> String {
    let mut levels: Vec<String> = Vec::new();
    for (_, pts) in series {
        for (x, _) in pts {
            if !levels.contains(x) {
                levels.push(x.clone());
            }
        }
    }
    let numeric = log2_x
        && levels
            .iter()
            .all(|l| l.parse::<f64>().is_ok_and(|v| v > 0.0));
    let xpos = |name: &str| -> f64 {
        if numeric {
            name.parse::<f64>().map_or(0.0, f64::log2)
        } else {
            levels.iter().position(|l| l == name).unwrap_or(0) as f64
        }
    };
    let xs: Vec<f64> = levels.iter().map(|l| xpos(l)).collect();
    let (x0, x1) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let ymax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .fold(0.0f64, f64::max);
    let ymax = nice_ceiling(ymax);
    // Categories are bars, centred in slots of their own.
    let (x0, x1) = if !numeric {
        (-0.5, levels.len() as f64 - 0.5)
    } else if x1 > x0 {
        (x0, x1)
    } else {
        (x0 - 1.0, x0 + 1.0)
    };
    let px = |x: f64| L + (x - x0) / (x1 - x0) * (W - L - R);
    let py = |y: f64| H - B - if ymax > 0.0 { y / ymax } else { 0.0 } * (H - T - B);
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
    // Axes, ticks and grid.
    let _ = writeln!(
        s,
        "<path d=\"M{L} {T} V{} H{}\" fill=\"none\" stroke=\"#333\"/>",
        H - B,
        W - R
    );
    for i in 0..=4 {
        let y = ymax * f64::from(i) / 4.0;
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - R,
            py(y),
            py(y),
            L - 6.0,
            py(y) + 4.0,
            tick(y)
        );
    }
    for (l, x) in levels.iter().zip(&xs) {
        if numeric {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(*x),
                H - B + 16.0,
                esc(l)
            );
        } else {
            // Slanted, so that long level names do not run into each other.
            let _ = writeln!(
                s,
                "<text transform=\"translate({:.1} {}) rotate(-25)\" text-anchor=\"end\">{}</text>",
                px(*x) + 4.0,
                H - B + 14.0,
                esc(l)
            );
        }
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>",
        (W - R + L) / 2.0,
        if numeric { H - B + 36.0 } else { H - 4.0 },
        esc(x_label),
        if numeric { " (log2 scale)" } else { "" }
    );
    let _ = writeln!(
        s,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        (H - B + T) / 2.0,
        esc(y_label)
    );
    let slot = (W - L - R) / levels.len().max(1) as f64;
    let bar_w = slot * 0.7 / series.len().max(1) as f64;
    for (i, (label, pts)) in series.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let ly = T + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{c}\" stroke-width=\"{5}\"/><text x=\"{2}\" y=\"{3}\">{4}</text>",
            W - R + 12.0,
            W - R + 32.0,
            W - R + 38.0,
            ly + 4.0,
            esc(label),
            if numeric { 2 } else { 8 }
        );
        if !numeric {
            for (x, y) in pts {
                let left = px(xpos(x)) - slot * 0.35 + bar_w * i as f64;
                let _ = writeln!(
                    s,
                    "<rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{bar_w:.1}\" height=\"{:.1}\" fill=\"{c}\"/>",
                    py(*y),
                    (py(0.0) - py(*y)).max(0.0)
                );
            }
            continue;
        }
        let d: Vec<String> = pts
            .iter()
            .enumerate()
            .map(|(j, (x, y))| {
                format!(
                    "{}{:.1} {:.1}",
                    if j == 0 { "M" } else { "L" },
                    px(xpos(x)),
                    py(*y)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "<path d=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>",
            d.join(" ")
        );
        for (x, y) in pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"/>",
                px(xpos(x)),
                py(*y)
            );
        }
    }
    s.push_str("</svg>\n");
    s
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

/// 1, 2 or 5 times a power of ten, at least `y`.
fn nice_ceiling(y: f64) -> f64 {
    if y <= 0.0 || !y.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(y.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= y {
            return m * p;
        }
    }
    10.0 * p
}

fn tick(y: f64) -> String {
    if y == 0.0 {
        "0".into()
    } else if y >= 1e4 {
        // 7.5M, 250k: short enough to sit beside the axis.
        let (v, unit) = if y >= 1e9 {
            (y / 1e9, "G")
        } else if y >= 1e6 {
            (y / 1e6, "M")
        } else {
            (y / 1e3, "k")
        };
        let t = format!("{v:.2}");
        format!("{}{unit}", t.trim_end_matches('0').trim_end_matches('.'))
    } else if y >= 100.0 {
        format!("{y:.0}")
    } else {
        let s = format!("{y:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log2_chart_places_levels_by_their_logarithm() {
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
        assert!(s.contains("(log2 scale)"));
        // x of 1 at the left edge, 1024 at the right edge, 2 a tenth in.
        assert!(s.contains(&format!("M{:.1} ", L)), "{s}");
        assert!(
            s.contains(&format!("L{:.1} ", L + (W - L - R) / 10.0)),
            "{s}"
        );
        assert_eq!(nice_ceiling(0.07), 0.1);
        assert_eq!(nice_ceiling(130.0), 200.0);
        assert_eq!(tick(7_500_000.0), "7.5M");
        assert_eq!(tick(0.25), "0.25");
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
