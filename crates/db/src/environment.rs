//! The environment a private server's processes start with.
//!
//! A server inherits what its starter passes on, and anything it runs
//! (`archive_command`, `COPY ... FROM PROGRAM`) inherits it again: a
//! `PGPASSWORD`, `MYSQL_PWD` or cloud key in tracelab's environment would
//! be readable in `/proc/PID/environ` and by any superuser client. So
//! every server tool starts from an empty environment plus the few
//! variables servers need: the locale, the search path, the time zone,
//! the home directory (set to /tmp for an unprivileged server user), the
//! temporary directory, and tracelab's own `TRACELAB_*` variables (the
//! clock shim reads `TRACELAB_CLOCK`). What a caller gives on purpose
//! (`LD_PRELOAD` of the clock shim) is added after this.

use std::ffi::OsStr;
use std::process::Command;

/// Whether a variable of tracelab's environment is passed on to a server.
fn passed_on(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    matches!(
        name,
        "PATH" | "HOME" | "LANG" | "LANGUAGE" | "TZ" | "TZDIR" | "TMPDIR"
    ) || name.starts_with("LC_")
        || name.starts_with("TRACELAB_")
}

/// Clears `cmd`'s environment down to what a server needs (see the
/// module's comment). Call it before anything else sets variables on
/// `cmd`: those set afterwards are kept.
pub(crate) fn server_env(cmd: &mut Command) {
    cmd.env_clear();
    for (k, v) in std::env::vars_os() {
        if passed_on(&k) {
            cmd.env(k, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_behind_and_the_locale_goes_on() {
        for kept in [
            "PATH",
            "LANG",
            "LC_ALL",
            "LC_MESSAGES",
            "TZ",
            "TRACELAB_CLOCK",
        ] {
            assert!(passed_on(OsStr::new(kept)), "{kept}");
        }
        for secret in [
            "PGPASSWORD",
            "MYSQL_PWD",
            "AWS_SECRET_ACCESS_KEY",
            "PGDATA",
            "LD_PRELOAD",
            "SSH_AUTH_SOCK",
        ] {
            assert!(!passed_on(OsStr::new(secret)), "{secret}");
        }
    }
}
