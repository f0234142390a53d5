//! What starting a server of either engine involves: its directory, a free
//! port, running its setup tools as the server user, and the log tail that
//! explains a failed start.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::error::{io, DbError};
use crate::privilege::RunAs;
use crate::state::{status, Status};

/// The process's interrupt flag (set by Ctrl-C, SIGTERM, SIGHUP), which
/// every wait for a setup tool or a starting server watches.
static INTERRUPT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Makes server set-up and starts watch `flag`: once it is set they stop
/// their tools, undo what they made and return [`DbError::Interrupted`].
/// The process's signal handling sets it (one flag for INT, TERM, HUP).
pub fn set_interrupt(flag: Arc<AtomicBool>) {
    let _ = INTERRUPT.set(flag);
}

pub(crate) fn interrupted() -> bool {
    INTERRUPT.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// Runs a setup tool to completion; its output becomes the error if it
/// fails. The tool runs in a process group of its own, so that a Ctrl-C
/// at the terminal reaches tracelab alone (and the server pg_ctl starts
/// never sees it); when the interrupt flag is set the tool's group is
/// stopped and the call returns [`DbError::Interrupted`].
pub(crate) fn run(mut cmd: Command, what: &str) -> Result<(), DbError> {
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| DbError::Spawn {
            program: what.to_string(),
            source,
        })?;
    // Drained beside the wait, so that a chatty tool never blocks on a
    // full pipe.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(source) => {
                return Err(DbError::Spawn {
                    program: what.to_string(),
                    source,
                })
            }
        }
        if interrupted() {
            stop_group(&mut child);
            return Err(DbError::Interrupted(format!("{what} ran")));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = [
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    ]
    .concat();
    if status.success() {
        return Ok(());
    }
    Err(DbError::Command {
        program: what.to_string(),
        status: status.to_string(),
        output: String::from_utf8_lossy(&text).into_owned(),
    })
}

/// Stops a child's process group (it leads one): SIGTERM, then SIGKILL
/// if it has not gone within 5 s.
pub(crate) fn stop_group(child: &mut Child) {
    let group = Pid::from_raw(-(child.id() as i32));
    let _ = kill(group, Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = kill(group, Signal::SIGKILL);
    let _ = child.wait();
}

/// A port nobody listens on now. Another process could take it before the
/// server does; the server then fails to start and says so.
pub(crate) fn free_port() -> Result<u16, DbError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(io("127.0.0.1:0"))?;
    let port = l.local_addr().map_err(io("127.0.0.1:0"))?.port();
    Ok(port)
}

/// Whether the process exists and has not exited. A zombie leader counts
/// as alive while other threads of it still run: mariadbd's main thread
/// can end before its shutdown is done.
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) S ...": the state follows the last parenthesis.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    match state {
        None | Some('X') => false,
        Some('Z') => std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.count() > 1)
            .unwrap_or(false),
        Some(_) => true,
    }
}

/// The port for a server in `dir`: the one it had before if nothing
/// listens there now (so that URLs in scripts keep working after a
/// restart, or after the server was killed), else a free one.
///
/// A server killed a moment ago can hold its port after its process is
/// gone from `db status`'s view: mariadbd's listening socket closes only
/// when the last of its threads has exited, which took longer than the
/// leader's exit on a busy machine (seen in CI). So a port still taken is
/// tried again for up to [`PORT_WAIT`] before a new one is chosen.
pub(crate) fn port_for(dir: &Path) -> Result<u16, DbError> {
    let Some(port) = crate::state::ServerState::load(dir).ok().map(|s| s.port) else {
        return free_port();
    };
    let t0 = Instant::now();
    loop {
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
        if t0.elapsed() >= PORT_WAIT {
            return free_port();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long [`port_for`] waits for a killed server's port to be freed.
const PORT_WAIT: Duration = Duration::from_secs(3);

/// The server's directory: the given one (created, made absolute) or a new
/// temporary one, which outlives this process; and whether this call made
/// it (an interrupted start removes what it made).
pub(crate) fn server_dir(dir: Option<&Path>) -> Result<(PathBuf, bool), DbError> {
    match dir {
        Some(d) => {
            let made = !d.exists();
            std::fs::create_dir_all(d).map_err(io(d))?;
            Ok((d.canonicalize().map_err(io(d))?, made))
        }
        None => Ok((
            tempfile::Builder::new()
                .prefix("tracelab-db-")
                .tempdir()
                .map_err(io(std::env::temp_dir()))?
                .keep(),
            true,
        )),
    }
}

/// After a start that failed: an interrupted one leaves nothing it made
/// behind (its directory, when it made it).
pub(crate) fn undo_interrupted<T>(
    r: Result<T, DbError>,
    dir: &Path,
    made: bool,
) -> Result<T, DbError> {
    if let Err(DbError::Interrupted(_)) = &r {
        if made {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    r
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
/// reach (say, under /root): say what to do. Only when the tool's refusal
/// names the directory: a "Permission denied" on anything else (a broken
/// /dev/null, a file the tool itself could not write) is another fault,
/// and the hint would send the user after the wrong one.
pub(crate) fn hint_traversal(e: DbError, dir: &Path, run_as: RunAs) -> DbError {
    let within = dir.to_string_lossy().into_owned();
    let names_dir = |output: &str| {
        output
            .lines()
            .any(|l| l.contains("Permission denied") && l.contains(within.as_str()))
    };
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
        ) if names_dir(&output) => DbError::Command {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(output: &str) -> DbError {
        DbError::Command {
            program: "initdb".into(),
            status: "exit status: 1".into(),
            output: output.into(),
        }
    }

    fn output(e: DbError) -> String {
        match e {
            DbError::Command { output, .. } => output,
            other => panic!("not a command error: {other}"),
        }
    }

    const USER: RunAs = RunAs::User {
        uid: 1000,
        gid: 1000,
    };

    /// initdb's own words when the server's user cannot enter the
    /// directory get the hint; a refusal of something else (a /dev/null
    /// turned into root's file) does not, nor does our own user's.
    #[test]
    fn the_hint_is_given_when_the_refusal_names_the_directory() {
        let dir = Path::new("/root/lab");
        let denied =
            "initdb: error: could not access directory \"/root/lab/data\": Permission denied";
        assert!(output(hint_traversal(failed(denied), dir, USER))
            .contains("cannot reach /root/lab: choose a --dir"));
        let elsewhere = "sh: 1: cannot create /dev/null: Permission denied";
        assert_eq!(
            output(hint_traversal(failed(elsewhere), dir, USER)),
            elsewhere
        );
        assert_eq!(
            output(hint_traversal(failed(denied), dir, RunAs::Me)),
            denied
        );
    }
}
