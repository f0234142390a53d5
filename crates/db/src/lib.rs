//! Private, throw-away database servers: `tracelab db`, and the default
//! target of `run` and `study` when no database is named.
//!
//! A server lives in a directory of its own (data, unix socket, log, and a
//! small state file), listens on a free port of 127.0.0.1 only, trusts local
//! connections (no password exists, so none can leak), and is torn down
//! with its directory. Two engines: PostgreSQL (`start_postgres`) and
//! MariaDB (`start_mariadb`); `status` and `stop` serve both, reading the
//! engine from the directory's state file. initdb, postgres and mariadbd
//! refuse to run as root: when tracelab runs as root (as CI does), the
//! server runs as an unprivileged user instead.

mod binaries;
mod environment;
mod error;
mod launch;
mod mariadb;
mod owner;
mod postgres;
mod privilege;
mod setting;
mod state;

pub use binaries::{MariaBinaries, PgBinaries};
pub use error::DbError;
pub use launch::set_interrupt;
pub use mariadb::{start_mariadb, start_mariadb_with_env, MariaOptions, MARIADB_DATABASE};
pub use owner::{mark_owner, private_dir, remove_orphans};
pub use postgres::{start_postgres, start_postgres_with_env, PgOptions};
pub use privilege::{give_to_mariadb, give_to_server, share_with_servers};
pub use setting::{check_mariadb_setting, check_postgres_setting, runs_program};
pub use state::{status, stop, ServerState, Status};
