//! `tracelab prof`: the response-time profile report a DBA reads first,
//! the one tkprof, TVD$XTAT and Method R's Profiler print. Per trace: the
//! resource profile of the whole response time (every call and wait,
//! unaccounted-for time within and between calls, think time), then the
//! statements ranked by their share of it, each with tkprof's call table
//! (with and without its recursive statements), its waits, its row-source
//! plan, its distinct bind sets and the skew of its executions, and the
//! recursive statements under their parents. Text (tkprof's layout for
//! the statements), JSON and one self-contained HTML page.
//!
//! It reads what `tracelab skew` reads (Oracle's traces, and tracelab's own
//! client and proxy traces of PostgreSQL, MariaDB and SQLite), through the
//! same reader and call model.

mod binds;
mod collect;
mod combined;
mod files;
pub mod html;
mod plan;
mod report;
mod stats;
mod text;
mod timeline;
pub mod tkprof;

pub use binds::{BindSet, DISTINCT_CAP, SHOWN_SETS};
pub use combined::render_combined;
pub use files::{
    profile, FileOutcome, Outcome, ProfError, ProfOptions, DEFAULT_DETAIL_LIMIT, DEFAULT_TOP,
};
pub use plan::{Plan, PlanLine};
pub use report::{
    BindReport, ChildRef, Component, Engine, FileProfile, Folded, Slowest, StatementReport,
    Summary, TimelineReport, Totals, WaitRow,
};
pub use stats::{CallSums, CallTable, Dur, P10, P10_BUCKETS};
pub use text::{profile_table, render, secs6, TextOptions};

/// The profiles as JSON: an array with one object per trace.
pub fn to_json(profiles: &[&FileProfile]) -> String {
    let mut s = serde_json::to_string_pretty(profiles).unwrap_or_default();
    s.push('\n');
    s
}
