//! `tracelab`: a response-time laboratory for databases. This file only
//! dispatches; each subcommand lives in a file of its own, and `exit.rs`
//! turns every error into a message and an exit status.

mod calls;
mod completions;
mod crop;
mod db;
mod exit;
mod ls;
mod man;
mod merge;
mod nl;
mod output;
mod prof;
mod progress;
mod proxy;
mod run;
mod server_trace;
mod signals;
mod skew;
mod study;
mod tim;

use clap::{CommandFactory, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "tracelab",
    version = env!("TRACELAB_VERSION"),
    about = "A response-time laboratory for databases: drive SQL from many sessions, trace every call, profile where the time went (the mrskew way), run controlled experiments",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Profile Oracle extended SQL trace files (10046) the way mrskew does:
    /// filter, group and aggregate calls.
    Skew(Box<skew::Args>),
    /// The response-time profile report of a trace (tkprof, TVD$XTAT, Method R
    /// Profiler): resource profile, statements ranked with tkprof's call
    /// statistics, plans, binds, skew; text, JSON, HTML.
    Prof(Box<prof::Args>),
    /// Start, stop or look at a private, throw-away PostgreSQL or MariaDB for runs and
    /// studies.
    Db(db::Args),
    /// Drive SQL from many sessions, measure every call, trace it
    /// (PostgreSQL, MariaDB or SQLite; a private server when no --db is
    /// given).
    Run(Box<run::Args>),
    /// Run controlled experiments (built-in studies or study files), keep
    /// every run in a results store, report with statistics and charts.
    Study(Box<study::Args>),
    /// A PostgreSQL wire-protocol proxy: add network latency (netem-like)
    /// and write a server-side 10046 trace per client connection.
    Proxy(Box<proxy::Args>),
    /// Write every call as a row (Parquet, CSV or JSON lines), with the
    /// statements and files tables, for DuckDB and Spark.
    Calls(Box<calls::Args>),
    /// List trace files, one line each: size, version, session, module,
    /// action, client id, first and last wall-clock time, calls (mrls).
    Ls(ls::Args),
    /// A trace's lines with their numbers, wall-clock times and the time
    /// since the previous call (mrnl).
    Nl(nl::Args),
    /// A tim value as a wall-clock time, and a wall-clock time as a tim
    /// (mrtim, mrwhen).
    Tim(tim::Args),
    /// A stretch of a trace (time window, lines, one statement, one
    /// session) as a valid trace of its own (mrcrop).
    Crop(crop::Args),
    /// The lines one session, client id, service, module or action left
    /// in many trace files, in time order, as one valid trace (trcsess).
    Merge(merge::Args),
    /// Print the completion script of a shell (bash, zsh, fish, elvish,
    /// powershell).
    Completions(completions::Args),
    /// Print the manual page, or write one per subcommand into a directory.
    Man(man::Args),
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // mrskew's option habits (single-dash long options, unique prefixes,
    // --no forms, rc files) are resolved before clap sees the words.
    let args = match args.get(1).map(String::as_str) {
        Some("skew") => match tracelab_skew::rc::expand(&args[2..]) {
            Ok(rest) => args[..2].iter().cloned().chain(rest).collect(),
            Err(e) => exit::fail(exit::Failure::from(e)),
        },
        _ => args,
    };
    let cli = Cli::parse_from(args);
    let status = match cli.command {
        Command::Skew(a) => skew::run(*a),
        Command::Prof(a) => prof::run(*a),
        Command::Db(a) => db::run(a),
        Command::Run(a) => run::run(*a),
        Command::Study(a) => study::run(*a),
        Command::Proxy(a) => proxy::run(*a),
        Command::Calls(a) => calls::run(*a),
        Command::Ls(a) => ls::run(a),
        Command::Nl(a) => nl::run(a),
        Command::Tim(a) => tim::run(a),
        Command::Crop(a) => crop::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Completions(a) => completions::run(a, Cli::command()),
        Command::Man(a) => man::run(a, Cli::command()),
    };
    match status {
        Ok(code) => std::process::exit(code),
        Err(f) => exit::fail(f),
    }
}
