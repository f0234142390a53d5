//! The question asked of the calls: which count, how they are grouped,
//! what is summed, in which units the trace's times are. Defaults are
//! mrskew's.

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

/// What [`crate::Query::new`] compiles.
#[derive(Debug, Clone)]
pub struct Question {
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
    pub units: Units,
}

impl Default for Question {
    fn default() -> Self {
        Question {
            where0: "1".into(),
            where1: "$dep==$depmin".into(),
            name: ".+".into(),
            group: None,
            buckets: None,
            group_label: None,
            select: None,
            select_label: None,
            units: Units::default(),
        }
    }
}
