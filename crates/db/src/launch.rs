//! What starting a server of either engine involves: its directory, a free
//! port, running its setup tools as the server user, and the log tail that
//! explains a failed start.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io, DbError};
use crate::privilege::RunAs;
use crate::state::{status, Status};

/// Runs a setup tool to completion; its output becomes the error if it fails.
pub(crate) fn run(mut cmd: Command, what: &str) -> Result<(), DbError> {
    let out = cmd.output().map_err(|source| DbError::Spawn {
        program: what.to_string(),
        source,
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(DbError::Command {
        program: what.to_string(),
        status: out.status.to_string(),
        output: String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned(),
    })
}

/// A port nobody listens on now. Another process could take it before the
/// server does; the server then fails to start and says so.
pub(crate) fn free_port() -> Result<u16, DbError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(io("127.0.0.1:0"))?;
    let port = l.local_addr().map_err(io("127.0.0.1:0"))?.port();
    Ok(port)
}

/// The server's directory: the given one (created, made absolute) or a new
/// temporary one, which outlives this process.
pub(crate) fn server_dir(dir: Option<&Path>) -> Result<PathBuf, DbError> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(io(d))?;
            d.canonicalize().map_err(io(d))
        }
        None => Ok(tempfile::Builder::new()
            .prefix("tracelab-db-")
            .tempdir()
            .map_err(io(std::env::temp_dir()))?
            .keep()),
    }
}

/// Refuses a directory whose server runs, or that holds another engine's
/// server.
pub(crate) fn check_free(dir: &Path, engine: &str) -> Result<(), DbError> {
    match status(dir) {
        Ok(Status::Running(s)) => Err(DbError::State {
            path: dir.to_path_buf(),
            what: format!("a server already runs here ({})", s.url),
        }),
        Ok(Status::Stopped(s)) if s.engine != engine => Err(DbError::State {
            path: dir.to_path_buf(),
            what: format!(
                "this directory holds a stopped {} server, not {engine}; choose another --dir",
                s.engine
            ),
        }),
        _ => Ok(()),
    }
}

/// The last lines of a server log, for an error message.
pub(crate) fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(lines).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!("server log {}:\n{}", log.display(), tail.join("\n"))
}

/// A setup tool run as another user fails on a directory that user cannot
/// reach (say, under /root): say what to do.
pub(crate) fn hint_traversal(e: DbError, dir: &Path, run_as: RunAs) -> DbError {
    let hint = || {
        format!(
            "The server runs as an unprivileged user, which cannot reach {}: choose a --dir it can reach (for example under /tmp).",
            dir.display()
        )
    };
    match (e, run_as) {
        (
            DbError::Command {
                program,
                status,
                output,
            },
            RunAs::User { .. },
        ) if output.contains("Permission denied") => DbError::Command {
            program,
            status,
            output: format!("{output}\n{}", hint()),
        },
        // A tool started in the directory cannot even enter it.
        (DbError::Spawn { program, source }, RunAs::User { .. })
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            DbError::Command {
                program,
                status: source.to_string(),
                output: hint(),
            }
        }
        (e, _) => e,
    }
}
