//! Starting a private PostgreSQL cluster.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binaries::PgBinaries;
use crate::error::{io, DbError};
use crate::launch::{
    check_free, hint_traversal, log_tail, port_for, run, server_dir, undo_interrupted,
};
use crate::privilege::RunAs;
use crate::state::ServerState;

/// How to start a private PostgreSQL.
#[derive(Debug, Clone, Default)]
pub struct PgOptions {
    /// Where the cluster lives; a new temporary directory when `None`.
    pub dir: Option<PathBuf>,
    /// Server settings (`-c name=value`), written to postgresql.conf.
    pub settings: Vec<(String, String)>,
}

/// A setting's value quoted for postgresql.conf: in single quotes, a
/// quote doubled and a backslash doubled (the file's string escapes);
/// values with a line break never get here (`crate::setting`).
fn conf_value(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "''"))
}

/// Initialises and starts a private cluster: data, socket and log under
/// the directory, listening on a free port of 127.0.0.1, trusting local
/// connections. Returns its state (with the connection URL).
pub fn start_postgres(opts: &PgOptions) -> Result<ServerState, DbError> {
    start_postgres_with_env(opts, &[])
}

/// `start_postgres` with `env` added to the environment of the server's
/// processes (pg_ctl passes its own on to the postmaster, whose children
/// inherit it): `LD_PRELOAD` of a library such as tracelab's clock shim.
/// The environment holds for this start only.
pub fn start_postgres_with_env(
    opts: &PgOptions,
    env: &[(String, String)],
) -> Result<ServerState, DbError> {
    // Before anything is made: a name or value that could write lines of
    // its own into postgresql.conf.
    for (k, v) in &opts.settings {
        crate::setting::check_postgres_setting(k, v)?;
    }
    let bins = PgBinaries::find()?;
    let (dir, made) = server_dir(opts.dir.as_deref())?;
    let r = start_in(opts, &bins, env, dir.clone());
    undo_interrupted(r, &dir, made)
}

fn start_in(
    opts: &PgOptions,
    bins: &PgBinaries,
    env: &[(String, String)],
    dir: PathBuf,
) -> Result<ServerState, DbError> {
    check_free(&dir, "postgres")?;
    let run_as = RunAs::choose()?;
    let data = dir.join("data");
    let socket_dir = dir.join("socket");
    let log = dir.join("server.log");
    if !data.join("PG_VERSION").is_file() {
        for d in [&data, &socket_dir] {
            std::fs::create_dir_all(d).map_err(io(d))?;
        }
        run_as.give(&dir)?;
        let mut initdb = Command::new(bins.tool("initdb"));
        crate::environment::server_env(&mut initdb);
        run_as.apply(&mut initdb);
        initdb.arg("-D").arg(&data).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]);
        if let Err(e) = run(initdb, "initdb") {
            if let DbError::Interrupted(_) = e {
                // A half-made cluster would make the next initdb refuse
                // the directory.
                let _ = std::fs::remove_dir_all(&data);
            }
            return Err(hint_traversal(e, &dir, run_as));
        }
    }
    let port = port_for(&dir)?;
    let conf = data.join("postgresql.conf");
    let before = std::fs::metadata(&conf).map_err(io(&conf))?.len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&conf)
        .map_err(io(&conf))?;
    let mut text = format!(
        "\n# tracelab db start\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = {}\n",
        conf_value(&socket_dir.to_string_lossy())
    );
    for (k, v) in &opts.settings {
        text.push_str(&format!("{k} = {}\n", conf_value(v)));
    }
    f.write_all(text.as_bytes()).map_err(io(&conf))?;
    drop(f);
    let state = ServerState {
        engine: tracelab_engine::Engine::Postgres.name().into(),
        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        dir,
        port,
        socket_dir,
        bindir: bins.bindir.clone(),
    };
    // The directory is a tracelab server's from here on, running or not:
    // `status`, `start` and `stop` all know it, whatever happens next.
    state.save()?;
    if !opts.settings.is_empty() {
        // `postgres -C` reads the configuration as a start would and stops
        // there: a setting it refuses (an unknown name, a bad value) is
        // taken back out, so that the next start works, and said plainly.
        let mut check = Command::new(bins.tool("postgres"));
        crate::environment::server_env(&mut check);
        run_as.apply(&mut check);
        check.arg("-D").arg(&data).args(["-C", "port"]);
        if let Err(DbError::Command { output, .. }) = run(check, "postgres -C") {
            let restored = std::fs::OpenOptions::new()
                .write(true)
                .open(&conf)
                .and_then(|f| f.set_len(before));
            restored.map_err(io(&conf))?;
            return Err(refused_setting(&output, &opts.settings));
        }
    }
    if !log.exists() {
        std::fs::write(&log, "").map_err(io(&log))?;
    }
    run_as.give(&log)?;
    wait_for_reaping(&data);
    let mut pg_ctl = Command::new(bins.tool("pg_ctl"));
    crate::environment::server_env(&mut pg_ctl);
    run_as.apply(&mut pg_ctl);
    pg_ctl
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(&log)
        .args(["-w", "-t", "60", "start"])
        .envs(env.iter().map(|(k, v)| (k, v)));
    if let Err(e) = run(pg_ctl, "pg_ctl start") {
        if let DbError::Interrupted(_) = e {
            // The postmaster may be up or on its way: down at once, so
            // that its directory can go.
            let mut halt = Command::new(bins.tool("pg_ctl"));
            crate::environment::server_env(&mut halt);
            run_as.apply(&mut halt);
            let _ = halt
                .arg("-D")
                .arg(&data)
                .args(["-m", "immediate", "-w", "-t", "30", "stop"])
                .output();
            return Err(e);
        }
        let status = match e {
            DbError::Command { status, .. } => status,
            other => other.to_string(),
        };
        return Err(DbError::Command {
            program: "pg_ctl start".into(),
            status,
            output: log_tail(&log, 15),
        });
    }
    Ok(state)
}

/// A postmaster killed with SIGKILL stays a zombie until its parent (init,
/// once pg_ctl has gone) reaps it, and PostgreSQL takes the pid in its
/// lock file for a live postmaster until then: wait (10 s at most) for
/// the reaping rather than fail the start.
fn wait_for_reaping(data: &Path) {
    let Some(pid) = std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()
        .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
    else {
        return;
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !crate::launch::alive(pid)
        && std::path::Path::new(&format!("/proc/{pid}")).exists()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The setting PostgreSQL refused, from its complaint about the
/// configuration file ("unrecognized configuration parameter "x"",
/// "invalid value for parameter "work_mem": "x"" and any HINT), without
/// timestamps.
fn refused_setting(output: &str, settings: &[(String, String)]) -> DbError {
    let said: Vec<&str> = output
        .lines()
        .filter_map(|l| {
            ["LOG:", "HINT:", "DETAIL:"]
                .iter()
                .find_map(|tag| l.split_once(tag).map(|(_, rest)| rest.trim()))
        })
        .map(|l| l.split(" in file \"").next().unwrap_or(l))
        .collect();
    let name = settings
        .iter()
        .map(|(k, _)| k)
        .find(|k| said.iter().any(|l| l.contains(&format!("\"{k}\""))))
        .or(settings.first().map(|(k, _)| k))
        .cloned()
        .unwrap_or_default();
    let what = if said.is_empty() {
        output.trim().to_string()
    } else {
        said.join("; ")
    };
    DbError::Setting {
        name,
        what: format!("PostgreSQL refuses it: {what}"),
    }
}
