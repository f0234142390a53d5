//! The trace utilities a Method R user reaches for around the profiler
//! (mrls, mrnl, mrtim/mrwhen, mrcrop, Oracle's trcsess): list trace files
//! with their facts, number their lines with wall-clock times, convert
//! `tim` values, cut out a stretch of a trace and merge the files of one
//! logical session. All read through the trace crate's reader, so plain,
//! gzip, bzip2, xz and zstd files alike.
//!
//! `crop` and `merge` write a valid trace: the statements' PARSING IN
//! CURSOR blocks the kept calls need are carried along, the wall clock of
//! every kept call stays what it was (a `***` timestamp is written where
//! the kept lines alone would map `tim` differently), and in a merge the
//! cursor numbers two processes share are renumbered.

mod crop;
mod error;
mod ls;
mod merge;
mod nl;
mod scan;
mod select;
mod sink;
mod tim;

pub use crop::{crop, parse_bound, Bound, CropOutcome, Selection};
pub use error::ToolsError;
pub use ls::{list, list_files, render_table, sort, Listing, SortKey};
pub use merge::{merge, Key, MergeOutcome};
pub use nl::number_lines;
pub use tim::{anchors, convert, Conversion};
