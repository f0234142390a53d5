//! The profile as rows (sorted, folded into `N others`, totalled) and its
//! renderings: mrskew's text table to the character, CSV and JSON.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::value::RawValue;
use tracelab_expr::perl_str_to_num;

use crate::aggregate::{Agg, Groups, Resolve};
use crate::number::{count, fixed, Num, PercentFormat};

/// How the table is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Csv,
    Json,
}

/// `--sort=<col>[n]<a|d>` or `no`; columns are 1 = group label, 2 =
/// DURATION, 3 = %, 4 = CALLS, 5 = MEAN, 6 = MIN, 7 = MAX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Order of first appearance.
    None,
    By {
        column: u8,
        numeric: bool,
        descending: bool,
    },
}

impl Default for Sort {
    fn default() -> Self {
        Sort::By {
            column: 2,
            numeric: true,
            descending: true,
        }
    }
}

impl Sort {
    /// Parses mrskew's sort spec (`2nd`, `1na`, `1a`, `4nd`, `no`).
    pub fn parse(s: &str) -> Result<Sort, String> {
        let t = s.trim().to_ascii_lowercase();
        if t == "no" || t == "none" {
            return Ok(Sort::None);
        }
        let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
        let rest = &t[digits.len()..];
        let column: u8 = digits
            .parse()
            .ok()
            .filter(|c| (1..=7).contains(c))
            .ok_or_else(|| {
                format!("--sort={s}: expected a column number 1 to 7, then optional 'n', then 'a' or 'd' (e.g. 2nd, 1na, 1a), or 'no'")
            })?;
        let (numeric, dir) = match rest.strip_prefix('n') {
            Some(d) => (true, d),
            None => (column != 1, rest),
        };
        let descending = match dir {
            "a" => false,
            "d" | "" => true,
            _ => {
                return Err(format!(
                    "--sort={s}: expected 'a' (ascending) or 'd' (descending) after the column"
                ))
            }
        };
        Ok(Sort::By {
            column,
            numeric,
            descending,
        })
    }
}

/// How the table is laid out: mrskew's table options, its defaults.
#[derive(Debug, Clone)]
pub struct Layout {
    pub sort: Sort,
    /// Rows shown before the rest fold into `N others`; 0 shows all.
    pub top: usize,
    pub precision: usize,
    /// `--gwidth`: at most this many characters of column 1.
    pub gwidth: Option<usize>,
    /// `--pfact`, `--pform`, `--plabel`: the % column is the share times
    /// this factor, printed with this format, under this header.
    pub pfact: f64,
    pub pform: PercentFormat,
    pub plabel: String,
    pub commas: bool,
    pub head: bool,
    pub foot: bool,
    pub dashes: bool,
    pub format: Format,
    pub separator: String,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            sort: Sort::default(),
            top: 10,
            precision: 6,
            gwidth: None,
            pfact: 100.0,
            pform: PercentFormat::default(),
            plabel: "%".into(),
            commas: true,
            head: true,
            foot: true,
            dashes: true,
            format: Format::Text,
            separator: "  ".into(),
        }
    }
}

/// The numbers of one row; absent for a group with no calls. The `f64`
/// fields are for programs; the report prints `nums`, which are exact
/// wherever the values were whole microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub duration: f64,
    pub percent: f64,
    pub calls: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub nums: Nums,
}

/// A row's numbers as printed (see [`crate::number`] for the rounding).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Nums {
    pub duration: Num,
    pub percent: Num,
    pub mean: Num,
    pub min: Num,
    pub max: Num,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub stats: Option<Stats>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub group_label: String,
    pub select_label: String,
    pub rows: Vec<Row>,
    /// The groups past `--top`, folded into one row.
    pub others: Option<Row>,
    pub total: Row,
    /// Distinct groups, the N of `TOTAL (N)`.
    pub groups: usize,
    /// What a second read must keep for every figure to be Perl's (see
    /// [`crate::aggregate`]); empty when they all are.
    pub resolve: Resolve,
}

/// The unit roundoff of a double: every operation's result is within this
/// fraction of the exact one.
const U: f64 = f64::EPSILON / 2.0;

/// One of a row's figures as mrskew computes it (a double, see
/// [`crate::aggregate`]): `approx` is Perl's double when `bound` is 0,
/// else a double at most `bound` from it whose exact value is `exact`.
#[derive(Debug, Clone, Copy)]
struct Fig {
    approx: f64,
    bound: f64,
    exact: Option<Num>,
}

impl Fig {
    fn known(x: f64) -> Fig {
        Fig {
            approx: x,
            bound: 0.0,
            exact: None,
        }
    }

    /// `self / n` (a mean).
    fn over(self, n: u64, exact: Option<Num>) -> Fig {
        let approx = self.approx / n as f64;
        Fig {
            approx,
            bound: if self.bound == 0.0 {
                0.0
            } else {
                self.bound / n as f64 + 2.0 * U * approx.abs()
            },
            exact,
        }
    }

    /// `self / whole * pfact` (a percentage), as mrskew forms it.
    fn percent(self, whole: Fig, pfact: f64) -> Fig {
        if whole.approx == 0.0 {
            return Fig::known(0.0);
        }
        let approx = self.approx / whole.approx * pfact;
        let bound = if self.bound == 0.0 && whole.bound == 0.0 {
            0.0
        } else if whole.approx.abs() <= 2.0 * whole.bound {
            f64::INFINITY
        } else {
            let t = whole.approx.abs() - whole.bound;
            (self.bound + self.approx.abs() / t * whole.bound) / t * pfact.abs() * 1.01
                + 4.0 * U * approx.abs()
        };
        let exact = match (self.exact, whole.exact) {
            (
                Some(Num::Exact {
                    num: a, exp10: ea, ..
                }),
                Some(Num::Exact {
                    num: b, exp10: eb, ..
                }),
            ) if ea == eb => {
                Some(Num::ratio(a, b, pfact)).filter(|n| matches!(n, Num::Exact { .. }))
            }
            _ => None,
        };
        Fig {
            approx,
            bound,
            exact,
        }
    }

    /// The number to print with `p` decimals: Perl's double if known;
    /// else the exact value, when every double within `bound` of it
    /// prints the same; else the approximation, and `unsettled` is set.
    fn num(self, p: usize, unsettled: &mut bool) -> Num {
        if self.bound == 0.0 {
            return Num::Float(self.approx);
        }
        match self.exact {
            Some(e) if e.settled(p, self.bound) => e,
            _ => {
                *unsettled = true;
                Num::Float(self.approx)
            }
        }
    }

    /// Orders two figures as Perl's `<=>` on the doubles would; sets
    /// `unsettled` when the bounds leave the order open.
    fn cmp(&self, other: &Fig, unsettled: &mut bool) -> Ordering {
        let by_double = self
            .approx
            .partial_cmp(&other.approx)
            .unwrap_or(Ordering::Equal);
        if self.bound == 0.0 && other.bound == 0.0 {
            return by_double;
        }
        if let (Some(x), Some(y)) = (self.exact, other.exact) {
            let ord = x.compare(y);
            if ord != Ordering::Equal
                && (self.approx - other.approx).abs() > 2.0 * (self.bound + other.bound)
            {
                return ord;
            }
        }
        *unsettled = true;
        by_double
    }
}

/// A group's duration and mean, as mrskew's running sum gives them.
fn figures(a: &Agg) -> (Fig, Fig) {
    if !a.exact() {
        let d = Fig::known(a.sum().to_f64());
        return (d, d.over(a.calls, None));
    }
    let d = Fig {
        approx: a.seq.sum,
        bound: if a.seq.exact {
            0.0
        } else {
            seq_bound(a.calls, abs_sum_us(a))
        },
        exact: Some(a.sum()),
    };
    (d, d.over(a.calls, Some(a.mean())))
}

/// The sum of the values' magnitudes (µs), or a bound on it.
fn abs_sum_us(a: &Agg) -> f64 {
    if a.min_us >= 0 {
        a.sum_us as f64
    } else {
        a.calls as f64 * (a.min_us.unsigned_abs().max(a.max_us.unsigned_abs())) as f64
    }
}

/// How far a running double sum of `n` values, each a whole number of
/// microseconds converted to seconds, may be from the exact sum, when
/// their magnitudes add up to `abs_us` µs: one rounding per conversion and
/// per addition, each at most `U` of a partial sum.
fn seq_bound(n: u64, abs_us: f64) -> f64 {
    2.0 * (n as f64 + 2.0) * U * abs_us * 1e-6 * 1.01
}

/// Which figure a row's cell holds, for settling it.
struct Settle<'a> {
    unsettled: bool,
    precision: usize,
    percent_precision: usize,
    resolve: &'a mut Resolve,
}

impl Settle<'_> {
    /// Takes note of what a second read must keep when any figure of a
    /// row is unsettled: the groups it depends on whose running sums are
    /// not known exactly, and the whole profile's.
    fn depends(&mut self, groups: &[(&str, &Agg)], total: bool) {
        if std::mem::take(&mut self.unsettled) {
            for (label, a) in groups {
                if !a.seq.exact {
                    self.resolve.labels.insert((*label).into());
                }
            }
            self.resolve.total |= total;
        }
    }
}

fn stats(
    calls: u64,
    (d, mean, pct): (Fig, Fig, Fig),
    (min, max): (f64, f64),
    s: &mut Settle<'_>,
) -> Stats {
    let (p, pp) = (s.precision, s.percent_precision);
    let nums = Nums {
        duration: d.num(p, &mut s.unsettled),
        percent: pct.num(pp, &mut s.unsettled),
        mean: mean.num(p, &mut s.unsettled),
        min: Num::Float(min),
        max: Num::Float(max),
    };
    Stats {
        duration: d.approx,
        percent: pct.approx,
        calls,
        mean: mean.approx,
        min,
        max,
        nums,
    }
}

/// A group's extremes, as the doubles Perl compares.
fn extremes(a: &Agg) -> (f64, f64) {
    (a.min().to_f64(), a.max().to_f64())
}

impl Report {
    /// The rows of `groups`, whose pieces were merged in read order.
    ///
    /// mrskew's figures, as far as the published tables tell them apart
    /// (every form below prints them all alike; where they do not decide,
    /// the plainest Perl is taken): a value is the trace's integer times
    /// 1e-6; a group's duration is the running double sum of its values
    /// in read order; TOTAL's, the running sum of every value in read
    /// order; `N others`', the folded groups' durations added in the
    /// order they are sorted; a mean is the duration divided by the
    /// calls; a percentage is the duration divided by TOTAL's, times
    /// `--pfact`; every figure is printed by printf, which rounds the
    /// double it is given.
    pub fn build(groups: Groups, o: &Layout, group_label: &str, select_label: &str) -> Report {
        let n = groups.map.len();
        let total_seq = groups.total;
        let mut all: Vec<(Box<str>, Agg)> = groups.map.into_iter().collect();
        let mut resolve = Resolve::default();
        let mut settle = Settle {
            unsettled: false,
            precision: o.precision,
            percent_precision: o.pform.precision(),
            resolve: &mut resolve,
        };
        // The whole profile: Perl's running sum of every value, when every
        // value was whole microseconds and gathered here.
        let calls: u64 = all.iter().map(|(_, a)| a.calls).sum();
        let sum_us: i128 = all.iter().map(|(_, a)| a.sum_us).sum();
        let whole = if all.iter().any(|(_, a)| !a.exact()) {
            Fig::known(all.iter().map(|(_, a)| a.sum().to_f64()).sum())
        } else if total_seq.n == calls {
            Fig {
                approx: total_seq.sum,
                bound: if total_seq.exact {
                    0.0
                } else {
                    seq_bound(calls, all.iter().map(|(_, a)| abs_sum_us(a)).sum())
                },
                exact: Some(Num::micros(sum_us)),
            }
        } else {
            // Groups built elsewhere (prof): one double of the exact sum.
            Fig::known(sum_us as f64 * 1e-6)
        };
        let key = |a: &Agg, col: u8, (d, mean): (Fig, Fig)| -> Fig {
            if a.calls == 0 {
                return Fig::known(0.0);
            }
            match col {
                4 => Fig::known(a.calls as f64),
                5 => mean,
                6 => Fig::known(a.min().to_f64()),
                7 => Fig::known(a.max().to_f64()),
                _ => d,
            }
        };
        // First appearance first: ties in the sort column keep it, as
        // mrskew's stable sort keeps the order groups appeared in.
        all.sort_by_key(|x| x.1.first);
        // Each group's duration and mean, beside it.
        let mut figs: Vec<(Fig, Fig)> = all.iter().map(|(_, a)| figures(a)).collect();
        if let Sort::By {
            column,
            numeric,
            descending,
        } = o.sort
        {
            let mut order: Vec<usize> = (0..all.len()).collect();
            let mut open: Vec<usize> = Vec::new();
            order.sort_by(|&x, &y| {
                let ((lx, ax), (ly, ay)) = (&all[x], &all[y]);
                let ord = if column == 1 {
                    if numeric {
                        perl_str_to_num(lx)
                            .partial_cmp(&perl_str_to_num(ly))
                            .unwrap_or(Ordering::Equal)
                    } else {
                        lx.cmp(ly)
                    }
                } else {
                    let mut unsettled = false;
                    let ord =
                        key(ax, column, figs[x]).cmp(&key(ay, column, figs[y]), &mut unsettled);
                    if unsettled {
                        open.extend([x, y]);
                    }
                    ord
                };
                if descending {
                    ord.reverse()
                } else {
                    ord
                }
            });
            for i in open {
                let (l, a) = &all[i];
                settle.unsettled = true;
                settle.depends(&[(l, a)], false);
            }
            figs = order.iter().map(|&i| figs[i]).collect();
            let mut sorted: Vec<Option<(Box<str>, Agg)>> = all.into_iter().map(Some).collect();
            all = order.into_iter().filter_map(|i| sorted[i].take()).collect();
        }
        let row_of = |l: &str, a: &Agg, (d, mean): (Fig, Fig), settle: &mut Settle<'_>| -> Row {
            let stats = (a.calls > 0).then(|| {
                let st = stats(
                    a.calls,
                    (d, mean, d.percent(whole, o.pfact)),
                    extremes(a),
                    settle,
                );
                settle.depends(&[(l, a)], true);
                st
            });
            Row {
                label: l.to_string(),
                stats,
            }
        };
        // mrskew folds only when at least two groups would fold: a lone
        // leftover group is shown rather than called "1 others".
        let shown = if o.top == 0 || all.len() <= o.top + 1 {
            all.len()
        } else {
            o.top
        };
        let rows = all[..shown]
            .iter()
            .zip(&figs)
            .map(|((l, a), f)| row_of(l, a, *f, &mut settle))
            .collect();
        let others = (shown < all.len()).then(|| {
            let folded: Vec<(&str, &Agg, Fig)> = all[shown..]
                .iter()
                .zip(&figs[shown..])
                .filter(|((_, a), _)| a.calls > 0)
                .map(|((l, a), f)| (l.as_ref(), a, f.0))
                .collect();
            let stats = (!folded.is_empty()).then(|| {
                // The folded groups' durations added in their sorted order.
                let mut d = Fig {
                    approx: 0.0,
                    bound: 0.0,
                    exact: Some(Num::micros(0)),
                };
                let mut magnitude = 0.0;
                for &(_, _, g) in &folded {
                    d.approx += g.approx;
                    d.bound += g.bound;
                    magnitude += g.approx.abs() + g.bound;
                    d.exact = match (d.exact, g.exact) {
                        (Some(Num::Exact { num: x, .. }), Some(Num::Exact { num: y, .. })) => {
                            Some(Num::micros(x + y))
                        }
                        _ => None,
                    };
                }
                if d.bound > 0.0 {
                    d.bound += 2.0 * (folded.len() as f64 + 1.0) * U * magnitude;
                }
                let calls: u64 = folded.iter().map(|(_, a, _)| a.calls).sum();
                let exact_mean = match d.exact {
                    Some(Num::Exact { num, .. }) => Some(Num::micros_over(num, calls)),
                    _ => None,
                };
                let (min, max) =
                    folded
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |m, (_, a, _)| {
                            let (lo, hi) = extremes(a);
                            (m.0.min(lo), m.1.max(hi))
                        });
                let st = stats(
                    calls,
                    (d, d.over(calls, exact_mean), d.percent(whole, o.pfact)),
                    (min, max),
                    &mut settle,
                );
                let deps: Vec<(&str, &Agg)> = folded.iter().map(|&(l, a, _)| (l, a)).collect();
                settle.depends(&deps, true);
                st
            });
            Row {
                label: format!("{} others", all.len() - shown),
                stats,
            }
        });
        let total = Row {
            label: format!("TOTAL ({n})"),
            stats: (calls > 0).then(|| {
                let with_calls = all.iter().filter(|(_, a)| a.calls > 0);
                let (min, max) =
                    with_calls.fold((f64::INFINITY, f64::NEG_INFINITY), |m, (_, a)| {
                        let (lo, hi) = extremes(a);
                        (m.0.min(lo), m.1.max(hi))
                    });
                let exact_mean = Some(Num::micros_over(sum_us, calls));
                let mean = whole.over(calls, whole.exact.and(exact_mean));
                // TOTAL's own share: itself over itself, exactly --pfact.
                let st = stats(
                    calls,
                    (whole, mean, Fig::known(o.pfact)),
                    (min, max),
                    &mut settle,
                );
                settle.depends(&[], true);
                st
            }),
        };
        Report {
            group_label: group_label.to_string(),
            select_label: select_label.to_string(),
            rows,
            others,
            total,
            groups: n,
            resolve,
        }
    }

    /// Whether every figure is Perl's to the last printed digit; if not,
    /// [`Self::resolve`] says what a second read must keep.
    pub fn settled(&self) -> bool {
        self.resolve.labels.is_empty() && !self.resolve.total
    }

    /// Calls counted in all groups.
    pub fn calls(&self) -> u64 {
        self.total.stats.map_or(0, |s| s.calls)
    }

    pub fn render(&self, o: &Layout) -> String {
        match o.format {
            Format::Text => self.text(o),
            Format::Csv => self.csv(o),
            Format::Json => self.json(o),
        }
    }

    /// Column 1 as printed: at most `--gwidth` characters.
    fn label(&self, label: &str, o: &Layout) -> String {
        match o.gwidth {
            Some(w) if label.chars().count() > w => label.chars().take(w).collect(),
            _ => label.to_string(),
        }
    }

    fn cells(&self, row: &Row, o: &Layout, sep_commas: bool) -> [String; 7] {
        let p = o.precision;
        let label = self.label(&row.label, o);
        match &row.stats {
            Some(s) => [
                label,
                fixed(s.nums.duration, p, sep_commas),
                o.pform.format(s.nums.percent),
                count(s.calls, sep_commas),
                fixed(s.nums.mean, p, sep_commas),
                fixed(s.nums.min, p, sep_commas),
                fixed(s.nums.max, p, sep_commas),
            ],
            None => [
                label,
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        }
    }

    fn header(&self, o: &Layout) -> [String; 7] {
        [
            self.label(&self.group_label, o),
            self.select_label.clone(),
            o.plabel.clone(),
            "CALLS".to_string(),
            "MEAN".to_string(),
            "MIN".to_string(),
            "MAX".to_string(),
        ]
    }

    fn body(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().chain(self.others.iter())
    }

    fn text(&self, o: &Layout) -> String {
        let header = self.header(o);
        let body: Vec<[String; 7]> = self.body().map(|r| self.cells(r, o, o.commas)).collect();
        let total = self.cells(&self.total, o, o.commas);
        // Each column is as wide as its widest printed cell.
        let mut width = [0usize; 7];
        let head = o.head.then_some(&header);
        let foot = o.foot.then_some(&total);
        for cells in head.into_iter().chain(body.iter()).chain(foot) {
            for (w, c) in width.iter_mut().zip(cells.iter()) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String; 7]| -> String {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(width.iter()).enumerate() {
                if i > 0 {
                    s.push_str(&o.separator);
                }
                let pad = w.saturating_sub(c.chars().count());
                if i == 0 {
                    s.push_str(c);
                    s.extend(std::iter::repeat_n(' ', pad));
                } else {
                    s.extend(std::iter::repeat_n(' ', pad));
                    s.push_str(c);
                }
            }
            s.push('\n');
            s
        };
        let dashes: [String; 7] = std::array::from_fn(|i| "-".repeat(width[i]));
        let mut out = String::new();
        if o.head {
            out.push_str(&line(&header));
            if o.dashes {
                out.push_str(&line(&dashes));
            }
        }
        for cells in &body {
            out.push_str(&line(cells));
        }
        if o.foot {
            if o.dashes {
                out.push_str(&line(&dashes));
            }
            out.push_str(&line(&total));
        }
        out
    }

    fn csv(&self, o: &Layout) -> String {
        fn field(s: &str) -> String {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
        let mut out = String::new();
        let mut put = |cells: &[String]| {
            let joined: Vec<String> = cells.iter().map(|c| field(c)).collect();
            let _ = writeln!(out, "{}", joined.join(","));
        };
        if o.head {
            put(&self.header(o));
        }
        let rows = self.body().chain(o.foot.then_some(&self.total));
        for r in rows {
            let mut c = self.cells(r, o, false);
            c[2] = c[2].trim().trim_end_matches('%').to_string();
            put(&c);
        }
        out
    }

    /// JSON with the table's numbers, rounded as the table rounds them
    /// (`--precision` decimals, the percentage as `--pform` has it).
    fn json(&self, o: &Layout) -> String {
        #[derive(Serialize)]
        struct JsonStats {
            duration: Box<RawValue>,
            percent: Box<RawValue>,
            calls: u64,
            mean: Box<RawValue>,
            min: Box<RawValue>,
            max: Box<RawValue>,
        }
        #[derive(Serialize)]
        struct JsonRow {
            label: String,
            #[serde(flatten)]
            stats: Option<JsonStats>,
        }
        #[derive(Serialize)]
        struct JsonReport {
            group_label: String,
            select_label: String,
            rows: Vec<JsonRow>,
            others: Option<JsonRow>,
            total: JsonRow,
            groups: usize,
        }
        let number = |text: String| -> Box<RawValue> {
            // "Inf" and "NaN" are not JSON numbers.
            let text = if text.parse::<f64>().is_ok_and(f64::is_finite) {
                text
            } else {
                "null".to_string()
            };
            RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned())
        };
        let percent_precision = o.pform.precision();
        let row = |r: &Row| JsonRow {
            label: r.label.clone(),
            stats: r.stats.map(|s| JsonStats {
                duration: number(s.nums.duration.fixed(o.precision)),
                percent: number(s.nums.percent.fixed(percent_precision)),
                calls: s.calls,
                mean: number(s.nums.mean.fixed(o.precision)),
                min: number(s.nums.min.fixed(o.precision)),
                max: number(s.nums.max.fixed(o.precision)),
            }),
        };
        let report = JsonReport {
            group_label: self.group_label.clone(),
            select_label: self.select_label.clone(),
            rows: self.rows.iter().map(row).collect(),
            others: self.others.as_ref().map(row),
            total: row(&self.total),
            groups: self.groups,
        };
        let mut s = serde_json::to_string_pretty(&report).unwrap_or_default();
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::at;

    fn groups() -> Groups {
        let mut g = Groups::default();
        g.add("EXEC", 0.000030, Some(30), at(0, 1));
        g.add("SQL*Net message from client", 0.001, Some(1000), at(0, 2));
        g.add("SQL*Net message from client", 0.002, Some(2000), at(0, 3));
        g.touch("empty", at(0, 4));
        g
    }

    #[test]
    fn text_table_layout() {
        let o = Layout::default();
        let r = Report::build(groups(), &o, "CALL-NAME", "DURATION");
        let t = r.render(&o);
        let expected = "\
CALL-NAME                    DURATION       %  CALLS      MEAN       MIN       MAX
---------------------------  --------  ------  -----  --------  --------  --------
SQL*Net message from client  0.003000   99.0%      2  0.001500  0.001000  0.002000
EXEC                         0.000030    1.0%      1  0.000030  0.000030  0.000030
empty                                                                             
---------------------------  --------  ------  -----  --------  --------  --------
TOTAL (3)                    0.003030  100.0%      3  0.001010  0.000030  0.002000
";
        assert_eq!(t, expected);
    }

    #[test]
    fn top_folds_into_others_and_csv_has_no_separators() {
        let mut o = Layout {
            top: 1,
            ..Layout::default()
        };
        let r = Report::build(groups(), &o, "CALL-NAME", "DURATION");
        assert_eq!(r.others.as_ref().unwrap().label, "2 others");
        assert_eq!(r.others.as_ref().unwrap().stats.unwrap().calls, 1);
        o.format = Format::Csv;
        let csv = r.render(&o);
        assert_eq!(
            csv.lines().next().unwrap(),
            "CALL-NAME,DURATION,%,CALLS,MEAN,MIN,MAX"
        );
        assert_eq!(
            csv.lines().last().unwrap(),
            "TOTAL (3),0.003030,100.0,3,0.001010,0.000030,0.002000"
        );
    }

    #[test]
    fn ties_keep_the_order_groups_first_appeared_in() {
        let mut g = Groups::default();
        // Appearing in the order CLOSE, PARSE, FETCH, all at zero.
        g.add("FETCH", 0.0, Some(0), at(0, 30));
        g.add("CLOSE", 0.0, Some(0), at(0, 10));
        g.add("PARSE", 0.0, Some(0), at(0, 20));
        g.add("EXEC", 0.5, Some(500_000), at(0, 40));
        g.add("PARSE", 0.0, Some(0), at(1, 0));
        let o = Layout::default();
        let r = Report::build(g, &o, "CALL-NAME", "DURATION");
        let labels: Vec<&str> = r.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["EXEC", "CLOSE", "PARSE", "FETCH"]);
        // Ascending too, and on equal means (equal doubles too:
        // perl -e 'printf "%.25g\n", $_ for 10*1e-6, (10*1e-6+10*1e-6)/2, (15*1e-6+5*1e-6)/2'
        // prints 9.999999999999999123964645e-06 three times).
        let o = Layout {
            sort: Sort::parse("5na").unwrap(),
            ..Layout::default()
        };
        let mut g = Groups::default();
        g.add("b", 10.0 * 1e-6, Some(10), at(0, 2));
        g.add("b", 10.0 * 1e-6, Some(10), at(0, 3));
        g.add("a", 15.0 * 1e-6, Some(15), at(0, 5));
        g.add("a", 5.0 * 1e-6, Some(5), at(0, 6));
        g.add("c", 10.0 * 1e-6, Some(10), at(0, 1));
        let r = Report::build(g, &o, "x", "y");
        let labels: Vec<&str> = r.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["c", "b", "a"]);
    }

    #[test]
    fn means_and_percentages_are_perls_doubles() {
        // 34,593 µs over 6 calls is 5765.5 µs, a tie the double breaks:
        // perl -e '$s=0; $s+=$_*1e-6 for 5000,6000,5593,6000,6000,6000;
        //   printf "%.6f %.6f %.1f\n", $s, $s/6, $s/($s+34593*1e-6)*100'
        // prints 0.034593 0.005765 50.0
        let mut g = Groups::default();
        for (i, us) in [5000, 6000, 5593, 6000, 6000, 6000].iter().enumerate() {
            g.add(
                "cursor: pin S wait on X",
                *us as f64 * 1e-6,
                Some(*us),
                at(0, i as u64),
            );
        }
        g.add("other", 34_593.0 * 1e-6, Some(34_593), at(0, 9));
        let o = Layout::default();
        let r = Report::build(g, &o, "CALL-NAME", "DURATION");
        let t = r.render(&o);
        assert!(
            t.contains("cursor: pin S wait on X  0.034593   50.0%      6  0.005765"),
            "{t}"
        );
    }

    #[test]
    fn gwidth_pform_plabel_pfact() {
        let o = Layout {
            gwidth: Some(8),
            pform: PercentFormat::parse("%.3f").unwrap(),
            plabel: "SHARE".into(),
            pfact: 1.0,
            ..Layout::default()
        };
        let r = Report::build(groups(), &o, "CALL-NAME", "DURATION");
        let t = r.render(&o);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "CALL-NAM  DURATION  SHARE  CALLS      MEAN       MIN       MAX"
        );
        assert_eq!(
            lines[2],
            "SQL*Net   0.003000  0.990      2  0.001500  0.001000  0.002000"
        );
        assert!(lines[6].starts_with("TOTAL (3  0.003030  1.000"), "{t}");
    }

    #[test]
    fn json_numbers_are_the_tables() {
        let o = Layout {
            format: Format::Json,
            ..Layout::default()
        };
        let mut g = Groups::default();
        for (i, us) in [5000, 6000, 5593, 6000, 6000, 6000].iter().enumerate() {
            g.add("x", *us as f64 * 1e-6, Some(*us), at(0, i as u64));
        }
        let r = Report::build(g, &o, "CALL-NAME", "DURATION");
        let j = r.render(&o);
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["rows"][0]["label"], "x");
        assert!(j.contains("\"mean\": 0.005765,"), "{j}");
        assert!(j.contains("\"percent\": 100.0,"), "{j}");
        assert_eq!(v["total"]["calls"], 6);
    }

    #[test]
    fn label_sort_is_numeric_like_perl() {
        assert_eq!(perl_str_to_num(" 3. x"), 3.0);
        assert_eq!(perl_str_to_num("10.   100"), 10.0);
    }

    #[test]
    fn sort_specs() {
        assert_eq!(Sort::parse("no").unwrap(), Sort::None);
        assert_eq!(
            Sort::parse("1na").unwrap(),
            Sort::By {
                column: 1,
                numeric: true,
                descending: false
            }
        );
        assert_eq!(
            Sort::parse("1a").unwrap(),
            Sort::By {
                column: 1,
                numeric: false,
                descending: false
            }
        );
        assert_eq!(
            Sort::parse("4nd").unwrap(),
            Sort::By {
                column: 4,
                numeric: true,
                descending: true
            }
        );
        assert!(Sort::parse("9nd").is_err());
        assert!(Sort::parse("2x").is_err());
    }
}
