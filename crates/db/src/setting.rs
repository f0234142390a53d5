//! Server settings as `tracelab db start -c NAME=VALUE` and a study's
//! `[server]` give them: what a setting name and value may be, and which
//! settings make the server run a program.
//!
//! A name is written as is into postgresql.conf (and into `ALTER SYSTEM
//! SET name`, `SET GLOBAL name` by a study), so it must be an identifier:
//! a newline in it once wrote lines of its own into postgresql.conf (an
//! `archive_command`, which the server ran). A value is quoted as
//! postgresql.conf quotes strings (single quotes, a quote doubled, a
//! backslash doubled), which cannot carry a line break, so a value with a
//! newline, a carriage return or a NUL is refused rather than mangled.
//! MariaDB takes the settings as `--name=value` arguments of mariadbd
//! (the my.cnf option syntax): a name of letters, digits, `_`, `-` and
//! `.`, and a value on one line.

use crate::error::DbError;

/// Checks a PostgreSQL setting: a name of ASCII letters, digits, `_` and
/// `.` (`pg_stat_statements.track`, an extension's), starting with a
/// letter or `_`; a value without a line break or NUL.
pub fn check_postgres_setting(name: &str, value: &str) -> Result<(), DbError> {
    let good = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'));
    if !good {
        return Err(DbError::Setting {
            name: shown(name),
            what: "not a setting name: expected letters, digits, `_` and `.` (for an extension's setting), starting with a letter, e.g. -c work_mem=64MB".into(),
        });
    }
    check_value(name, value)
}

/// Checks a MariaDB option: a name of ASCII letters, digits, `_`, `-` and
/// `.` starting with a letter or `_`; a value without a line break or NUL.
pub fn check_mariadb_setting(name: &str, value: &str) -> Result<(), DbError> {
    let good = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !good {
        return Err(DbError::Setting {
            name: shown(name),
            what: "not a setting name: expected a MariaDB option name (letters, digits, `_`, `-`, `.`; e.g. -c innodb_flush_log_at_trx_commit=2)".into(),
        });
    }
    check_value(name, value)
}

fn check_value(name: &str, value: &str) -> Result<(), DbError> {
    let what = if value.contains(['\n', '\r']) {
        "the value holds a newline, which a setting's value cannot carry"
    } else if value.contains('\0') {
        "the value holds a NUL byte, which a setting's value cannot carry"
    } else {
        return Ok(());
    };
    Err(DbError::Setting {
        name: name.to_string(),
        what: format!("{what} ({})", shown(value)),
    })
}

/// A name or value as a message shows it: control characters escaped, so
/// that the message stays on its lines and shows what was given.
fn shown(s: &str) -> String {
    s.escape_debug().to_string()
}

/// Whether a PostgreSQL setting makes the server run a shell command, or
/// load code from a place of the study's choosing: a study may set such
/// settings only when told it may (`study run --allow-server-programs`).
/// Any setting ending in `_command` runs one (archive_command,
/// restore_command, archive_cleanup_command, recovery_end_command,
/// ssl_passphrase_command); `dynamic_library_path` moves where libraries
/// load from; `archive_library` and the `*_preload_libraries` load code,
/// which is the server's own (from its library directory) unless the
/// value names a path (holds a `/`).
///
/// MariaDB has no option that runs a shell command; its plugins
/// (`plugin_load_add`) load only from `plugin_dir`, so `plugin_dir` is the
/// one that counts (`init_file`, SQL run at start, is tracelab's own).
pub fn runs_program(engine: &str, name: &str, value: &str) -> bool {
    let n = name.to_ascii_lowercase().replace('-', "_");
    match tracelab_engine::Engine::from_name(engine) {
        Some(tracelab_engine::Engine::Postgres) => {}
        Some(tracelab_engine::Engine::Mysql) => return n == "plugin_dir",
        _ => return false,
    }
    let loads = matches!(
        n.as_str(),
        "archive_library"
            | "shared_preload_libraries"
            | "session_preload_libraries"
            | "local_preload_libraries"
    );
    n.ends_with("_command") || n == "dynamic_library_path" || (loads && value.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_identifiers_and_values_stay_on_one_line() {
        for good in ["work_mem", "pg_stat_statements.track", "_x", "A1"] {
            assert!(check_postgres_setting(good, "1 MB, it's").is_ok(), "{good}");
        }
        for bad in [
            "",
            "1x",
            "work mem",
            "a;b",
            "a\narchive_command",
            "a=b",
            "a-b",
        ] {
            let e = check_postgres_setting(bad, "1").unwrap_err().to_string();
            assert!(e.contains("not a setting name"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        for bad in ["a\nb", "a\rb", "a\0b"] {
            let e = check_postgres_setting("application_name", bad)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("-c application_name: the value holds"), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        assert!(check_mariadb_setting("sql-mode", "ANSI,TRADITIONAL").is_ok());
        assert!(check_mariadb_setting("x", "a\nb").is_err());
        assert!(check_mariadb_setting("-x", "1").is_err());
    }

    #[test]
    fn settings_that_run_programs() {
        for p in [
            "archive_command",
            "restore_command",
            "archive_cleanup_command",
            "recovery_end_command",
            "ssl_passphrase_command",
            "ARCHIVE_COMMAND",
            "dynamic_library_path",
        ] {
            assert!(runs_program("postgres", p, "x"), "{p}");
        }
        assert!(runs_program(
            "postgres",
            "shared_preload_libraries",
            "/tmp/evil.so"
        ));
        assert!(!runs_program(
            "postgres",
            "shared_preload_libraries",
            "pg_stat_statements"
        ));
        for n in ["work_mem", "archive_mode", "synchronous_commit"] {
            assert!(!runs_program("postgres", n, "/x"), "{n}");
        }
        assert!(!runs_program("mariadb", "init_connect", "x"));
        assert!(runs_program("mariadb", "plugin-dir", "/tmp"));
    }
}
