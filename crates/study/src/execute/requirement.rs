//! The requirement of an engine, checked before any run: what is missing
//! for it here (its client, its server programs), each with how to fix it.

use std::path::Path;

use tracelab_engine::Engine;
use tracelab_run::{RunOptions, Stop, Workload};

use crate::model::engine::redact;

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

/// What is missing for `engine`, given the `--db` URLs: one message per
/// problem, each saying how to fix it. Nothing is started.
pub fn requirement(engine: &str, db: Option<&str>, scratch: &Path, restarts: bool) -> Vec<String> {
    let mut out = Vec::new();
    let Some(kind) = Engine::from_name(engine) else {
        out.push(format!(
            "engine {engine}: unknown; expected one of {}",
            Engine::NAMES.join(", ")
        ));
        return out;
    };
    match kind {
        Engine::Postgres => match db {
            Some(_) if restarts => out.push(
                "engine postgres: this study restarts the server for some levels (settings such as wal_level, or the server's environment), which only the private server allows; run it without --db".into(),
            ),
            Some(_) => {}
            None => {
                if let Err(e) = tracelab_db::PgBinaries::find() {
                    out.push(format!("engine postgres: {e}"));
                }
            }
        },
        Engine::Sqlite => {
            let url = match db {
                Some(u) => u.to_string(),
                None => format!("sqlite:{}", scratch.join("requirement-check.sqlite").display()),
            };
            if let Err(e) = run_drives(&url, "select 1") {
                out.push(format!(
                    "engine sqlite: cannot run on an SQLite file ({e})"
                ));
            }
            let _ = std::fs::remove_file(scratch.join("requirement-check.sqlite"));
        }
        Engine::Mysql => match db {
            Some(_) if restarts => out.push(
                "engine mariadb: this study restarts the server for some levels (thread_handling), which only the private server allows; run it without --db".into(),
            ),
            None => {
                if let Err(e) = tracelab_db::MariaBinaries::find() {
                    out.push(format!("engine mariadb: {e}"));
                }
            }
            Some(_) if restarts => out.push(
                "engine mariadb: this study restarts the server for some levels (its environment), which only the private server allows; run it without --db".into(),
            ),
            Some(u) => {
                if let Err(e) = run_drives(u, "select 1") {
                    out.push(format!("engine mariadb: cannot run on {} ({e})", redact(u)));
                }
            }
        },
    }
    out
}
