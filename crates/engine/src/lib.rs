//! The engines tracelab talks to: PostgreSQL, MariaDB and SQLite.
//!
//! Everything that differs between engines lives here, so that a fourth
//! engine is a change to this crate alone: the [`Engine`] type (which
//! engine a URL names, how a URL is shown without its password, how its
//! connection string is read), the connections of measured sessions
//! ([`conn`]), the administrative connection for set-up, probes and
//! catalog questions ([`admin`], with a [`fake`] one for tests), the
//! server facts a report shows ([`facts`]), the watching connection of
//! the result cache (catalog questions and change notifications,
//! [`watch`]), and the SQL text rewriting each engine's placeholders need
//! ([`sql`]).

pub mod admin;
pub mod conn;
pub mod conninfo;
mod error;
pub mod facts;
pub mod fake;
pub mod sql;
pub mod watch;

pub use admin::{Admin, AdminError, TextRow};
pub use conn::{check_url, redact, Engine};
pub use error::EngineError;
pub use watch::Watch;
