//! Charts as inline SVG for tracelab's HTML reports (`study report`,
//! `prof --html`, `run --report`): lines over categories, a log2 or a
//! linear x axis, bars over categories, with 95 % interval whiskers on each
//! point and a log y axis chosen when the values span orders of magnitude.
//!
//! Written by hand rather than with plotters: a report rebuilt from the
//! results store must come out byte for byte the same (no font measuring,
//! no floating layout), the charts need only lines, points, bars and axes,
//! and it keeps fonts and their libraries out of the build. The HTML page
//! the charts go in is [`page`] (its own module, `page.rs`).

mod page;

pub use page::{esc, page, STYLE};

use std::fmt::Write as _;

const W: f64 = 720.0;
const H: f64 = 360.0;
const L: f64 = 78.0;
const R: f64 = 180.0;
const T: f64 = 40.0;
const B: f64 = 80.0;
const COLOURS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// When the positive values of a chart span this factor or more, and
/// `YScale::Auto` is asked for, the y axis is logarithmic: on a linear axis
/// the small values would sit on the floor (a p50 of 170 µs under a max of
/// 12 ms).
pub const LOG_SPAN: f64 = 20.0;

/// How the x axis places its points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Evenly spaced named categories (drawn as bars).
    Categories,
    /// Positive numbers by their base-2 logarithm (batch sizes, sessions).
    Log2,
    /// Numbers on a linear axis (seconds into a run).
    Linear,
}

/// How the y axis is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YScale {
    /// Logarithmic when the positive values span [`LOG_SPAN`] or more.
    Auto,
    Linear,
    Log,
}

/// One point: where on x (a category name or a number), its value, and
/// the 95 % interval drawn as a whisker.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: String,
    pub y: f64,
    pub interval: Option<(f64, f64)>,
}

impl Point {
    pub fn new(x: impl Into<String>, y: f64) -> Point {
        Point {
            x: x.into(),
            y,
            interval: None,
        }
    }

    pub fn with_interval(mut self, lo: f64, hi: f64) -> Point {
        self.interval = Some((lo, hi));
        self
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<Point>,
}

/// A chart of one or more series.
#[derive(Debug, Clone)]
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x: XAxis,
    pub y: YScale,
    pub series: &'a [Series],
}

/// The y axis as drawn: linear from 0, or log10 over whole decades.
struct YAxis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl YAxis {
    /// With `bars`, a log axis starts a decade below a value that is a
    /// whole power of ten, so that its bar has a height.
    fn of(scale: YScale, values: &[f64], bars: bool) -> YAxis {
        let pos: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let max = pos.iter().copied().fold(0.0f64, f64::max);
        let min = pos.iter().copied().fold(f64::INFINITY, f64::min);
        let log = match scale {
            YScale::Linear => false,
            YScale::Log => !pos.is_empty(),
            YScale::Auto => !pos.is_empty() && max / min >= LOG_SPAN,
        };
        if log {
            let mut lo = min.log10().floor();
            if bars && 10f64.powf(lo) >= min {
                lo -= 1.0;
            }
            let hi = max.log10().ceil();
            YAxis {
                log,
                lo,
                hi: if hi > lo { hi } else { lo + 1.0 },
            }
        } else {
            let max = values
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(0.0f64, f64::max);
            YAxis {
                log,
                lo: 0.0,
                hi: nice_ceiling(max),
            }
        }
    }

    /// The pixel row of value `v` (clamped to the plot).
    fn px(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(1e-300).log10() - self.lo) / (self.hi - self.lo)
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        H - B - t.clamp(0.0, 1.0) * (H - T - B)
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            (self.lo as i32..=self.hi as i32)
                .map(|e| 10f64.powi(e))
                .collect()
        } else {
            (0..=4).map(|i| self.hi * f64::from(i) / 4.0).collect()
        }
    }
}

/// The chart as an `<svg>` element.
pub fn render(c: &Chart) -> String {
    let mut levels: Vec<&str> = Vec::new();
    for s in c.series {
        for p in &s.points {
            if !levels.contains(&p.x.as_str()) {
                levels.push(&p.x);
            }
        }
    }
    let numeric = match c.x {
        XAxis::Categories => false,
        XAxis::Log2 => levels
            .iter()
            .all(|l| l.parse::<f64>().is_ok_and(|v| v > 0.0)),
        XAxis::Linear => levels.iter().all(|l| l.parse::<f64>().is_ok()),
    };
    let log2 = numeric && c.x == XAxis::Log2;
    let xval = |name: &str| -> f64 {
        if numeric {
            let v = name.parse::<f64>().unwrap_or(0.0);
            if log2 {
                v.log2()
            } else {
                v
            }
        } else {
            levels.iter().position(|l| *l == name).unwrap_or(0) as f64
        }
    };
    let (x0, x1) = if numeric {
        let (a, b) = levels
            .iter()
            .map(|l| xval(l))
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        // Time and counts start at zero.
        let a = if log2 { a } else { a.min(0.0) };
        if b > a {
            (a, b)
        } else {
            (a - 1.0, a + 1.0)
        }
    } else {
        (-0.5, levels.len() as f64 - 0.5)
    };
    let px = |x: f64| L + (x - x0) / (x1 - x0) * (W - L - R);
    let values: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .flat_map(|p| {
            let (a, b) = p.interval.unwrap_or((p.y, p.y));
            [p.y, a, b]
        })
        .collect();
    let y = YAxis::of(c.y, &values, !numeric);

    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        s,
        "<rect width=\"{W}\" height=\"{H}\" fill=\"#fff\"/><text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        (W - R + L) / 2.0,
        esc(c.title)
    );
    let _ = writeln!(
        s,
        "<path d=\"M{L} {T} V{} H{}\" fill=\"none\" stroke=\"#333\"/>",
        H - B,
        W - R
    );
    for t in y.ticks() {
        let py = y.px(t);
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" x2=\"{}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - R,
            L - 6.0,
            py + 4.0,
            tick(t)
        );
    }
    // x ticks: every level by name, or about six round numbers on a linear
    // axis (seconds of a run).
    if numeric && !log2 {
        let step = nice_ceiling((x1 - x0) / 6.0);
        let mut t = (x0 / step).ceil() * step;
        while t <= x1 + step * 1e-9 {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                px(t),
                H - B + 16.0,
                tick(t)
            );
            t += step;
        }
    } else {
        let slot = (W - L - R) / levels.len().max(1) as f64;
        let level_names_fit = levels.iter().all(|l| text_width(l) + 6.0 <= slot);
        for l in &levels {
            if numeric || level_names_fit {
                let _ = writeln!(
                    s,
                    "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    px(xval(l)),
                    H - B + 16.0,
                    esc(l)
                );
            } else {
                // Slanted, so that long level names do not run into each other.
                let _ = writeln!(
                    s,
                    "<text transform=\"translate({:.1} {}) rotate(-25)\" text-anchor=\"end\">{}</text>",
                    px(xval(l)) + 4.0,
                    H - B + 14.0,
                    esc(l)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>",
        (W - R + L) / 2.0,
        if numeric { H - B + 36.0 } else { H - 4.0 },
        esc(c.x_label),
        if log2 { " (log2 scale)" } else { "" }
    );
    let _ = writeln!(
        s,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        (H - B + T) / 2.0,
        esc(c.y_label),
        if y.log { " (log scale)" } else { "" }
    );
    let whiskers = c
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.interval.is_some()));
    let slot = (W - L - R) / levels.len().max(1) as f64;
    let bar_w = slot * 0.7 / c.series.len().max(1) as f64;
    for (i, ser) in c.series.iter().enumerate() {
        let col = COLOURS[i % COLOURS.len()];
        let ly = T + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{col}\" stroke-width=\"{5}\"/><text x=\"{2}\" y=\"{3}\">{4}</text>",
            W - R + 12.0,
            W - R + 32.0,
            W - R + 38.0,
            ly + 4.0,
            esc(&ser.label),
            if numeric { 2 } else { 8 }
        );
        let mut centres = Vec::with_capacity(ser.points.len());
        if numeric {
            let d: Vec<String> = ser
                .points
                .iter()
                .enumerate()
                .map(|(j, p)| {
                    format!(
                        "{}{:.1} {:.1}",
                        if j == 0 { "M" } else { "L" },
                        px(xval(&p.x)),
                        y.px(p.y)
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "<path d=\"{}\" fill=\"none\" stroke=\"{col}\" stroke-width=\"2\"/>",
                d.join(" ")
            );
            // Dots only where they can be told apart.
            let dots = ser.points.len() <= 60;
            for p in &ser.points {
                let cx = px(xval(&p.x));
                if dots {
                    let _ = writeln!(
                        s,
                        "<circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{col}\"/>",
                        y.px(p.y)
                    );
                }
                centres.push((cx, p));
            }
        } else {
            for p in &ser.points {
                let left = px(xval(&p.x)) - slot * 0.35 + bar_w * i as f64;
                let top = y.px(p.y);
                let floor = H - B;
                let _ = writeln!(
                    s,
                    "<rect x=\"{left:.1}\" y=\"{top:.1}\" width=\"{bar_w:.1}\" height=\"{:.1}\" fill=\"{col}\"{}/>",
                    (floor - top).max(0.0),
                    if whiskers { " fill-opacity=\"0.75\"" } else { "" }
                );
                centres.push((left + bar_w / 2.0, p));
            }
        }
        for (cx, p) in centres {
            if let Some((lo, hi)) = p.interval {
                let (a, b) = (y.px(lo), y.px(hi));
                let cap = 4.0;
                let _ = writeln!(
                    s,
                    "<path class=\"whisker\" d=\"M{cx:.1} {a:.1} V{b:.1} M{:.1} {a:.1} H{:.1} M{:.1} {b:.1} H{:.1}\" stroke=\"#222\" stroke-width=\"1.2\" fill=\"none\"/>",
                    cx - cap,
                    cx + cap,
                    cx - cap,
                    cx + cap
                );
            }
        }
    }
    if whiskers {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555\">whiskers: 95 % interval</text>",
            W - R + 12.0,
            T + 10.0 + 18.0 * c.series.len() as f64 + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A histogram: bars side by side over contiguous ranges. `edges` labels
/// the boundaries (one more than the bins, an empty string for none), so
/// each label is a short number under the line between two bars ("50",
/// "100", "200") rather than a range under a bar ("50–100", "100–200"),
/// which does not fit a bar's width once there are a dozen; each bin is
/// its count and its exact range in words, shown as the bar's tooltip.
/// When even the edges would run into each other, every second (third,
/// ...) edge is labelled.
pub fn histogram(
    title: &str,
    x_label: &str,
    y_label: &str,
    edges: &[String],
    bins: &[(f64, String)],
) -> String {
    let n = bins.len().max(1) as f64;
    let slot = (W - L - R) / n;
    let px = |i: usize| L + slot * i as f64;
    let counts: Vec<f64> = bins.iter().map(|(c, _)| *c).collect();
    let y = YAxis::of(YScale::Auto, &counts, true);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        s,
        "<rect width=\"{W}\" height=\"{H}\" fill=\"#fff\"/><text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        (W - R + L) / 2.0,
        esc(title)
    );
    let _ = writeln!(
        s,
        "<path d=\"M{L} {T} V{} H{}\" fill=\"none\" stroke=\"#333\"/>",
        H - B,
        W - R
    );
    for t in y.ticks() {
        let py = y.px(t);
        let _ = writeln!(
            s,
            "<line x1=\"{L}\" x2=\"{}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - R,
            L - 6.0,
            py + 4.0,
            tick(t)
        );
    }
    let widest = edges.iter().map(|e| text_width(e)).fold(0.0, f64::max);
    let every = ((widest + 6.0) / slot).ceil().max(1.0) as usize;
    for (i, e) in edges.iter().enumerate().filter(|(i, _)| i % every == 0) {
        if e.is_empty() {
            continue;
        }
        let x = px(i);
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            H - B,
            H - B + 4.0,
            // Low enough to clear the y axis's lowest label at the corner.
            H - B + 20.0,
            esc(e)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        (W - R + L) / 2.0,
        H - B + 40.0,
        esc(x_label)
    );
    let _ = writeln!(
        s,
        "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}{}</text>",
        (H - B + T) / 2.0,
        esc(y_label),
        if y.log { " (log scale)" } else { "" }
    );
    let col = COLOURS[0];
    for (i, (count, range)) in bins.iter().enumerate() {
        let top = y.px(*count);
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{col}\"><title>{}: {}</title></rect>",
            px(i) + 1.0,
            (slot - 2.0).max(1.0),
            (H - B - top).max(0.0),
            esc(range),
            tick(*count)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// About how wide `text` is drawn at the charts' 12 px sans-serif: digits
/// and most letters are a little over half the font size wide. The charts
/// place text without measuring it (see the crate's comment), so they
/// leave a margin around this.
fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * 7.0
}

/// One column of dots per category (`cats`: (name, values)), each value a
/// dot spread across its slot in the order given, the mean a bar across
/// it; with `log_y`, a log10 axis over the decades the values span (for
/// values orders of magnitude apart, as cached and uncached tallies are).
pub fn strip(
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
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
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
pub fn nice_ceiling(y: f64) -> f64 {
    if y <= 0.0 || !y.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(y.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= y * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// An axis label: short enough to sit beside the axis (7.5M, 250k, 0.25).
pub fn tick(y: f64) -> String {
    if y == 0.0 {
        "0".into()
    } else if y.abs() >= 1e4 {
        let (v, unit) = if y.abs() >= 1e9 {
            (y / 1e9, "G")
        } else if y.abs() >= 1e6 {
            (y / 1e6, "M")
        } else {
            (y / 1e3, "k")
        };
        let t = format!("{v:.2}");
        format!("{}{unit}", t.trim_end_matches('0').trim_end_matches('.'))
    } else if y.abs() >= 100.0 {
        format!("{y:.0}")
    } else {
        let s = format!("{y:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(x: XAxis, y: YScale, pts: Vec<Point>) -> String {
        render(&Chart {
            title: "t",
            x_label: "x",
            y_label: "ms",
            x,
            y,
            series: &[Series {
                label: "s".into(),
                points: pts,
            }],
        })
    }

    #[test]
    fn a_log2_chart_places_levels_by_their_logarithm() {
        let s = one(
            XAxis::Log2,
            YScale::Linear,
            vec![
                Point::new("1", 0.07),
                Point::new("2", 0.04),
                Point::new("1024", 0.004),
            ],
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
    fn values_orders_of_magnitude_apart_get_a_log_axis_said_on_the_axis() {
        let wide = one(
            XAxis::Categories,
            YScale::Auto,
            vec![Point::new("off", 18_253_215.0), Point::new("on", 131_567.0)],
        );
        assert!(wide.contains("ms (log scale)"), "{wide}");
        // Ticks at whole decades: 100k .. 100M.
        assert!(wide.contains(">100k<") && wide.contains(">100M<"), "{wide}");
        let close = one(
            XAxis::Categories,
            YScale::Auto,
            vec![Point::new("a", 5.0), Point::new("b", 90.0)],
        );
        assert!(!close.contains("log scale"), "{close}");
    }

    #[test]
    fn each_point_with_an_interval_gets_a_whisker_spanning_it() {
        let s = one(
            XAxis::Log2,
            YScale::Linear,
            vec![
                Point::new("1", 50.0).with_interval(40.0, 60.0),
                Point::new("2", 80.0).with_interval(70.0, 100.0),
            ],
        );
        assert_eq!(s.matches("class=\"whisker\"").count(), 2, "{s}");
        // 0..100 over the plot height: 40 and 60 at these rows.
        let y = |v: f64| H - B - v / 100.0 * (H - T - B);
        assert!(
            s.contains(&format!("{:.1} V{:.1}", y(40.0), y(60.0))),
            "{s}"
        );
        assert!(s.contains("whiskers: 95 % interval"));
        let none = one(XAxis::Log2, YScale::Linear, vec![Point::new("1", 1.0)]);
        assert!(!none.contains("whisker"), "{none}");
    }

    #[test]
    fn a_long_linear_axis_gets_round_ticks_not_a_label_per_point() {
        let pts: Vec<Point> = (1..=60).map(|t| Point::new(t.to_string(), 100.0)).collect();
        let s = one(XAxis::Linear, YScale::Auto, pts);
        // Ticks every 10 s from 0 (a sixth of 60 s, rounded up to 1, 2 or
        // 5 × 10^n).
        for t in ["10", "20", "60"] {
            assert!(s.contains(&format!(">{t}</text>")), "{t}: {s}");
        }
        assert!(!s.contains(">17</text>"), "{s}");
    }

    #[test]
    fn a_histogram_labels_its_edges_and_thins_them_out_when_they_would_touch() {
        let edges = |n: usize| -> Vec<String> { (0..=n).map(|i| format!("{}k", i * 10)).collect() };
        let bins = |n: usize| -> Vec<(f64, String)> {
            (0..n)
                .map(|i| (i as f64 + 1.0, format!("bin {i}")))
                .collect()
        };
        let few = histogram("t", "x", "n", &edges(4), &bins(4));
        for e in ["0k", "20k", "40k"] {
            assert!(few.contains(&format!(">{e}</text>")), "{e}: {few}");
        }
        assert!(few.contains("<title>bin 3: 4</title>"), "{few}");
        // 60 bins over the 462 pixels of the plot: 7.7 pixels apart, so
        // a 4-character edge (about 28 pixels and a gap) only every fifth.
        let many = histogram("t", "x", "n", &edges(60), &bins(60));
        assert!(
            many.contains(">50k</text>") && !many.contains(">10k</text>"),
            "{many}"
        );
    }

    #[test]
    fn the_same_input_draws_the_same_bytes() {
        let pts = || vec![Point::new("a", 1.5).with_interval(1.0, 2.0)];
        assert_eq!(
            one(XAxis::Categories, YScale::Auto, pts()),
            one(XAxis::Categories, YScale::Auto, pts())
        );
        assert!(esc("<a & \"b\">").eq("&lt;a &amp; &quot;b&quot;&gt;"));
    }
}
