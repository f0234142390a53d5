//! Starting, watching and stopping a private MariaDB server.
//!
//! Unlike PostgreSQL there is no pg_ctl: tracelab starts mariadbd itself,
//! detached in a process group of its own (a Ctrl-C at the terminal must
//! not reach it), waits until it greets a client, and later finds it again
//! through its pid file.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::binaries::MariaBinaries;
use crate::error::{io, DbError};
use crate::launch::{
    check_free, hint_traversal, log_tail, port_for, run, server_dir, undo_interrupted,
};
use crate::privilege::RunAs;
use crate::state::ServerState;

/// The socket's file name in the socket directory.
pub(crate) const SOCKET: &str = "mysqld.sock";
/// The pid file's name in the server's directory.
pub(crate) const PID_FILE: &str = "server.pid";
/// Run by the server at every start, before it accepts connections: makes
/// the database the URL names.
const INIT_FILE: &str = "init.sql";
/// The slow query log's name in the server's directory (written when
/// `slow_query_log` is on).
pub(crate) const SLOW_LOG: &str = "slow.log";
/// The database in the URL, so that clients have somewhere to create
/// tables without naming one.
pub const MARIADB_DATABASE: &str = "tracelab";

/// How long the server may take to start or stop.
const PATIENCE: Duration = Duration::from_secs(60);

/// Server options tracelab sets itself; a `-c` for one of them would break
/// the directory layout, the loopback-only listening or the privilege drop.
const RESERVED: [&str; 16] = [
    "no_defaults",
    "defaults_file",
    "defaults_extra_file",
    "basedir",
    "datadir",
    "tmpdir",
    "socket",
    "port",
    "bind_address",
    "skip_networking",
    "pid_file",
    "log_error",
    "slow_query_log_file",
    "init_file",
    "user",
    "skip_name_resolve",
];

/// How to start a private MariaDB.
#[derive(Debug, Clone, Default)]
pub struct MariaOptions {
    /// Where the server lives; a new temporary directory when `None`.
    pub dir: Option<PathBuf>,
    /// Server options (`-c name=value`), given to mariadbd as
    /// `--name=value` for this start only (nothing reads a config file).
    pub settings: Vec<(String, String)>,
}

/// `-c name=value` settings as mariadbd arguments, refusing names that are
/// not option names or that tracelab sets itself.
fn server_options(settings: &[(String, String)]) -> Result<Vec<String>, DbError> {
    settings
        .iter()
        .map(|(name, value)| {
            let bad = |what: &str| DbError::Setting {
                name: name.clone(),
                what: what.to_string(),
            };
            crate::setting::check_mariadb_setting(name, value)?;
            if RESERVED.contains(&name.replace('-', "_").as_str()) {
                return Err(bad("tracelab sets this option itself"));
            }
            Ok(format!("--{name}={value}"))
        })
        .collect()
}

/// Initialises (on first use) and starts a private MariaDB: data, socket,
/// pid file and log under the directory, listening on a free port of
/// 127.0.0.1, `root` without a password, and a `tracelab` database. Returns
/// its state, with the URL `mysql://root@127.0.0.1:PORT/tracelab`.
pub fn start_mariadb(opts: &MariaOptions) -> Result<ServerState, DbError> {
    start_mariadb_with_env(opts, &[])
}

/// `start_mariadb` with `env` added to mariadbd's environment, for this
/// start only (`LD_PRELOAD` of a library such as tracelab's clock shim).
pub fn start_mariadb_with_env(
    opts: &MariaOptions,
    env: &[(String, String)],
) -> Result<ServerState, DbError> {
    let options = server_options(&opts.settings)?;
    let bins = MariaBinaries::find()?;
    let (dir, made) = server_dir(opts.dir.as_deref())?;
    let r = start_in(opts, &bins, &options, env, dir.clone());
    undo_interrupted(r, &dir, made)
}

fn start_in(
    opts: &MariaOptions,
    bins: &MariaBinaries,
    options: &[String],
    env: &[(String, String)],
    dir: PathBuf,
) -> Result<ServerState, DbError> {
    check_free(&dir, "mariadb")?;
    let run_as = RunAs::choose_among(crate::privilege::MARIADB_USERS)?;
    let data = dir.join("data");
    let socket_dir = dir.join("socket");
    // Its own temporary directory: two servers (or two installs) at once
    // in the shared /tmp collide on MariaDB's temporary table names.
    let tmp = dir.join("tmp");
    let log = dir.join("server.log");
    let init = dir.join(INIT_FILE);
    for d in [&data, &socket_dir, &tmp] {
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    std::fs::write(
        &init,
        format!("CREATE DATABASE IF NOT EXISTS {MARIADB_DATABASE};\n"),
    )
    .map_err(io(&init))?;
    if !log.exists() {
        std::fs::write(&log, "").map_err(io(&log))?;
    }
    run_as.give(&dir)?;
    let basedir = bins.basedir();
    if !data.join("mysql").is_dir() {
        let mut install = Command::new(&bins.install_db);
        crate::environment::server_env(&mut install);
        run_as.apply(&mut install);
        install
            .current_dir(&dir)
            .arg("--no-defaults")
            .arg(format!("--basedir={}", basedir.display()))
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ]);
        if let Err(e) = run(install, "mariadb-install-db") {
            if let DbError::Interrupted(_) = e {
                // A half-made data directory would be taken for a made one.
                let _ = std::fs::remove_dir_all(&data);
            }
            return Err(hint_traversal(e, &dir, run_as));
        }
    }
    let port = port_for(&dir)?;
    let socket = socket_dir.join(SOCKET);
    // The server's early complaints (before it opens --log-error) go to
    // stderr: keep them in the log too.
    let out = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .map_err(io(&log))?;
    let err = out.try_clone().map_err(io(&log))?;
    let mut server = Command::new(&bins.server);
    crate::environment::server_env(&mut server);
    run_as.apply(&mut server);
    server
        .current_dir(&dir)
        .arg("--no-defaults")
        .arg(format!("--basedir={}", basedir.display()))
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--tmpdir={}", tmp.display()))
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--port={port}"))
        .args([
            "--bind-address=127.0.0.1",
            "--skip-networking=0",
            "--skip-name-resolve",
            // Plain connections on loopback, as the private PostgreSQL
            // serves them (initdb leaves ssl off): MariaDB 11.4 and later
            // make a certificate of their own and clients take TLS when
            // it is offered, which would cost each round trip what one
            // version does and another does not, and leave the server
            // tracer (--server-trace) nothing to read. `-c ssl=on`
            // (after this) turns it on again.
            "--skip-ssl",
        ])
        .arg(format!("--pid-file={}", dir.join(PID_FILE).display()))
        .arg(format!("--log-error={}", log.display()))
        .arg(format!(
            "--slow-query-log-file={}",
            dir.join(SLOW_LOG).display()
        ))
        .arg(format!("--init-file={}", init.display()))
        .args(options)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    let child = server
        .spawn()
        .map_err(|source| DbError::Spawn {
            program: bins.server.display().to_string(),
            source,
        })
        .map_err(|e| hint_traversal(e, &dir, run_as))?;
    let state = ServerState {
        engine: tracelab_engine::Engine::Mysql.name().into(),
        url: format!("mysql://root@127.0.0.1:{port}/{MARIADB_DATABASE}"),
        dir,
        port,
        socket_dir,
        bindir: bins
            .server
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    };
    // The directory is a tracelab server's from here on, running or not.
    state.save()?;
    wait_ready(child, port, &socket, &log).map_err(|e| refused_option(e, &opts.settings))?;
    Ok(state)
}

/// A server that exits at once because of a `-c` option it does not know
/// or cannot take ("unknown variable 'x=1'"): a mistake on the command
/// line, said as such (the options are for this start only, so the
/// directory stays usable).
fn refused_option(e: DbError, settings: &[(String, String)]) -> DbError {
    let DbError::Command { output, .. } = &e else {
        return e;
    };
    let said = output.lines().find(|l| {
        l.contains("unknown variable")
            || l.contains("unknown option")
            || l.contains("Incorrect argument")
    });
    let Some(line) = said else { return e };
    let what = line.split("[ERROR]").nth(1).unwrap_or(line).trim();
    let name = settings
        .iter()
        .map(|(k, _)| k)
        .find(|k| what.contains(k.as_str()))
        .or(settings.first().map(|(k, _)| k));
    match name {
        Some(name) => DbError::Setting {
            name: name.clone(),
            what: format!("MariaDB refuses it: {what}"),
        },
        None => e,
    }
}

/// Waits until the server greets a client on its port and its socket
/// exists; if it exits first, or takes too long, says why from its log.
fn wait_ready(mut child: Child, port: u16, socket: &Path, log: &Path) -> Result<(), DbError> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Err(DbError::Command {
                    program: "mariadbd".into(),
                    status: status.to_string(),
                    output: log_tail(log, 15),
                })
            }
            Ok(None) => {}
            Err(e) => return Err(io(log)(e)),
        }
        if socket.exists() && greets(port) {
            break;
        }
        if crate::launch::interrupted() {
            crate::launch::stop_group(&mut child);
            return Err(DbError::Interrupted("mariadbd started".into()));
        }
        if Instant::now() > deadline {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
            let _ = child.wait();
            return Err(DbError::Command {
                program: "mariadbd".into(),
                status: format!("not accepting connections after {}s", PATIENCE.as_secs()),
                output: log_tail(log, 15),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The server outlives this call (and, for `tracelab db start`, this
    // process); whoever started it reaps it when it exits, so that a
    // stopped server leaves no zombie behind in a long-running process.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

/// Whether a MySQL-protocol server on the port sends its handshake (first
/// payload byte 10, protocol version 10). A connect alone is not enough: the
/// kernel accepts connections into the backlog before the server is ready.
/// Hand-written because this crate has no client library, and reading five
/// bytes does not warrant one (mysql_async would bring an async runtime).
fn greets(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    // 3-byte length, sequence number, then the payload.
    let mut head = [0u8; 5];
    s.read_exact(&mut head).is_ok() && head[4] == 10
}

/// The pid of the server of this directory if it runs: the pid file names
/// a live (not zombie) mariadbd/mysqld whose data directory is ours, so a
/// stale pid file whose number was reused by another process is not
/// mistaken for the server.
pub(crate) fn running_pid(state: &ServerState) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(state.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if !crate::launch::alive(pid) {
        return None;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let want = format!("--datadir={}", state.data_dir().display());
    let ours = cmdline.split(|&b| b == 0).any(|arg| arg == want.as_bytes());
    ours.then_some(pid)
}

/// Asks the server to shut down (SIGTERM: a normal shutdown, sessions are
/// disconnected) and waits until its process is gone.
pub(crate) fn shut_down(state: &ServerState) -> Result<(), DbError> {
    let Some(pid) = running_pid(state) else {
        return Ok(());
    };
    match kill(Pid::from_raw(pid as i32), Signal::SIGTERM) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => {
            return Err(DbError::Command {
                program: format!("kill -TERM {pid}"),
                status: e.to_string(),
                output: String::new(),
            })
        }
    }
    let deadline = Instant::now() + PATIENCE;
    while crate::launch::alive(pid) {
        if Instant::now() > deadline {
            return Err(DbError::Command {
                program: "mariadbd shutdown".into(),
                status: format!("still running after {}s", PATIENCE.as_secs()),
                output: log_tail(&state.log_file(), 15),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_options_and_reserved_ones_are_refused() {
        let s = |n: &str, v: &str| vec![(n.to_string(), v.to_string())];
        assert_eq!(
            server_options(&s("innodb_flush_log_at_trx_commit", "2")).unwrap(),
            vec!["--innodb_flush_log_at_trx_commit=2"]
        );
        assert_eq!(
            server_options(&s("sql-mode", "ANSI,TRADITIONAL")).unwrap(),
            vec!["--sql-mode=ANSI,TRADITIONAL"]
        );
        for bad in ["", "-x", "a b", "x;y"] {
            let e = server_options(&s(bad, "1")).unwrap_err().to_string();
            assert!(e.contains("not a setting name"), "{bad}: {e}");
        }
        for reserved in ["datadir", "bind-address", "skip_networking", "user"] {
            let e = server_options(&s(reserved, "1")).unwrap_err().to_string();
            assert!(e.contains("tracelab sets this option itself"), "{e}");
        }
    }

    #[test]
    fn our_own_process_is_alive_and_a_made_up_one_is_not() {
        assert!(crate::launch::alive(std::process::id()));
        // Above the kernel's pid_max (at most 2^22).
        assert!(!crate::launch::alive(1 << 23));
    }
}
