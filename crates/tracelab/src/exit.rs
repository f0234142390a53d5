//! The one place where errors become messages and exit statuses.
//!
//! Exit statuses: 0 the work was done; 1 a report was written but some
//! input was damaged or skipped (see the warnings), or `skew` found no
//! call that matched, or `db status` found the server stopped; 2 the command line, an rc file or an expression was
//! wrong and nothing was done; 3 output could not be written; 4 a database
//! server could not be started, stopped or found; 128 + the signal's
//! number (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP) stopped by a signal (the
//! summary is still printed, the private server removed: signals.rs).

use tracelab_calls::CallsError;
use tracelab_db::DbError;
use tracelab_prof::ProfError;
use tracelab_skew::SkewError;
use tracelab_study::StudyError;
use tracelab_tools::ToolsError;

pub const OK: i32 = 0;
pub const TROUBLE: i32 = 1;
pub const USAGE: i32 = 2;
pub const OUTPUT: i32 = 3;
pub const DB: i32 = 4;

/// `db status`: the server is not running.
pub const STOPPED: i32 = 1;

/// An error that ends the program.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Skew(#[from] SkewError),
    #[error(transparent)]
    Prof(#[from] ProfError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Calls(#[from] CallsError),
    #[error(transparent)]
    Study(StudyError),
    /// `ls`, `nl`, `tim`, `crop`, `merge`.
    #[error(transparent)]
    Tools(#[from] ToolsError),
    #[error("{0}")]
    Usage(String),
    /// `tracelab proxy` could not start or serve.
    #[error("proxy: {0}")]
    Proxy(String),
    #[error("cannot write {what}: {source}")]
    Output {
        what: String,
        source: std::io::Error,
    },
}

impl Failure {
    fn status(&self) -> i32 {
        match self {
            Failure::Skew(_) | Failure::Usage(_) | Failure::Prof(_) => USAGE,
            // A `-c` the engine cannot take: the command line was wrong.
            Failure::Db(DbError::Setting { .. }) => USAGE,
            Failure::Db(DbError::Interrupted(_))
            | Failure::Study(StudyError::Server(DbError::Interrupted(_))) => {
                crate::signals::status()
            }
            Failure::Db(_) => DB,
            Failure::Output { .. } => OUTPUT,
            Failure::Study(e) => match e {
                StudyError::File { .. } | StudyError::NoStudy(_) | StudyError::Usage(_) => USAGE,
                StudyError::Requirements(_) => TROUBLE,
                StudyError::Io { .. } | StudyError::Store { .. } | StudyError::Busy { .. } => {
                    OUTPUT
                }
                StudyError::Database(_) | StudyError::Server(_) => DB,
            },
            Failure::Proxy(_) => TROUBLE,
            Failure::Calls(CallsError::Write { .. }) => OUTPUT,
            Failure::Calls(_) => USAGE,
            Failure::Tools(e) => match e {
                ToolsError::Usage(_) => USAGE,
                ToolsError::Write { .. } => OUTPUT,
                ToolsError::Open(_) | ToolsError::Read(_) | ToolsError::Dir { .. } => TROUBLE,
            },
        }
    }
}

/// Prints the error on stderr and exits with its status.
pub fn fail(f: Failure) -> ! {
    crate::output::say!("tracelab: {f}");
    std::process::exit(f.status())
}
