//! The mrskew front of `tracelab skew`: mrskew's option set and defaults,
//! its rc files, and the profile they ask for. The engine under it (the
//! variables, expressions bound to calls, aggregation, number formatting,
//! buckets, the table, the reader of many files) is `tracelab-query`,
//! which `prof`, `calls` and `study` use directly.

mod error;
mod options;
pub mod rc;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use error::SkewError;
pub use options::SkewOptions;
pub use tracelab_query::{
    FileOutcome, Format, Num, Outcome, PercentFormat, Report, Row, Sort, Stats, Units,
};

/// Profiles `inputs` (paths, or `-` for standard input) as `opts` ask.
/// `progress`, if given, receives the raw bytes read as reading goes.
pub fn profile(
    opts: &SkewOptions,
    inputs: &[String],
    progress: Option<Arc<AtomicU64>>,
) -> Result<Outcome, SkewError> {
    Ok(tracelab_query::profile(
        &opts.profiling(),
        inputs,
        progress,
    )?)
}
