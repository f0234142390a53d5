//! The one place where errors become messages and exit statuses.
//!
//! Exit statuses: 0 the work was done; 1 a report was written but some
//! input was damaged or skipped (see the warnings); 2 the command line,
//! an rc file or an expression was wrong and nothing was done; 3 output
//! could not be written.

use tracelab_skew::SkewError;

pub const OK: i32 = 0;
pub const TROUBLE: i32 = 1;
pub const USAGE: i32 = 2;
pub const OUTPUT: i32 = 3;

/// An error that ends the program.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Skew(#[from] SkewError),
    #[error("cannot write {what}: {source}")]
    Output {
        what: String,
        source: std::io::Error,
    },
}

impl Failure {
    fn status(&self) -> i32 {
        match self {
            Failure::Skew(_) => USAGE,
            Failure::Output { .. } => OUTPUT,
        }
    }
}

/// Prints the error on stderr and exits with its status.
pub fn fail(f: Failure) -> ! {
    eprintln!("tracelab: {f}");
    std::process::exit(f.status())
}
