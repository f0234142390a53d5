//! The query engine over trace calls, the library under `tracelab skew`,
//! `prof`, `calls` and `study`: mrskew's variables read off a call, its
//! expressions bound to them (filters, groups, selected values), sums,
//! counts, minima and maxima that print Perl's figures to the digit,
//! mrskew's number formatting, duration buckets, the table of groups
//! (text, CSV, JSON) and the reader of many files in parallel. The mrskew
//! front (its option set and defaults, rc files) is `tracelab-skew`.

mod aggregate;
pub mod buckets;
mod error;
mod files;
pub mod number;
mod query;
mod question;
mod report;
mod vars;

pub use aggregate::{Agg, Groups, Resolve};
pub use error::QueryError;
pub use files::{profile, FileOutcome, Outcome, Profiling};
pub use number::{Num, PercentFormat};
pub use query::{Hit, NameCache, Query};
pub use question::{Question, Units};
pub use report::{Format, Layout, Nums, Report, Row, Sort, Stats};
pub use vars::{CallVars, Column, ColumnType, Conversions, Field, Var, Variable, VARIABLES};
