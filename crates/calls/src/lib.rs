//! The call model as tables, for engines that scale past one machine:
//! `tracelab calls` writes one row per call (the calls `tracelab skew`
//! sees, with the same filters) as Parquet, CSV or JSON lines, with a
//! `statements` table (each statement's text once) and a `files` table
//! (each trace's header facts), so that DuckDB on one machine and Spark on
//! a cluster answer mrskew's questions over a fleet's traces.
//!
//! Layout of a directory output (`--output DIR`):
//!
//! ```text
//! DIR/calls/file_id=0/part-0.parquet    one partition per input file (engines prune)
//! DIR/calls/file_id=1/part-0.parquet
//! DIR/statements.parquet
//! DIR/files.parquet
//! ```
//!
//! A file output (`--output x.parquet`) holds every call in one file, with
//! a `file_id` column, and the two small tables beside it
//! (`x.statements.parquet`, `x.files.parquet`).

mod columns;
mod encode;
mod error;
mod export;
mod header;
mod sink;
mod tables;
mod text;

use std::path::{Path, PathBuf};

pub use columns::{schema as calls_schema, BATCH_ROWS, ENCODINGS};
pub use error::CallsError;
pub use export::export;
pub use header::{parse_timestamp, Header};
pub use sink::{Encodings, Format, ROW_GROUP_ROWS};
pub use tables::{StatementRow, Statements};
use tracelab_trace::Diagnostics;

/// What `tracelab calls` was asked.
#[derive(Debug, Clone)]
pub struct CallsOptions {
    /// `--where` (mrskew's where0).
    pub where0: String,
    /// `$dep==$depmin`, or `1` with `--alldepths`.
    pub where1: String,
    /// `--name`: a case-insensitive regex, or `:all`, `:dbcall`, `:oscall`.
    pub name: String,
    /// Seconds of SQL*Net message from client that end an island.
    pub thinktime: f64,
    /// A fixed minimum depth instead of each file's own.
    pub depmin: Option<i64>,
    /// The format; `None` takes it from the output's extension (Parquet
    /// when it has none).
    pub format: Option<Format>,
    pub output: PathBuf,
    /// Worker threads; 0 is one per core.
    pub jobs: usize,
    /// Longest line read (bytes); a longer one is warned about and read as
    /// empty.
    pub max_line: usize,
}

impl Default for CallsOptions {
    fn default() -> Self {
        CallsOptions {
            where0: "1".into(),
            where1: "$dep==$depmin".into(),
            name: ".+".into(),
            thinktime: 1.0,
            depmin: None,
            format: None,
            output: PathBuf::from("calls"),
            jobs: 0,
            max_line: tracelab_trace::DEFAULT_MAX_LINE,
        }
    }
}

/// What happened to one input file.
#[derive(Debug, Clone, Default)]
pub struct FileOutcome {
    /// Its `file_id` in the tables: its position on the command line.
    pub file_id: i32,
    pub name: String,
    pub basename: Option<String>,
    pub compression: Option<String>,
    /// Why the file was skipped (unreadable, not a trace), if it was.
    pub skipped: Option<String>,
    /// Damaged lines and expression errors, with file and line.
    pub warnings: Diagnostics,
    pub lines: u64,
    pub calls: u64,
    /// Calls written (those that passed the filter).
    pub rows: u64,
    pub depmin: i64,
    pub header: Option<Header>,
}

/// What an export wrote and found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub files: Vec<FileOutcome>,
    pub rows: u64,
    pub statements: usize,
    /// Where each table went.
    pub layout: Option<Layout>,
    pub format: Option<Format>,
}

impl Outcome {
    /// Whether any input was skipped or damaged: the exit status says so.
    pub fn had_trouble(&self) -> bool {
        self.files
            .iter()
            .any(|f| f.skipped.is_some() || f.warnings.total > 0)
    }
}

/// Where the tables go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// `DIR/calls/file_id=N/part-0.EXT`, `DIR/statements.EXT`,
    /// `DIR/files.EXT`.
    Dir(PathBuf),
    /// Every call in this file; the small tables beside it.
    File(PathBuf),
}

impl Layout {
    /// A path that exists as a directory, ends in `/`, or has no extension
    /// is a directory; `x.parquet`, `x.csv`, `x.jsonl` a file; any other
    /// extension (`x.xlsx`) is refused.
    pub fn resolve(output: &Path, format: Option<Format>) -> Result<(Layout, Format), CallsError> {
        let named = Format::of_path(output);
        let dir_named = output.is_dir() || output.as_os_str().to_string_lossy().ends_with('/');
        // `x.xlsx` is a file the user expects in a format calls does not
        // write, not a directory to create: refused, with the ways out.
        if let (false, None, Some(ext)) = (dir_named, named, output.extension()) {
            return Err(CallsError::Usage(format!(
                "--output {}: .{} is not a format calls writes: name a .parquet, .csv or .jsonl file, or a directory ({}/ to make a directory of that name)",
                output.display(),
                ext.to_string_lossy(),
                output.display()
            )));
        }
        let is_dir = dir_named || named.is_none();
        if is_dir {
            return Ok((
                Layout::Dir(output.to_path_buf()),
                format.unwrap_or(Format::Parquet),
            ));
        }
        match (named, format) {
            (Some(n), Some(f)) if n != f => Err(CallsError::Usage(format!(
                "--output {} names a .{} file but --format is {}",
                output.display(),
                n.extension(),
                f.extension()
            ))),
            (n, f) => Ok((
                Layout::File(output.to_path_buf()),
                f.or(n).unwrap_or(Format::Parquet),
            )),
        }
    }

    /// The calls of file `file_id` (a directory output), or of every
    /// file.
    pub fn calls_path(&self, file_id: i32, format: Format) -> PathBuf {
        match self {
            Layout::Dir(d) => d
                .join("calls")
                .join(format!("file_id={file_id}"))
                .join(format!("part-0.{}", format.extension())),
            Layout::File(f) => f.clone(),
        }
    }

    /// `statements` or `files`.
    pub fn table_path(&self, table: &str, format: Format) -> PathBuf {
        match self {
            Layout::Dir(d) => d.join(format!("{table}.{}", format.extension())),
            Layout::File(f) => {
                let stem = f
                    .file_stem()
                    .map_or_else(|| "calls".to_string(), |s| s.to_string_lossy().into_owned());
                f.with_file_name(format!("{stem}.{table}.{}", format.extension()))
            }
        }
    }
}
