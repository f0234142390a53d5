//! A study's `[[measure.command]]`: a shell command run beside each
//! measured run (started before it, sent SIGTERM after it) or after it,
//! whose stdout lines `NAME VALUE` become the run's measurements
//! `{name}_NAME`.
//!
//! The command runs in a process group of its own, its output into files:
//! SIGTERM reaches a pipeline's every process, and a process that outlives
//! the shell cannot hold a pipe open and hang the study.

use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::StudyError;
use crate::model::outside::{parse_line, CommandSpec};
use crate::model::script::substitute;
use crate::model::spec::Loaded;

/// A command started, its output going to files.
pub(crate) struct Running {
    name: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
    timeout: Duration,
    /// Waited for: nothing left to stop when dropped.
    ended: bool,
}

impl Drop for Running {
    /// A command never stopped (a run that failed, another command that
    /// could not start) is killed with its processes, not left running.
    fn drop(&mut self) {
        if !self.ended {
            // SAFETY: a signal to the process group our child leads.
            unsafe {
                libc::kill(-(self.child.id() as i32), libc::SIGKILL);
            }
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.err);
    }
}

/// Starts `spec` with the cell's `vars` filled in and the server's
/// process id (when known) in `TRACELAB_SERVER_PID`.
pub(crate) fn start(
    l: &Loaded,
    spec: &CommandSpec,
    vars: &BTreeMap<String, String>,
    server_pid: Option<i32>,
    scratch: &Path,
) -> Result<Running, StudyError> {
    let fail = |what: String| {
        l.error(
            "measure.command.run",
            format!("command `{}`: {what}", spec.name),
        )
    };
    let text = substitute(&spec.run, vars).map_err(fail)?;
    let timeout = spec.timeout().map_err(fail)?;
    let out = scratch.join(format!("command-{}.out", spec.name));
    let err = scratch.join(format!("command-{}.err", spec.name));
    let file = |p: &Path| std::fs::File::create(p).map_err(crate::error::io(p));
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &text])
        .stdin(Stdio::null())
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        .process_group(0);
    if let Some(pid) = server_pid {
        cmd.env("TRACELAB_SERVER_PID", pid.to_string());
    }
    let child = cmd
        .spawn()
        .map_err(|e| fail(format!("cannot start sh: {e}")))?;
    Ok(Running {
        name: spec.name.clone(),
        child,
        out,
        err,
        timeout,
        ended: false,
    })
}

impl Running {
    /// Sends SIGTERM to the command's processes and reads its output once
    /// it has ended (a command that ended before, with status 0, is read
    /// as it is).
    pub(crate) fn stop(mut self, l: &Loaded) -> Result<BTreeMap<String, f64>, StudyError> {
        let early = self.child.try_wait().ok().flatten();
        self.ended |= early.is_some();
        if early.is_none() {
            // SAFETY: a signal to the process group this command leads.
            unsafe {
                libc::kill(-(self.child.id() as i32), libc::SIGTERM);
            }
        }
        let status = match early {
            Some(s) => s,
            None => self.wait(l, "of SIGTERM")?,
        };
        let terminated = early.is_none()
            && (status.signal() == Some(libc::SIGTERM) || status.code() == Some(128 + 15));
        self.read(l, status, terminated)
    }

    /// Waits for the command to end by itself (`when = "after"`).
    pub(crate) fn finish(mut self, l: &Loaded) -> Result<BTreeMap<String, f64>, StudyError> {
        let status = self.wait(l, "of its start")?;
        self.read(l, status, false)
    }

    /// Waits up to the timeout; then kills the group and says so.
    fn wait(&mut self, l: &Loaded, from: &str) -> Result<ExitStatus, StudyError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.ended = true;
                return Ok(s);
            }
            if Instant::now() >= deadline {
                // SAFETY: as in `stop`: our own child's process group.
                unsafe {
                    libc::kill(-(self.child.id() as i32), libc::SIGKILL);
                }
                let _ = self.child.wait();
                self.ended = true;
                return Err(l.error(
                    "measure.command.timeout",
                    format!(
                        "command `{}` did not end within {} s {from}: killed",
                        self.name,
                        self.timeout.as_secs_f64()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The measurements of the command's output; a failed command or a
    /// bad line is an error naming the command (and the line).
    fn read(
        &self,
        l: &Loaded,
        status: ExitStatus,
        terminated: bool,
    ) -> Result<BTreeMap<String, f64>, StudyError> {
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        let err = std::fs::read_to_string(&self.err).unwrap_or_default();
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.err);
        if !status.success() && !terminated {
            let why = err
                .lines()
                .rev()
                .find(|x| !x.trim().is_empty())
                .unwrap_or("");
            return Err(l.error(
                "measure.command.run",
                format!(
                    "command `{}` failed ({status}){}{why}",
                    self.name,
                    if why.is_empty() { "" } else { ": " }
                ),
            ));
        }
        let mut m = BTreeMap::new();
        for (i, line) in out.lines().enumerate() {
            match parse_line(line) {
                Ok(Some((k, v))) => {
                    m.insert(format!("{}_{k}", self.name), v);
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(l.error(
                        "measure.command.run",
                        format!(
                            "command `{}`, output line {}: `{}`: {e}",
                            self.name,
                            i + 1,
                            line.trim()
                        ),
                    ))
                }
            }
        }
        Ok(m)
    }
}
