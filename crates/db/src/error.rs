//! Why a private server could not be started, stopped or found.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No PostgreSQL server binaries anywhere we look.
    #[error(
        "no PostgreSQL server binaries found (looked at $TRACELAB_PG_BINDIR, `pg_config --bindir`, \
         PATH and /usr/lib/postgresql/*/bin); install them with \
         `apt-get install -y postgresql` (Debian/Ubuntu) or `dnf install -y postgresql-server`"
    )]
    NoPostgres,
    /// No MariaDB server (or no install script) anywhere we look.
    #[error(
        "no MariaDB server binaries found (looked for mariadbd/mysqld and \
         mariadb-install-db/mysql_install_db at $TRACELAB_MARIADB_BINDIR, or on PATH, \
         /usr/sbin, /usr/bin and /usr/local/mysql/bin); install them with \
         `apt-get install -y mariadb-server` (Debian/Ubuntu) or `dnf install -y mariadb-server`"
    )]
    NoMariadb,
    /// A server setting the engine's command line cannot carry.
    #[error("-c {name}: {what}")]
    Setting { name: String, what: String },
    #[error("{program} failed ({status}); its output:\n{output}")]
    Command {
        program: String,
        status: String,
        output: String,
    },
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}: no tracelab server here (no tracelab-db.json); start one with `tracelab db start --dir {0}`")]
    NoServer(PathBuf),
    #[error("{path}: {what}")]
    State { path: PathBuf, what: String },
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) arrived while a server was being
    /// set up or started; what had been made for it is gone.
    #[error("interrupted while {0}")]
    Interrupted(String),
    #[error(
        "running as root, and no unprivileged user to run the server as \
         (looked for the engine's user, `postgres` or `mysql`, then `nobody` in /etc/passwd)"
    )]
    NoUnprivilegedUser,
}

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> DbError {
    let path = path.into();
    move |source| DbError::Io { path, source }
}
