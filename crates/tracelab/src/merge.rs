//! `tracelab merge`: one logical session's lines from many trace files,
//! in time order (trcsess).

use tracelab_tools::Key;

use crate::crop::open_output;
use crate::exit::{self, Failure};
use crate::output::say;

const AFTER_HELP: &str = "\
Chooses in each file the lines written while its *** SESSION ID, CLIENT ID, SERVICE NAME, MODULE
NAME or ACTION NAME (or a 9i APPNAME line) had the value, and writes them in time order (by tim;
files of another tim clock, as on another RAC instance, by wall clock) as one valid trace: the
first file's header, the PARSING IN CURSOR blocks the lines need, cursor numbers that two
processes share renumbered, a *** timestamp wherever needed so that every call keeps its
wall-clock time, and *** [ Unix process pid: N ] where the lines of another process start.
Files of one process (same instance and pid in their headers) share its cursor numbers.
Compressed files are read as they are. Without --value, the first value in the first file.
Exit status: 0 done, 1 a file could not be read or nothing matched, 2 bad usage, 3 output error.";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Trace files (plain, gzip, bzip2, xz or zstd).
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,
    /// What the session is found by: session (sid.serial#), client_id,
    /// service, module or action.
    #[arg(long, value_name = "KEY")]
    by: String,
    /// The value to merge [default: the first in the first file].
    #[arg(long, value_name = "VALUE")]
    value: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<String>,
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let key = Key::from_name(&a.by).ok_or_else(|| {
        Failure::Usage(format!(
            "--by={}: expected session, client_id, service, module or action",
            a.by
        ))
    })?;
    if a.files.iter().any(|f| f == "-") {
        return Err(Failure::Usage(
            "merge: name the files (standard input cannot be merged with them)".into(),
        ));
    }
    let (out, what) = open_output(&a.output, &a.files)?;
    match tracelab_tools::merge(&a.files, key, a.value.as_deref(), out, &what) {
        Ok(done) => {
            for w in &done.warnings {
                say!("tracelab: warning: {w}");
            }
            say!(
                "tracelab: {} {:?}: {} lines of {} file{}{}{}",
                key.name(),
                done.value,
                done.lines,
                done.files,
                if done.files == 1 { "" } else { "s" },
                if done.renumbered > 0 {
                    format!(", {} lines' cursor numbers renumbered", done.renumbered)
                } else {
                    String::new()
                },
                if done.other_clocks > 0 {
                    format!(
                        ", {} file(s) on another tim clock ordered by wall clock",
                        done.other_clocks
                    )
                } else {
                    String::new()
                },
            );
            Ok(if done.lines == 0 {
                exit::TROUBLE
            } else {
                exit::OK
            })
        }
        Err(e) if e.is_broken_pipe() => Ok(exit::OK),
        Err(e) => Err(e.into()),
    }
}
