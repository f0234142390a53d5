//! `tracelab ls`: one line of facts per trace file (mrls).

use tracelab_tools::{list, list_files, render_table, sort, SortKey};

use crate::exit::{self, Failure};
use crate::output::{out, say};

const AFTER_HELP: &str = "\
Columns: FILE, SIZE (bytes on disk), VERSION (Oracle's), SESSION (sid.serial#), MODULE, ACTION,
  CLIENT-ID (the first of each in the file), FIRST (wall clock of the first call's start), LAST
  (of the last call's end), DURATION (seconds between them), CALLS (database calls and waits),
  STATEMENTS (distinct statements parsed). - where the file does not say.
A directory stands for its *.trc files (compressed too: .trc.gz, .bz2, .xz, .zst), in name order.
Exit status: 0 done, 1 some file could not be read (the others are listed), 2 bad usage.";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Trace files or directories (plain, gzip, bzip2, xz or zstd).
    #[arg(value_name = "FILE|DIR", required = true)]
    paths: Vec<String>,
    /// Sort by this column: file, size, version, session, module, action,
    /// client_id, first, last, duration, calls, statements.
    #[arg(long, value_name = "COLUMN", default_value = "file")]
    sort: String,
    /// Sort in descending order.
    #[arg(long, short)]
    reverse: bool,
    /// One JSON array of objects (every field, null where absent).
    #[arg(long)]
    json: bool,
    /// Files read at once [default: one per core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let key = SortKey::from_name(&a.sort).ok_or_else(|| {
        Failure::Usage(format!(
            "--sort={}: expected one of {}",
            a.sort,
            SortKey::NAMES.join(", ")
        ))
    })?;
    let files = list_files(&a.paths)?;
    if files.is_empty() {
        say!(
            "tracelab: no trace file (*.trc, compressed or not) in {}",
            a.paths.join(" ")
        );
        return Ok(exit::TROUBLE);
    }
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut rows = Vec::new();
    let mut status = exit::OK;
    for r in list(&files, jobs) {
        match r {
            Ok(l) => {
                for w in &l.warnings {
                    say!("tracelab: warning: {w}");
                }
                rows.push(l)
            }
            Err(e) => {
                say!("tracelab: {e}");
                status = exit::TROUBLE;
            }
        }
    }
    sort(&mut rows, key, a.reverse);
    if a.json {
        let mut s = serde_json::to_string_pretty(&rows).expect("listings serialise");
        s.push('\n');
        out(&s)?;
    } else if !rows.is_empty() {
        out(&render_table(&rows))?;
    }
    Ok(status)
}
