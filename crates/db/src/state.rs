//! A server's directory and the state file that lets `stop` and `status`
//! find it again.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use tracelab_engine::Engine;

use crate::binaries::PgBinaries;
use crate::error::{io, DbError};
use crate::privilege::RunAs;

const STATE_FILE: &str = "tracelab-db.json";

/// What `tracelab db start` leaves behind in the server's directory. No
/// secret is in it: the server trusts local connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    pub engine: String,
    pub dir: PathBuf,
    pub port: u16,
    pub socket_dir: PathBuf,
    /// The connection URL clients use (TCP on 127.0.0.1).
    pub url: String,
    pub bindir: PathBuf,
}

impl ServerState {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The engine the state file names (`None` for a name this build
    /// does not know).
    pub fn kind(&self) -> Option<Engine> {
        Engine::from_name(&self.engine)
    }

    pub fn log_file(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Every log the server writes: PostgreSQL's server log (statements
    /// and plans go there too); MariaDB's error log and its slow query
    /// log.
    pub fn log_files(&self) -> Vec<PathBuf> {
        match self.kind() {
            Some(Engine::Mysql) => vec![self.log_file(), self.dir.join(crate::mariadb::SLOW_LOG)],
            _ => vec![self.log_file()],
        }
    }

    /// The server's unix socket, for clients that connect through it.
    pub fn socket_path(&self) -> PathBuf {
        match self.kind() {
            Some(Engine::Mysql) => self.socket_dir.join(crate::mariadb::SOCKET),
            _ => self.socket_dir.join(format!(".s.PGSQL.{}", self.port)),
        }
    }

    /// The file holding the server's process id while it runs.
    pub fn pid_file(&self) -> PathBuf {
        match self.kind() {
            Some(Engine::Mysql) => self.dir.join(crate::mariadb::PID_FILE),
            _ => self.data_dir().join("postmaster.pid"),
        }
    }

    pub(crate) fn save(&self) -> Result<(), DbError> {
        let path = self.dir.join(STATE_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| DbError::State {
            path: path.clone(),
            what: e.to_string(),
        })?;
        std::fs::write(&path, text + "\n").map_err(io(&path))
    }

    pub fn load(dir: &Path) -> Result<ServerState, DbError> {
        let path = dir.join(STATE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DbError::NoServer(dir.to_path_buf()))
            }
            Err(e) => return Err(io(&path)(e)),
        };
        serde_json::from_str(&text).map_err(|e| DbError::State {
            path,
            what: format!("not a tracelab server state file: {e}"),
        })
    }

    fn pg_ctl(&self) -> Result<Command, DbError> {
        let bins = PgBinaries {
            bindir: self.bindir.clone(),
        };
        let mut cmd = Command::new(bins.tool("pg_ctl"));
        crate::environment::server_env(&mut cmd);
        RunAs::owner_of(&self.data_dir())?.apply(&mut cmd);
        cmd.arg("-D").arg(self.data_dir());
        Ok(cmd)
    }
}

/// Whether the server of a directory runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Running(ServerState),
    Stopped(ServerState),
}

/// The state of the server in `dir`: pg_ctl says whether a PostgreSQL
/// runs; a MariaDB runs if its pid file names a live server process.
pub fn status(dir: &Path) -> Result<Status, DbError> {
    let state = ServerState::load(dir)?;
    let running = match state.kind() {
        Some(Engine::Postgres) => pg_running(&state)?,
        Some(Engine::Mysql) => crate::mariadb::running_pid(&state).is_some(),
        _ => {
            return Err(DbError::State {
                path: dir.join(STATE_FILE),
                what: format!(
                    "unknown engine {:?} (expected postgres or mariadb)",
                    state.engine
                ),
            })
        }
    };
    Ok(if running {
        Status::Running(state)
    } else {
        Status::Stopped(state)
    })
}

fn pg_running(state: &ServerState) -> Result<bool, DbError> {
    let out = state
        .pg_ctl()?
        .arg("status")
        .output()
        .map_err(|source| DbError::Spawn {
            program: "pg_ctl".into(),
            source,
        })?;
    // pg_ctl status: 0 running, 3 not running, 4 no data directory. It
    // takes a killed postmaster that nobody has reaped yet (a zombie) for
    // a running one: the pid file's process must be alive too.
    let postmaster = std::fs::read_to_string(state.pid_file())
        .ok()
        .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u32>().ok()));
    Ok(out.status.success() && postmaster.is_none_or(crate::launch::alive))
}

/// Stops the server in `dir` (fast shutdown: sessions are disconnected).
/// Stopping a stopped server is not an error.
pub fn stop(dir: &Path) -> Result<ServerState, DbError> {
    let state = match status(dir)? {
        Status::Stopped(s) => return Ok(s),
        Status::Running(s) => s,
    };
    if state.kind() == Some(Engine::Mysql) {
        crate::mariadb::shut_down(&state)?;
        return Ok(state);
    }
    let out = state
        .pg_ctl()?
        .args(["-m", "fast", "-w", "-t", "60", "stop"])
        .output()
        .map_err(|source| DbError::Spawn {
            program: "pg_ctl".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(DbError::Command {
            program: "pg_ctl stop".into(),
            status: out.status.to_string(),
            output: String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned(),
        });
    }
    Ok(state)
}
