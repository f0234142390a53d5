//! The mrskew-compatible profiler behind `tracelab skew`: filter calls with
//! mrskew's expressions, group them, and print mrskew's table (or CSV or
//! JSON), over any number of plain or compressed trace files, in parallel.

mod aggregate;
pub mod buckets;
mod error;
pub mod number;
mod options;
mod query;
pub mod rc;
mod report;
mod run;
mod vars;

pub use aggregate::{Agg, Groups, Resolve};
pub use error::SkewError;
pub use number::{Num, PercentFormat};
pub use options::{Format, SkewOptions, Sort, Units};
pub use query::{NameCache, Query};
pub use report::{Nums, Report, Row, Stats};
pub use run::{profile, FileOutcome, Outcome};
pub use vars::{CallVars, Conversions};
