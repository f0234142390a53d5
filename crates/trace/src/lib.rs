//! Reader for Oracle extended SQL trace files (event 10046, levels 1 to 12,
//! Oracle 9i to 19c) and for the traces tracelab itself writes in the same
//! format.
//!
//! The reader turns lines into [`Call`]s: database calls (PARSE, EXEC, FETCH,
//! CLOSE, UNMAP, SORT UNMAP, LOB*, XCTEND, RPC EXEC) and OS calls (WAITs),
//! each with its file, line, raw text, depth, cursor, statement context,
//! parse/exec ids, binds and raw fields. Everything downstream (the profiler,
//! the studies' trace measurements, exports) consumes calls, never raw text.
//!
//! It streams: memory is bounded by the number of open cursors, not by the
//! size of the file, and it reads plain, gzip, bzip2, xz and zstd input,
//! recognised by content.

mod call;
mod diag;
mod fields;
mod gzip;
mod input;
mod lines;
mod reader;
mod secrets;
pub mod shareable;
mod writer;

pub use call::{
    format_wall_clock, parse_wall_clock, Call, CallKind, DbFields, Statement, WaitFields,
    WallClock, PSEUDO_BETWEEN, PSEUDO_WITHIN,
};
pub use diag::{Diagnostic, Diagnostics};
pub use input::{open, open_counted, open_raw, Compression, OpenError, Source, TraceFile};
pub use lines::DEFAULT_MAX_LINE;
pub use reader::{LineKinds, ReadError, ReadOptions, ReadSummary, Reader, Timeline, MIN_SPLIT};
pub use secrets::{mentions_password, redact_message, redact_sql};
pub use shareable::Shareable;
pub use writer::{sqlid, CallTimes, Header, TraceWriter, WaitLine};

/// PostgreSQL's wait for its client, as tracelab's server trace names it
/// (crates/servertrace): between calls it is the backend's 'SQL*Net
/// message from client'.
pub const PG_CLIENT_READ: &str = "Client:ClientRead";

/// MariaDB's wait for its client, as tracelab's server trace names it
/// (`thd_wait_begin` with `THD_WAIT_NET`, see crates/servertrace's
/// mariadb.rs): between calls it is the connection's 'SQL*Net message
/// from client'.
pub const MARIADB_NET: &str = "thd_wait:NET";

/// Whether a wait is the server waiting for its client between calls, the
/// wait that is think time when it is long enough: Oracle's 'SQL*Net
/// message from client', PostgreSQL's `Client:ClientRead` or MariaDB's
/// `thd_wait:NET` in a server trace of tracelab's.
#[inline]
pub fn is_client_wait(name: &[u8]) -> bool {
    name == b"SQL*Net message from client"
        || name == PG_CLIENT_READ.as_bytes()
        || name == MARIADB_NET.as_bytes()
}
