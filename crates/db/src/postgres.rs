//! Starting a private PostgreSQL cluster.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use crate::binaries::PgBinaries;
use crate::error::{io, DbError};
use crate::launch::{check_free, free_port, hint_traversal, log_tail, run, server_dir};
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

/// A setting's value quoted for postgresql.conf.
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
    let bins = PgBinaries::find()?;
    let dir = server_dir(opts.dir.as_deref())?;
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
        run(initdb, "initdb").map_err(|e| hint_traversal(e, &dir, run_as))?;
    }
    let port = free_port()?;
    let conf = data.join("postgresql.conf");
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
    if !log.exists() {
        std::fs::write(&log, "").map_err(io(&log))?;
    }
    run_as.give(&log)?;
    let mut pg_ctl = Command::new(bins.tool("pg_ctl"));
    run_as.apply(&mut pg_ctl);
    pg_ctl
        .arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(&log)
        .args(["-w", "-t", "60", "start"])
        .envs(env.iter().map(|(k, v)| (k, v)));
    if let Err(e) = run(pg_ctl, "pg_ctl start") {
        return Err(DbError::Command {
            program: "pg_ctl start".into(),
            status: e.to_string(),
            output: log_tail(&log, 15),
        });
    }
    let state = ServerState {
        engine: "postgres".into(),
        url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        dir,
        port,
        socket_dir,
        bindir: bins.bindir,
    };
    state.save()?;
    Ok(state)
}
