//! Running the server as an unprivileged user when tracelab runs as root:
//! initdb and postgres refuse root, and mariadbd refuses it unless told
//! `--user`; both engines drop privileges the same way (the child's uid and
//! gid) so that they behave alike.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use crate::error::{io, DbError};

/// Who the server runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunAs {
    /// Ourselves: we are not root.
    Me,
    /// Another user, by uid and gid.
    User { uid: u32, gid: u32 },
}

/// The effective uid of this process, read without unsafe FFI: `/proc/self`
/// belongs to it.
fn euid() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// `name`'s uid and gid from /etc/passwd.
fn lookup(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

impl RunAs {
    /// Root runs the server as `postgres` if that user exists (Debian's
    /// packages create it), else as `nobody`.
    pub fn choose() -> Result<RunAs, DbError> {
        Self::choose_among(&["postgres", "nobody"])
    }

    /// Root runs the server as the first of `users` that exists.
    pub fn choose_among(users: &[&str]) -> Result<RunAs, DbError> {
        if euid() != Some(0) {
            return Ok(RunAs::Me);
        }
        users
            .iter()
            .find_map(|n| lookup(n))
            .map(|(uid, gid)| RunAs::User { uid, gid })
            .ok_or(DbError::NoUnprivilegedUser)
    }

    /// The user that owns `dir` (a server started by root keeps running
    /// as the user it started as).
    pub fn owner_of(dir: &Path) -> Result<RunAs, DbError> {
        let m = std::fs::metadata(dir).map_err(io(dir))?;
        Ok(if Some(m.uid()) == euid() {
            RunAs::Me
        } else {
            RunAs::User {
                uid: m.uid(),
                gid: m.gid(),
            }
        })
    }

    /// Makes `path` (and everything below it) the server user's.
    pub fn give(&self, path: &Path) -> Result<(), DbError> {
        let RunAs::User { uid, gid } = *self else {
            return Ok(());
        };
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(io(path))?;
        if path.is_dir() {
            for e in std::fs::read_dir(path).map_err(io(path))? {
                self.give(&e.map_err(io(path))?.path())?;
            }
        }
        Ok(())
    }

    /// Sets up `cmd` to run as this user.
    pub fn apply(&self, cmd: &mut Command) {
        if let RunAs::User { uid, gid } = *self {
            cmd.uid(uid).gid(gid);
            // The server user cannot read root's home; keep its tools from
            // looking there.
            cmd.env("HOME", "/tmp");
        }
    }
}

/// Makes `path` (and everything below it) the user's that tracelab's
/// private servers run as, so that a server can write there (the server
/// trace's directory): nothing to do unless tracelab runs as root.
pub fn give_to_server(path: &Path) -> Result<(), DbError> {
    RunAs::choose()?.give(path)
}

/// `give_to_server` for the private MariaDB's user (see
/// `MARIADB_USERS`).
pub fn give_to_mariadb(path: &Path) -> Result<(), DbError> {
    RunAs::choose_among(MARIADB_USERS)?.give(path)
}

/// Makes the directory `path` writable by the users of both private
/// servers (root runs PostgreSQL and MariaDB as different users), for a
/// study whose levels trace both: mode 1777, as /tmp, so that each file
/// stays its writer's (the server traces are made 0600). Nothing to do
/// unless tracelab runs as root.
pub fn share_with_servers(path: &Path) -> Result<(), DbError> {
    if matches!(RunAs::choose()?, RunAs::Me) {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o1777)).map_err(io(path))
}

/// Whom root runs a private MariaDB as: the first of these users that
/// exists (the package's own `mysql` first).
pub(crate) const MARIADB_USERS: &[&str] = &["mysql", "postgres", "nobody"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd_lookup_and_our_uid() {
        // Every Linux has root in /etc/passwd.
        assert_eq!(lookup("root"), Some((0, 0)));
        assert_eq!(lookup("no-such-user-here"), None);
        assert!(euid().is_some());
    }
}
