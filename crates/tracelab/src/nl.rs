//! `tracelab nl`: a trace's lines numbered, with wall-clock times (mrnl).

use crate::exit::{self, Failure};
use crate::output::say;

const AFTER_HELP: &str = "\
Each line: its number, the wall-clock time of a call's or wait's end (its tim through the latest
*** timestamp before it: the first tim after a timestamp is that time), the seconds since the
previous call's end, and the line as written. Lines without a tim leave both blank.
Exit status: 0 done, 1 the file could not be read, 3 output error.";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// A trace file (plain, gzip, bzip2, xz or zstd); - reads standard input.
    #[arg(value_name = "FILE")]
    file: String,
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let stdout = std::io::stdout().lock();
    match tracelab_tools::number_lines(&a.file, stdout, "standard output") {
        Ok(warnings) => {
            for w in &warnings {
                say!("tracelab: warning: {w}");
            }
            Ok(exit::OK)
        }
        Err(e) if e.is_broken_pipe() => Ok(exit::OK),
        Err(e) => Err(e.into()),
    }
}
