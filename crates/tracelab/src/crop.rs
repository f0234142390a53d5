//! `tracelab crop`: a stretch of a trace as a valid trace (mrcrop).

use std::io::Write;

use tracelab_tools::{parse_bound, Selection};

use crate::exit::{self, Failure};
use crate::output::say;

const AFTER_HELP: &str = "\
--from/--to take a tim (an integer, or tim:N), a line (line:N) or a wall-clock time as the trace
writes it (2022-09-01T17:39:34.556684). A time window keeps the calls and waits that end within
it (the same calls as skew --where='$tim >= FROM and $tim <= TO' on the whole file, skew's $tim
being in seconds), with the lines before each back to the previous call (its waits, BINDS,
PARSING IN CURSOR); a line range
keeps those lines. The output is a valid trace: the header, the *** context in force where the
part starts, the PARSING IN CURSOR block of every cursor the part uses (carried from before it),
and a *** timestamp wherever needed so that every call keeps its wall-clock time.
Exit status: 0 done, 1 the file could not be read or nothing was in the part, 2 bad usage,
3 output error.";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// A trace file (plain, gzip, bzip2, xz or zstd); - reads standard input.
    #[arg(value_name = "FILE")]
    file: String,
    /// Start: a tim, tim:N, line:N or a wall-clock time.
    #[arg(long, value_name = "WHEN", conflicts_with_all = ["sqlid", "session"])]
    from: Option<String>,
    /// End (inclusive): a tim, tim:N, line:N or a wall-clock time.
    #[arg(long, value_name = "WHEN", conflicts_with_all = ["sqlid", "session"])]
    to: Option<String>,
    /// Keep one statement: its PARSING IN CURSOR, BINDS, calls, waits,
    /// STAT lines (and the *** context lines).
    #[arg(long, value_name = "SQLID", conflicts_with = "session")]
    sqlid: Option<String>,
    /// Keep one session of a shared-server trace: the lines after its
    /// *** SESSION ID:(SID.SERIAL) line, up to another session's.
    #[arg(long, value_name = "SID.SERIAL")]
    session: Option<String>,
    /// Write to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<String>,
}

/// Where the output goes; refuses to overwrite an input.
pub fn open_output(
    output: &Option<String>,
    inputs: &[String],
) -> Result<(Box<dyn Write>, String), Failure> {
    match output {
        None => Ok((
            Box::new(std::io::BufWriter::with_capacity(
                1 << 20,
                std::io::stdout().lock(),
            )),
            "standard output".into(),
        )),
        Some(p) => {
            let target = std::fs::canonicalize(p).ok();
            if target.is_some()
                && inputs
                    .iter()
                    .any(|i| std::fs::canonicalize(i).ok() == target)
            {
                return Err(Failure::Usage(format!(
                    "--output={p}: is one of the input files (it would be overwritten before it is read)"
                )));
            }
            let f = std::fs::File::create(p).map_err(|source| Failure::Output {
                what: p.clone(),
                source,
            })?;
            Ok((
                Box::new(std::io::BufWriter::with_capacity(1 << 20, f)),
                p.clone(),
            ))
        }
    }
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let sel = match (&a.sqlid, &a.session) {
        (Some(id), _) => Selection::SqlId(id.clone()),
        (None, Some(s)) => Selection::Session(s.clone()),
        (None, None) => {
            if a.from.is_none() && a.to.is_none() {
                return Err(Failure::Usage(
                    "crop: say what to keep: --from and/or --to, --sqlid or --session".into(),
                ));
            }
            let bound = |s: &Option<String>, opt: &str| {
                s.as_deref()
                    .map(parse_bound)
                    .transpose()
                    .map_err(|e| Failure::Usage(format!("--{opt}={e}")))
            };
            Selection::Window {
                from: bound(&a.from, "from")?,
                to: bound(&a.to, "to")?,
            }
        }
    };
    let (out, what) = open_output(&a.output, std::slice::from_ref(&a.file))?;
    match tracelab_tools::crop(&a.file, &sel, out, &what) {
        Ok(done) => {
            for w in &done.warnings {
                say!("tracelab: warning: {w}");
            }
            if done.lines == 0 {
                say!("tracelab: {}: no line is in the part asked for", a.file);
                return Ok(exit::TROUBLE);
            }
            Ok(exit::OK)
        }
        Err(e) if e.is_broken_pipe() => Ok(exit::OK),
        Err(e) => Err(e.into()),
    }
}
