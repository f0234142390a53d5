//! Private servers that belong to one tracelab process (the one `run`
//! starts for its run, the ones a study starts for its runs), and finding
//! them again when that process died without cleaning up (SIGKILL, a
//! crash, a machine that lost power).
//!
//! Such a server lives in a temporary directory (`tracelab-db-*`,
//! `tracelab-study-*`) holding a pid file, `tracelab-owner`, with the
//! owner's process id and its start time (so that a reused pid is not
//! taken for the owner). The next tracelab that starts a server looks at
//! those directories: one whose owner is gone has its servers stopped and
//! is removed. A server of `tracelab db start`, which is meant to outlive
//! its command, has no owner file and is never touched.

use std::path::{Path, PathBuf};

use crate::error::{io, DbError};
use crate::state::{status, stop, Status};

const OWNER_FILE: &str = "tracelab-owner";
/// The temporary directories that may hold a process's private servers.
const PREFIXES: [&str; 2] = ["tracelab-db-", "tracelab-study-"];

/// A process's start time, in clock ticks since boot (field 22 of
/// /proc/PID/stat): with the pid, it names one process for good.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid ...": fields after the last parenthesis, from 3.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Marks `dir` as this process's: its servers and the directory go when
/// the process does, or, if it dies first, at the next start of another.
pub fn mark_owner(dir: &Path) -> Result<(), DbError> {
    let me = std::process::id();
    let path = dir.join(OWNER_FILE);
    let text = format!("{me} {}\n", start_time(me).unwrap_or(0));
    std::fs::write(&path, text).map_err(io(&path))
}

/// A new temporary directory for a private server of this process
/// (`tracelab-db-*`), marked as its own and reachable by the
/// unprivileged user a server runs as.
pub fn private_dir() -> Result<PathBuf, DbError> {
    let tmp = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix(PREFIXES[0])
        .tempdir_in(&tmp)
        .map_err(io(&tmp))?
        .keep();
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
    }
    mark_owner(&dir)?;
    Ok(dir)
}

/// Whether the owner named by a `tracelab-owner` file still runs.
fn owner_alive(text: &str) -> bool {
    let mut f = text.split_whitespace();
    let (Some(Ok(pid)), Some(Ok(started))) = (
        f.next().map(str::parse::<u32>),
        f.next().map(str::parse::<u64>),
    ) else {
        // Unreadable: someone else's file, or one being written. Leave it.
        return true;
    };
    match start_time(pid) {
        None => false,
        Some(t) => started == 0 || t == started,
    }
}

/// Stops every server whose state file is in `dir` or a directory just
/// below it.
fn stop_servers_in(dir: &Path) {
    let below = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for d in std::iter::once(dir.to_path_buf()).chain(below.into_iter().filter(|p| p.is_dir())) {
        if let Ok(Status::Running(_)) = status(&d) {
            let _ = stop(&d);
        }
    }
}

/// Finds the private servers of tracelab processes that are gone, stops
/// them and removes their directories; returns the directories removed.
pub fn remove_orphans() -> Vec<PathBuf> {
    let mut places = vec![std::env::temp_dir(), PathBuf::from("/tmp")];
    places.dedup();
    let mut removed = Vec::new();
    for place in places {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if !PREFIXES.iter().any(|p| name.starts_with(p)) {
                continue;
            }
            let dir = e.path();
            let Ok(text) = std::fs::read_to_string(dir.join(OWNER_FILE)) else {
                continue;
            };
            if owner_alive(&text) {
                continue;
            }
            stop_servers_in(&dir);
            if std::fs::remove_dir_all(&dir).is_ok() {
                removed.push(dir);
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_alive_while_its_process_runs() {
        let me = std::process::id();
        let t = start_time(me).unwrap();
        assert!(owner_alive(&format!("{me} {t}")));
        // The same pid with another start time is another process.
        assert!(!owner_alive(&format!("{me} {}", t + 1)));
        // Above the kernel's pid_max: gone.
        assert!(!owner_alive(&format!("{} 5", 1 << 23)));
        assert!(owner_alive("not a pid file"));
    }

    #[test]
    fn a_directory_whose_owner_is_gone_is_removed_and_a_live_ones_is_kept() {
        let base = tempfile::tempdir().unwrap();
        let gone = base.path().join("tracelab-db-gone");
        let mine = base.path().join("tracelab-db-mine");
        let other = base.path().join("tracelab-db-nofile");
        for d in [&gone, &mine, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(gone.join(OWNER_FILE), format!("{} 5\n", 1 << 23)).unwrap();
        mark_owner(&mine).unwrap();
        // remove_orphans looks in the temporary directory: point it here.
        std::env::set_var("TMPDIR", base.path());
        let removed = remove_orphans();
        std::env::remove_var("TMPDIR");
        assert_eq!(removed, vec![gone.clone()]);
        assert!(!gone.exists() && mine.exists() && other.exists());
    }
}
