//! The profile as rows (sorted, folded into `N others`, totalled) and its
//! renderings: mrskew's text table to the character, CSV and JSON.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::value::RawValue;
use tracelab_expr::perl_str_to_num;

use crate::aggregate::{Agg, Groups};
use crate::number::{count, fixed, Num};
use crate::options::{Format, SkewOptions, Sort};

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
}

/// The whole profile's sum, for percentages: exact while every group is.
struct Whole {
    us: Option<i128>,
    float: f64,
}

fn stats(a: &Agg, whole: &Whole, pfact: f64) -> Option<Stats> {
    (a.calls > 0).then(|| {
        let percent = match (whole.us, a.exact()) {
            (Some(t), true) => Num::ratio(a.sum_us, t, pfact),
            _ if whole.float != 0.0 => Num::Float(a.sum().to_f64() / whole.float * pfact),
            _ => Num::Float(0.0),
        };
        let nums = Nums {
            duration: a.sum(),
            percent,
            mean: a.mean(),
            min: a.min(),
            max: a.max(),
        };
        Stats {
            duration: nums.duration.to_f64(),
            percent: nums.percent.to_f64(),
            calls: a.calls,
            mean: nums.mean.to_f64(),
            min: nums.min.to_f64(),
            max: nums.max.to_f64(),
            nums,
        }
    })
}

/// Orders two groups by sort column `col` (2 to 7); exact values exactly.
fn by_column(x: &Agg, y: &Agg, col: u8) -> Ordering {
    // A group with no calls sorts as zero.
    let key = |a: &Agg| -> Num {
        if a.calls == 0 {
            return Num::micros(0);
        }
        match col {
            4 => Num::Exact {
                num: i128::from(a.calls),
                den: 1,
                exp10: 0,
            },
            5 => a.mean(),
            6 => a.min(),
            7 => a.max(),
            _ => a.sum(),
        }
    };
    key(x).compare(key(y))
}

impl Report {
    pub fn build(groups: Groups, o: &SkewOptions, group_label: &str, select_label: &str) -> Report {
        let n = groups.map.len();
        let mut all: Vec<(Box<str>, Agg)> = groups.map.into_iter().collect();
        let whole = Whole {
            us: all
                .iter()
                .all(|(_, a)| a.exact())
                .then(|| all.iter().map(|(_, a)| a.sum_us).sum()),
            float: all.iter().map(|(_, a)| a.sum().to_f64()).sum(),
        };
        // First appearance first: ties in the sort column keep it, as
        // mrskew's stable sort keeps the order groups appeared in.
        all.sort_by_key(|x| x.1.first);
        if let Sort::By {
            column,
            numeric,
            descending,
        } = o.sort
        {
            all.sort_by(|(lx, ax), (ly, ay)| {
                let ord = if column == 1 {
                    if numeric {
                        perl_str_to_num(lx)
                            .partial_cmp(&perl_str_to_num(ly))
                            .unwrap_or(Ordering::Equal)
                    } else {
                        lx.cmp(ly)
                    }
                } else {
                    by_column(ax, ay, column)
                };
                if descending {
                    ord.reverse()
                } else {
                    ord
                }
            });
        }
        // mrskew folds only when at least two groups would fold: a lone
        // leftover group is shown rather than called "1 others".
        let shown = if o.top == 0 || all.len() <= o.top + 1 {
            all.len()
        } else {
            o.top
        };
        let rows = all[..shown]
            .iter()
            .map(|(l, a)| Row {
                label: l.to_string(),
                stats: stats(a, &whole, o.pfact),
            })
            .collect();
        let sum_of = |groups: &[(Box<str>, Agg)]| {
            groups.iter().map(|(_, a)| *a).reduce(|mut x, a| {
                x.merge(&a);
                x
            })
        };
        let others = (shown < all.len()).then(|| Row {
            label: format!("{} others", all.len() - shown),
            stats: sum_of(&all[shown..]).and_then(|a| stats(&a, &whole, o.pfact)),
        });
        let tot = sum_of(&all);
        let total = Row {
            label: format!("TOTAL ({n})"),
            stats: tot.and_then(|a| stats(&a, &whole, o.pfact)).map(|mut s| {
                s.nums.percent = Num::ratio(1, 1, o.pfact);
                s.percent = o.pfact;
                s
            }),
        };
        Report {
            group_label: group_label.to_string(),
            select_label: select_label.to_string(),
            rows,
            others,
            total,
            groups: n,
        }
    }

    /// Calls counted in all groups.
    pub fn calls(&self) -> u64 {
        self.total.stats.map_or(0, |s| s.calls)
    }

    pub fn render(&self, o: &SkewOptions) -> String {
        match o.format {
            Format::Text => self.text(o),
            Format::Csv => self.csv(o),
            Format::Json => self.json(o),
        }
    }

    /// Column 1 as printed: at most `--gwidth` characters.
    fn label(&self, label: &str, o: &SkewOptions) -> String {
        match o.gwidth {
            Some(w) if label.chars().count() > w => label.chars().take(w).collect(),
            _ => label.to_string(),
        }
    }

    fn cells(&self, row: &Row, o: &SkewOptions, sep_commas: bool) -> [String; 7] {
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

    fn header(&self, o: &SkewOptions) -> [String; 7] {
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

    fn text(&self, o: &SkewOptions) -> String {
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

    fn csv(&self, o: &SkewOptions) -> String {
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
    fn json(&self, o: &SkewOptions) -> String {
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
    use crate::number::PercentFormat;

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
        let o = SkewOptions::default();
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
        let mut o = SkewOptions {
            top: 1,
            ..SkewOptions::default()
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
        let o = SkewOptions::default();
        let r = Report::build(g, &o, "CALL-NAME", "DURATION");
        let labels: Vec<&str> = r.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["EXEC", "CLOSE", "PARSE", "FETCH"]);
        // Ascending too, and on equal means.
        let o = SkewOptions {
            sort: Sort::parse("5na").unwrap(),
            ..SkewOptions::default()
        };
        let mut g = Groups::default();
        g.add("b", 0.0, Some(10), at(0, 2));
        g.add("b", 0.0, Some(10), at(0, 3));
        g.add("a", 0.0, Some(15), at(0, 5));
        g.add("a", 0.0, Some(5), at(0, 6));
        g.add("c", 0.0, Some(10), at(0, 1));
        let r = Report::build(g, &o, "x", "y");
        let labels: Vec<&str> = r.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["c", "b", "a"]);
    }

    #[test]
    fn means_and_percentages_round_half_up() {
        let mut g = Groups::default();
        for (i, us) in [5000, 6000, 5593, 6000, 6000, 6000].iter().enumerate() {
            g.add("cursor: pin S wait on X", 0.0, Some(*us), at(0, i as u64));
        }
        g.add("other", 0.0, Some(34_593), at(0, 9));
        let o = SkewOptions::default();
        let r = Report::build(g, &o, "CALL-NAME", "DURATION");
        let t = r.render(&o);
        assert!(
            t.contains("cursor: pin S wait on X  0.034593   50.0%      6  0.005766"),
            "{t}"
        );
    }

    #[test]
    fn gwidth_pform_plabel_pfact() {
        let o = SkewOptions {
            gwidth: Some(8),
            pform: PercentFormat::parse("%.3f").unwrap(),
            plabel: "SHARE".into(),
            pfact: 1.0,
            ..SkewOptions::default()
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
        let o = SkewOptions {
            format: Format::Json,
            ..SkewOptions::default()
        };
        let mut g = Groups::default();
        for (i, us) in [5000, 6000, 5593, 6000, 6000, 6000].iter().enumerate() {
            g.add("x", 0.0, Some(*us), at(0, i as u64));
        }
        let r = Report::build(g, &o, "CALL-NAME", "DURATION");
        let j = r.render(&o);
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["rows"][0]["label"], "x");
        assert!(j.contains("\"mean\": 0.005766,"), "{j}");
        assert!(j.contains("\"percent\": 100.0,"), "{j}");
        assert_eq!(v["total"]["calls"], 6);
    }

    #[test]
    fn label_sort_is_numeric_like_perl() {
        assert_eq!(perl_str_to_num(" 3. x"), 3.0);
        assert_eq!(perl_str_to_num("10.   100"), 10.0);
    }
}
