//! The profiler's options, resolved: defaults are mrskew's. One flat set,
//! as mrskew's command line and rc files give them; the engine takes them
//! apart into the question, the table's layout and how files are read.

use tracelab_query::{Format, Layout, PercentFormat, Profiling, Question, Sort, Units};

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
    /// [`tracelab_query::Profiling::min_split`]).
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
        let q = Question::default();
        let l = Layout::default();
        let p = Profiling::default();
        SkewOptions {
            where0: q.where0,
            where1: q.where1,
            name: q.name,
            group: q.group,
            buckets: q.buckets,
            group_label: q.group_label,
            select: q.select,
            select_label: q.select_label,
            sort: l.sort,
            top: l.top,
            precision: l.precision,
            gwidth: l.gwidth,
            pfact: l.pfact,
            pform: l.pform,
            plabel: l.plabel,
            units: q.units,
            max_line: p.max_line,
            min_split: p.min_split,
            commas: l.commas,
            head: l.head,
            foot: l.foot,
            dashes: l.dashes,
            format: l.format,
            separator: l.separator,
            thinktime: p.thinktime,
            depmin: p.depmin,
            unaccounted: p.unaccounted,
            verbose: p.verbose,
            jobs: p.jobs,
        }
    }
}

impl SkewOptions {
    /// The question: filters, group, selected value, units.
    pub fn question(&self) -> Question {
        Question {
            where0: self.where0.clone(),
            where1: self.where1.clone(),
            name: self.name.clone(),
            group: self.group.clone(),
            buckets: self.buckets.clone(),
            group_label: self.group_label.clone(),
            select: self.select.clone(),
            select_label: self.select_label.clone(),
            units: self.units,
        }
    }

    /// The table's layout.
    pub fn layout(&self) -> Layout {
        Layout {
            sort: self.sort,
            top: self.top,
            precision: self.precision,
            gwidth: self.gwidth,
            pfact: self.pfact,
            pform: self.pform.clone(),
            plabel: self.plabel.clone(),
            commas: self.commas,
            head: self.head,
            foot: self.foot,
            dashes: self.dashes,
            format: self.format,
            separator: self.separator.clone(),
        }
    }

    /// Everything the engine's reader of many files takes.
    pub fn profiling(&self) -> Profiling {
        Profiling {
            question: self.question(),
            layout: self.layout(),
            max_line: self.max_line,
            min_split: self.min_split,
            thinktime: self.thinktime,
            depmin: self.depmin,
            unaccounted: self.unaccounted,
            verbose: self.verbose,
            jobs: self.jobs,
        }
    }
}
