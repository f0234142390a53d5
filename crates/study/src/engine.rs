//! The engine as a factor: each level names an engine, which gives the
//! URL the run connects to and a requirement checked before any run.

use std::path::{Path, PathBuf};

use tracelab_run::{RunOptions, Stop, Workload};

pub const ENGINES: &[&str] = &["postgres", "sqlite", "mariadb"];

/// The engine a URL names, by its scheme.
pub fn engine_of_url(url: &str) -> Option<&'static str> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Some("postgres")
    } else if url.starts_with("sqlite:") {
        Some("sqlite")
    } else if url.starts_with("mysql://") || url.starts_with("mariadb://") {
        Some("mariadb")
    } else {
        None
    }
}

/// A URL with its password (if any) replaced, for messages and stores.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Whether this build's `tracelab run` can drive `url`: one statement on
/// it, which fails at once where the scheme is not supported.
fn run_drives(url: &str, sql: &str) -> Result<(), String> {
    let s = tracelab_run::run(
        &RunOptions {
            url: url.to_string(),
            stop: Stop::Transactions(1),
            ..RunOptions::default()
        },
        &Workload::postgres(sql, Vec::new()),
    )
    .map_err(|e| e.to_string())?;
    if let Some(f) = s.per_session.iter().find_map(|s| s.failure.clone()) {
        return Err(f);
    }
    if s.errors > 0 {
        return Err(s
            .errors_by_code
            .values()
            .next()
            .map(|(_, m)| m.clone())
            .unwrap_or_default());
    }
    Ok(())
}

fn find_program(name: &str, also: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .chain(also.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

/// What is missing for `engine`, given the `--db` URLs: one message per
/// problem, each saying how to fix it. Nothing is started.
pub fn requirement(engine: &str, db: Option<&str>, scratch: &Path, restarts: bool) -> Vec<String> {
    let mut out = Vec::new();
    match engine {
        "postgres" => match db {
            Some(_) if restarts => out.push(
                "engine postgres: this study restarts the server for some levels (wal_level), which only the private server allows; run it without --db".into(),
            ),
            Some(_) => {}
            None => {
                if let Err(e) = tracelab_db::PgBinaries::find() {
                    out.push(format!("engine postgres: {e}"));
                }
            }
        },
        "sqlite" => {
            let url = match db {
                Some(u) => u.to_string(),
                None => format!("sqlite:{}", scratch.join("requirement-check.sqlite").display()),
            };
            if let Err(e) = run_drives(&url, "select 1") {
                out.push(format!(
                    "engine sqlite: this build of `tracelab run` cannot drive sqlite: URLs ({e}); \
                     it comes with the SQLite driver of `tracelab run` (built in, nothing to install) — \
                     until then choose the postgres level (--level engine=postgres)"
                ));
            }
            let _ = std::fs::remove_file(scratch.join("requirement-check.sqlite"));
        }
        "mariadb" => {
            if find_program("mariadbd", &["/usr/sbin/mariadbd", "/usr/libexec/mariadbd"]).is_none()
                && db.is_none()
            {
                out.push(
                    "engine mariadb: mariadbd not found; install with `apt-get install -y mariadb-server`".into(),
                );
            }
            match db {
                None => out.push(
                    "engine mariadb: this build has no private MariaDB server yet; pass --db mysql://USER@127.0.0.1:PORT/DB of a running server".into(),
                ),
                Some(u) => {
                    if let Err(e) = run_drives(u, "select 1") {
                        out.push(format!(
                            "engine mariadb: this build of `tracelab run` cannot drive {} ({e})",
                            redact(u)
                        ));
                    }
                }
            }
        }
        other => out.push(format!(
            "engine {other}: unknown; expected one of {}",
            ENGINES.join(", ")
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_engines_and_lose_passwords() {
        assert_eq!(engine_of_url("postgres://u@h/d"), Some("postgres"));
        assert_eq!(engine_of_url("sqlite:/tmp/x"), Some("sqlite"));
        assert_eq!(engine_of_url("mysql://u@h/d"), Some("mariadb"));
        assert_eq!(engine_of_url("http://x"), None);
        assert_eq!(
            redact("postgres://u:secret@h:5/d"),
            "postgres://u:***@h:5/d"
        );
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
    }
}
