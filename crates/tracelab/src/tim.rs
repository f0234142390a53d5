//! `tracelab tim`: tim values as wall-clock times and back (mrtim,
//! mrwhen).

use crate::exit::{self, Failure};
use crate::output::out;

const AFTER_HELP: &str = "\
An integer is a tim: printed as the wall-clock time it is in the file (through the latest ***
timestamp before it). Anything else is a wall-clock time as traces write it
(2022-09-01T17:39:34.556684, 2018-04-05 18:18:44.341; a zone after it is ignored, the trace's
times being local): printed as the file's tim at that time. One output line per value.
Without --file a tim is taken as microseconds since 1970-01-01 UTC (the tim of some platforms).
Exit status: 0 done, 1 the file could not be read, 2 a value is neither.";

#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// tim values or wall-clock times.
    #[arg(value_name = "VALUE", required = true)]
    values: Vec<String>,
    /// The trace whose clock to use (plain or compressed).
    #[arg(long, short, value_name = "FILE")]
    file: Option<String>,
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let anchors = match &a.file {
        Some(f) => {
            let v = tracelab_tools::anchors(f)?;
            if v.is_empty() {
                return Err(Failure::Usage(format!(
                    "{f}: no *** timestamp followed by a timed line: the file does not tie its tim to the wall clock"
                )));
            }
            v
        }
        None => Vec::new(),
    };
    let mut s = String::new();
    for c in tracelab_tools::convert(&a.values, &anchors)? {
        s.push_str(&c.output);
        s.push('\n');
    }
    out(&s)?;
    Ok(exit::OK)
}
