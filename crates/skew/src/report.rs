//! The profile as rows (sorted, folded into `N others`, totalled) and its
//! renderings: mrskew's text table to the character, CSV and JSON.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde::Serialize;
use tracelab_expr::perl_str_to_num;

use crate::aggregate::{Agg, Groups};
use crate::number::{count, fixed};
use crate::options::{Format, SkewOptions, Sort};

/// The numbers of one row; absent for a group with no calls.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Stats {
    pub duration: f64,
    pub percent: f64,
    pub calls: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub label: String,
    #[serde(flatten)]
    pub stats: Option<Stats>,
}

#[derive(Debug, Clone, Serialize)]
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

fn stats(a: &Agg, total: f64) -> Option<Stats> {
    (a.calls > 0).then(|| {
        let d = a.sum();
        Stats {
            duration: d,
            percent: if total != 0.0 { d / total * 100.0 } else { 0.0 },
            calls: a.calls,
            mean: d / a.calls as f64,
            min: a.min,
            max: a.max,
        }
    })
}

impl Report {
    pub fn build(groups: Groups, o: &SkewOptions, group_label: &str, select_label: &str) -> Report {
        let n = groups.map.len();
        let mut all: Vec<(Box<str>, Agg)> = groups.map.into_iter().collect();
        let total_sum: f64 = all.iter().map(|(_, a)| a.sum()).sum();
        let key = |a: &Agg, col: u8| -> f64 {
            if a.calls == 0 {
                return 0.0;
            }
            match col {
                4 => a.calls as f64,
                5 => a.sum() / a.calls as f64,
                6 => a.min,
                7 => a.max,
                _ => a.sum(),
            }
        };
        match o.sort {
            Sort::None => all.sort_by_key(|x| x.1.first),
            Sort::By {
                column,
                numeric,
                descending,
            } => all.sort_by(|(lx, ax), (ly, ay)| {
                let ord = if column == 1 {
                    if numeric {
                        perl_str_to_num(lx)
                            .partial_cmp(&perl_str_to_num(ly))
                            .unwrap_or(Ordering::Equal)
                            .then_with(|| lx.cmp(ly))
                    } else {
                        lx.cmp(ly)
                    }
                } else {
                    key(ax, column)
                        .partial_cmp(&key(ay, column))
                        .unwrap_or(Ordering::Equal)
                };
                let ord = if descending { ord.reverse() } else { ord };
                ord.then_with(|| lx.cmp(ly))
            }),
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
                stats: stats(a, total_sum),
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
            stats: sum_of(&all[shown..]).and_then(|a| stats(&a, total_sum)),
        });
        let tot = sum_of(&all);
        let total = Row {
            label: format!("TOTAL ({n})"),
            stats: tot.and_then(|a| stats(&a, total_sum)).map(|mut s| {
                s.percent = 100.0;
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
            Format::Json => {
                let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
                s.push('\n');
                s
            }
        }
    }

    fn cells(&self, row: &Row, o: &SkewOptions, sep_commas: bool) -> [String; 7] {
        let p = o.precision;
        match &row.stats {
            Some(s) => [
                row.label.clone(),
                fixed(s.duration, p, sep_commas),
                format!("{:.1}%", s.percent),
                count(s.calls, sep_commas),
                fixed(s.mean, p, sep_commas),
                fixed(s.min, p, sep_commas),
                fixed(s.max, p, sep_commas),
            ],
            None => [
                row.label.clone(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        }
    }

    fn body(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().chain(self.others.iter())
    }

    fn text(&self, o: &SkewOptions) -> String {
        let header = [
            self.group_label.clone(),
            self.select_label.clone(),
            "%".to_string(),
            "CALLS".to_string(),
            "MEAN".to_string(),
            "MIN".to_string(),
            "MAX".to_string(),
        ];
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
            put(&[
                self.group_label.clone(),
                self.select_label.clone(),
                "%".into(),
                "CALLS".into(),
                "MEAN".into(),
                "MIN".into(),
                "MAX".into(),
            ]);
        }
        for r in self.body() {
            let mut c = self.cells(r, o, false);
            c[2] = c[2].trim_end_matches('%').to_string();
            put(&c);
        }
        if o.foot {
            let mut c = self.cells(&self.total, o, false);
            c[2] = c[2].trim_end_matches('%').to_string();
            put(&c);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> Groups {
        let mut g = Groups::default();
        g.add("EXEC", 0.000030, Some(30), (0, 1));
        g.add("SQL*Net message from client", 0.001, Some(1000), (0, 2));
        g.add("SQL*Net message from client", 0.002, Some(2000), (0, 3));
        g.touch("empty", (0, 4));
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
    fn label_sort_is_numeric_like_perl() {
        assert_eq!(perl_str_to_num(" 3. x"), 3.0);
        assert_eq!(perl_str_to_num("10.   100"), 10.0);
    }
}
