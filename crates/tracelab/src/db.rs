//! `tracelab db`: start, stop and look at a private, throw-away database
//! server.

use std::path::PathBuf;

use tracelab_db::{
    start_mariadb_with_env, start_postgres_with_env, status, stop, MariaOptions, PgOptions, Status,
};
use tracelab_engine::Engine;

use crate::exit::{self, Failure};
use crate::output::{out, say};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Initialise (if needed) and start a private server on a free port of
    /// 127.0.0.1 with its own socket directory; print its connection URL.
    Start {
        /// The engine: postgres (URL postgres://postgres@127.0.0.1:PORT/postgres)
        /// or mariadb (URL mysql://root@127.0.0.1:PORT/tracelab).
        #[arg(long, default_value = "postgres",
              value_parser = engine_parser(&[Engine::Postgres.name(), Engine::Mysql.name()]))]
        engine: Engine,
        /// Where the server lives (data, socket, log); a new temporary
        /// directory, printed on stderr, when not given.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// A server setting, name=value (repeatable): appended to
        /// postgresql.conf for PostgreSQL, given to mariadbd as
        /// --name=value for MariaDB.
        #[arg(short = 'c', value_name = "NAME=VALUE")]
        settings: Vec<String>,
        /// Trace every client connection from inside the server: one
        /// 10046-format trace per connection in DIR (each call's CPU and
        /// elapsed, every wait named with PostgreSQL's wait event, or
        /// MariaDB's thd_wait type; see docs/server-trace.md). The server
        /// keeps tracing until it stops.
        #[arg(long, value_name = "DIR")]
        server_trace: Option<PathBuf>,
    },
    /// Stop the server of a directory (fast shutdown), whatever its engine.
    Stop {
        #[arg(long)]
        dir: PathBuf,
    },
    /// Say whether the server of a directory runs, and its URL.
    Status {
        #[arg(long)]
        dir: PathBuf,
    },
}

pub fn run(a: Args) -> Result<i32, Failure> {
    match a.command {
        Command::Start {
            engine,
            dir,
            settings,
            server_trace,
        } => {
            let mut parsed = Vec::new();
            for s in settings {
                let Some((k, v)) = s.split_once('=') else {
                    let example = if engine == Engine::Mysql {
                        "innodb_flush_log_at_trx_commit=2"
                    } else {
                        "work_mem=64MB"
                    };
                    return Err(Failure::Usage(format!(
                        "-c {s}: expected NAME=VALUE, e.g. -c {example}"
                    )));
                };
                parsed.push((k.trim().to_string(), v.trim().to_string()));
            }
            // Ctrl-C, SIGTERM or SIGHUP while the server is made stops its
            // tools and removes what this start made.
            let env = match &server_trace {
                Some(d) => crate::server_trace::prepare(d, engine)?,
                None => Vec::new(),
            };
            crate::signals::install();
            remove_orphans();
            let (state, name) = if engine == Engine::Mysql {
                let s = start_mariadb_with_env(
                    &MariaOptions {
                        dir,
                        settings: parsed,
                    },
                    &env,
                )?;
                (s, Engine::Mysql.title())
            } else {
                let s = start_postgres_with_env(
                    &PgOptions {
                        dir,
                        settings: parsed,
                    },
                    &env,
                )?;
                (s, Engine::Postgres.title())
            };
            say!(
                "tracelab: {name} running in {} (stop it with `tracelab db stop --dir {}`)",
                state.dir.display(),
                state.dir.display()
            );
            if let Some(d) = &server_trace {
                say!(
                    "tracelab: each connection's server trace goes to {}/{}",
                    d.display(),
                    crate::server_trace::trace_name(engine)
                );
            }
            out(&format!("{}\n", state.url))?;
            Ok(exit::OK)
        }
        Command::Stop { dir } => {
            let state = stop(&dir)?;
            say!("tracelab: stopped the server in {}", state.dir.display());
            Ok(exit::OK)
        }
        Command::Status { dir } => match status(&dir)? {
            Status::Running(s) => {
                out(&format!("running {} {}\n", s.engine, s.url))?;
                Ok(exit::OK)
            }
            Status::Stopped(s) => {
                out(&format!("stopped {} {}\n", s.engine, s.dir.display()))?;
                Ok(exit::STOPPED)
            }
        },
    }
}

/// Stops and removes the private servers of tracelab processes that were
/// killed (their directories name their owner), saying so: run before a
/// command starts a server of its own.
pub fn remove_orphans() {
    for dir in tracelab_db::remove_orphans() {
        say!(
            "tracelab: removed an orphaned private server whose tracelab was killed: {}",
            dir.display()
        );
    }
}

/// clap's parser of an `--engine` value: one of `names` (as `--help` and
/// the completions list them), typed as the engine layer's [`Engine`].
pub(crate) fn engine_parser(
    names: &[&'static str],
) -> impl clap::builder::TypedValueParser<Value = Engine> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names.iter().copied())
        .try_map(|s| Engine::from_name(&s).ok_or_else(|| format!("unknown engine {s}")))
}
