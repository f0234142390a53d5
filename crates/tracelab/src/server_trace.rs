//! `--server-trace DIR` of `db start` and `run`: the private PostgreSQL or
//! MariaDB server starts with tracelab's server tracer (crates/servertrace)
//! as `LD_PRELOAD`, and each client backend (each connection's thread, on
//! MariaDB) writes its own 10046 trace into DIR (docs/server-trace.md).

use std::path::Path;

use tracelab_engine::Engine;

use crate::exit::Failure;

/// The server tracer, built by this crate's build script (empty where it
/// cannot be built).
pub const LIB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libtracelab_servertrace.so"));

/// The library's file name inside DIR.
pub const LIB_NAME: &str = "libtracelab_servertrace.so";

/// Makes DIR (writable by the server's user), writes the library into it
/// and returns the environment the server starts with. The library stays
/// in DIR: a server started by `db start` outlives this process, and maps
/// it for its whole life (it is replaced by a rename, never rewritten in
/// place, so that a running server keeps the copy it mapped).
pub fn prepare(dir: &Path, engine: Engine) -> Result<Vec<(String, String)>, Failure> {
    if !matches!(engine, Engine::Postgres | Engine::Mysql) {
        return Err(Failure::Usage(format!(
            "--server-trace: traces from inside the server are made for PostgreSQL and MariaDB only, not {}",
            engine.title()
        )));
    }
    if LIB.is_empty() {
        return Err(Failure::Usage(
            "--server-trace: this build of tracelab lacks the server tracer (it builds on Linux x86_64 and aarch64 only)".into(),
        ));
    }
    if engine == Engine::Postgres {
        refuse_old_postgres()?;
    }
    let fail = |what: &str, p: &Path, e: std::io::Error| {
        Failure::Usage(format!(
            "--server-trace: cannot {what} {}: {e}",
            p.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail("make the directory", dir, e))?;
    let dir = std::fs::canonicalize(dir).map_err(|e| fail("find", dir, e))?;
    let lib = dir.join(LIB_NAME);
    let tmp = dir.join(format!(".{LIB_NAME}.{}", std::process::id()));
    std::fs::write(&tmp, LIB).map_err(|e| fail("write", &tmp, e))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| fail("write", &tmp, e))?;
    }
    std::fs::rename(&tmp, &lib).map_err(|e| fail("write", &lib, e))?;
    if engine == Engine::Mysql {
        tracelab_db::give_to_mariadb(&dir)?;
    } else {
        tracelab_db::give_to_server(&dir)?;
    }
    Ok(vec![
        ("LD_PRELOAD".into(), lib.display().to_string()),
        (
            "TRACELAB_SERVER_TRACE_DIR".into(),
            dir.display().to_string(),
        ),
    ])
}

/// Where each connection's trace goes, for the message that says so: a
/// backend's process id on PostgreSQL, the connection id on MariaDB.
pub fn trace_name(engine: Engine) -> &'static str {
    if engine == Engine::Mysql {
        "tracelab_server_CONNECTION_ID.trc"
    } else {
        "tracelab_server_PID.trc"
    }
}

/// PostgreSQL 13 and older do not export the backend's wait-event word
/// (`my_wait_event_info`, new in 14) that the tracer names each wait by:
/// their server would run untraced, so `--server-trace` is refused there
/// before anything is made. (13 is out of support since November 2025.)
fn refuse_old_postgres() -> Result<(), Failure> {
    let Ok(bins) = tracelab_db::PgBinaries::find() else {
        // The start itself says that no server was found.
        return Ok(());
    };
    match bins.major_version() {
        Some(v) if v < 14 => Err(Failure::Usage(format!(
            "--server-trace needs PostgreSQL 14 or newer; the server in {} is PostgreSQL {v}, \
             which does not export the wait-event word (my_wait_event_info) the tracer names \
             waits by",
            bins.bindir.display()
        ))),
        _ => Ok(()),
    }
}
