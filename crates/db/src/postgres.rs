//! Starting a private PostgreSQL cluster.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binaries::PgBinaries;
use crate::error::{io, DbError};
use crate::privilege::RunAs;
use crate::state::{status, ServerState, Status};

/// How to start a private PostgreSQL.
#[derive(Debug, Clone, Default)]
pub struct PgOptions {
    /// Where the cluster lives; a new temporary directory when `None`.
    pub dir: Option<PathBuf>,
    /// Server settings (`-c name=value`), written to postgresql.conf.
    pub settings: Vec<(String, String)>,
}

fn run(mut cmd: Command, what: &str) -> Result<(), DbError> {
    let out = cmd.output().map_err(|source| DbError::Spawn {
        program: what.to_string(),
        source,
    })?;
    if out.status.success() {
        return Ok(());
    }
    Err(DbError::Command {
        program: what.to_string(),
        status: out.status.to_string(),
        output: String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned(),
    })
}

/// A port nobody listens on now. Another process could take it before the
/// server does; the server then fails to start and says so.
fn free_port() -> Result<u16, DbError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(io("127.0.0.1:0"))?;
    let port = l.local_addr().map_err(io("127.0.0.1:0"))?.port();
    Ok(port)
}

/// A setting's value quoted for postgresql.conf.
fn conf_value(v: &str) -> String {
    format!("'{}'", v.replace('\\', "\\\\").replace('\'', "''"))
}

/// Initialises and starts a private cluster: data, socket and log under
/// the directory, listening on a free port of 127.0.0.1, trusting local
/// connections. Returns its state (with the connection URL).
pub fn start_postgres(opts: &PgOptions) -> Result<ServerState, DbError> {
    let bins = PgBinaries::find()?;
    let dir = match &opts.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(io(d))?;
            d.canonicalize().map_err(io(d))?
        }
        None => tempfile::Builder::new()
            .prefix("tracelab-db-")
            .tempdir()
            .map_err(io(std::env::temp_dir()))?
            .keep(),
    };
    if let Ok(Status::Running(s)) = status(&dir) {
        return Err(DbError::State {
            path: dir,
            what: format!("a server already runs here ({})", s.url),
        });
    }
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
        .args(["-w", "-t", "60", "start"]);
    if let Err(e) = run(pg_ctl, "pg_ctl start") {
        let tail = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(DbError::Command {
            program: "pg_ctl start".into(),
            status: e.to_string(),
            output: format!("server log {}:\n{}", log.display(), tail.join("\n")),
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

/// initdb as another user fails on a directory that user cannot reach
/// (say, under /root): say what to do.
fn hint_traversal(e: DbError, dir: &Path, run_as: RunAs) -> DbError {
    match (e, run_as) {
        (DbError::Command { program, status, output }, RunAs::User { .. })
            if output.contains("Permission denied") =>
        {
            DbError::Command {
                program,
                status,
                output: format!(
                    "{output}\nThe server runs as an unprivileged user, which cannot reach {}: choose a --dir it can reach (for example under /tmp).",
                    dir.display()
                ),
            }
        }
        (e, _) => e,
    }
}
