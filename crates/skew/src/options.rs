//! The profiler's options, resolved: defaults are mrskew's.

use crate::number::PercentFormat;

/// How the report is written.
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

/// Seconds per unit of the trace's time fields (mrskew's `--timunit`,
/// `--cpuunit`, `--trcunit`): 1e-6 from Oracle 9i on; 0.01 before (8i
/// wrote centiseconds); 1.024e-6 for the ports whose "microseconds" are
/// nanoseconds shifted right by 10.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Units {
    /// `tim`.
    pub tim: f64,
    /// `c`.
    pub cpu: f64,
    /// `e` and `ela` (and the unaccounted-for pseudo-calls).
    pub elapsed: f64,
}

impl Default for Units {
    fn default() -> Self {
        Units {
            tim: 1e-6,
            cpu: 1e-6,
            elapsed: 1e-6,
        }
    }
}

/// Everything `tracelab skew` was asked, after rc files and defaults.
#[derive(Debug, Clone)]
pub struct SkewOptions {
    /// `--where` (mrskew's where0).
    pub where0: String,
    /// `--where1`; `--alldepths` sets it to `1`.
    pub where1: String,
    /// `--name`: a case-insensitive regex, or `:all`, `:dbcall`, `:oscall`
    /// (`:syscall`).
    pub name: String,
    /// `--group`; `None` groups by call name.
    pub group: Option<String>,
    /// `--buckets`: group by which duration range `$af` falls in, every
    /// range shown (the built-in p10/disk/ssd histograms).
    pub buckets: Option<String>,
    pub group_label: Option<String>,
    pub select: Option<String>,
    pub select_label: Option<String>,
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
    pub units: Units,
    /// `--max-line`: the longest line read, in bytes.
    pub max_line: usize,
    /// A file at least this big is cut into pieces read on several cores
    /// when there are fewer files than cores (see
    /// [`tracelab_trace::ReadOptions::min_split`]).
    pub min_split: u64,
    pub commas: bool,
    pub head: bool,
    pub foot: bool,
    pub dashes: bool,
    pub format: Format,
    pub separator: String,
    /// Seconds of SQL*Net message from client that end an island.
    pub thinktime: f64,
    pub depmin: Option<i64>,
    pub unaccounted: bool,
    pub verbose: bool,
    /// Worker threads; 0 = one per core.
    pub jobs: usize,
}

impl Default for SkewOptions {
    fn default() -> Self {
        SkewOptions {
            where0: "1".into(),
            where1: "$dep==$depmin".into(),
            name: ".+".into(),
            group: None,
            buckets: None,
            group_label: None,
            select: None,
            select_label: None,
            sort: Sort::default(),
            top: 10,
            precision: 6,
            gwidth: None,
            pfact: 100.0,
            pform: PercentFormat::default(),
            plabel: "%".into(),
            units: Units::default(),
            max_line: tracelab_trace::DEFAULT_MAX_LINE,
            min_split: tracelab_trace::MIN_SPLIT,
            commas: true,
            head: true,
            foot: true,
            dashes: true,
            format: Format::Text,
            separator: "  ".into(),
            thinktime: 1.0,
            depmin: None,
            unaccounted: false,
            verbose: false,
            jobs: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
