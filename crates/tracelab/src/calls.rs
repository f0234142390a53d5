//! `tracelab calls`: the call model as Parquet (or CSV, JSON lines), for
//! DuckDB on one machine and Spark on a cluster.

use crate::output::say;
use tracelab_calls::{export, CallsOptions, Format, Layout, Outcome};

use crate::exit::{self, Failure};
use crate::progress::Progress;

const AFTER_HELP: &str = "\
One row per call, the calls `tracelab skew` counts with the same --where, --name and --alldepths.
Columns: file basename line session call name dep depmin cursor sqlid hv oct uid lid parse_id
  exec_id island_id af dur e c ela tim (integers, µs) start_time end_time (timestamps, UTC)
  r p cr cu mis og plh type bytes rlbk rd_only p1 p2 p3 obj binds (a list).
Tables: calls (one partition per input file: DIR/calls/file_id=N/), statements (sqlid, hv, oct,
  text), files (file_id, name, header facts: version, host, session, service, module, action).
--output x.parquet writes every call to one file (with a file_id column) and the small tables
  beside it (x.statements.parquet, x.files.parquet).
Exit status: 0 done, 1 written but some input damaged or skipped, 2 bad usage, 3 output error.";

/// Options of `tracelab calls`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Trace files (plain, gzip, bzip2, xz or zstd); - reads standard input.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,
    /// A directory (partitioned by file), or a file: x.parquet, x.csv,
    /// x.jsonl.
    #[arg(long, short, value_name = "DIR|FILE")]
    output: String,
    /// parquet, csv or jsonl [default: the output's extension, else
    /// parquet].
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Keep calls for which this expression is true (as in skew).
    #[arg(long = "where", value_name = "EXPR")]
    where0: Option<String>,
    /// Keep calls whose name matches this case-insensitive regex, or a
    /// class: :all, :dbcall, :oscall [default: .+].
    #[arg(long, value_name = "REGEX")]
    name: Option<String>,
    /// Calls at every depth, not only at the file's minimum depth.
    #[arg(long, alias = "alldep")]
    alldepths: bool,
    /// The SQL*Net message from client (seconds, or 500ms) that end an island
    /// (island_id) [default: 1].
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = tracelab_run::duration::seconds)]
    thinktime: Option<std::time::Duration>,
    /// Minimum depth of every file, instead of each file's own.
    #[arg(long, value_name = "N")]
    depmin: Option<i64>,
    /// Worker threads [default: one per core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Longest line read; a longer one is warned about and read as empty
    /// (bytes, or with K, M, G) [default: 64M].
    #[arg(long = "max-line", value_name = "BYTES")]
    max_line: Option<String>,
}

fn format(name: &str) -> Result<Format, Failure> {
    match name.to_ascii_lowercase().as_str() {
        "parquet" => Ok(Format::Parquet),
        "csv" => Ok(Format::Csv),
        "jsonl" | "ndjson" | "json" => Ok(Format::Jsonl),
        _ => Err(Failure::Usage(format!(
            "--format={name}: expected parquet, csv or jsonl"
        ))),
    }
}

fn options(a: &Args) -> Result<CallsOptions, Failure> {
    let d = CallsOptions::default();
    Ok(CallsOptions {
        where0: a.where0.clone().unwrap_or(d.where0),
        where1: if a.alldepths { "1".into() } else { d.where1 },
        name: a.name.clone().unwrap_or(d.name),
        thinktime: a.thinktime.map_or(d.thinktime, |d| d.as_secs_f64()),
        depmin: a.depmin,
        format: a.format.as_deref().map(format).transpose()?,
        output: a.output.clone().into(),
        jobs: a.jobs.unwrap_or(0),
        max_line: crate::skew::max_line(a.max_line.as_deref()).map_err(Failure::Usage)?,
    })
}

fn warnings(o: &Outcome) {
    for f in &o.files {
        crate::skew::file_warnings(&f.name, f.skipped.as_deref(), &f.warnings);
    }
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let opts = options(&a)?;
    let total: u64 = a
        .files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let progress = Progress::start(total);
    let outcome = export(&opts, &a.files, Some(progress.counter.clone()));
    progress.finish();
    let outcome = outcome?;
    warnings(&outcome);
    let files = outcome.files.iter().filter(|f| f.skipped.is_none()).count();
    let place = match &outcome.layout {
        // `--output traces/` names the directory `traces/`, not `traces//`.
        Some(Layout::Dir(d)) => format!(
            "{}/ (calls/, statements, files)",
            d.display().to_string().trim_end_matches('/')
        ),
        Some(Layout::File(f)) => f.display().to_string(),
        None => String::new(),
    };
    say!(
        "tracelab: {} calls of {files} file{} and {} statements written to {place}",
        outcome.rows,
        if files == 1 { "" } else { "s" },
        outcome.statements,
    );
    Ok(if outcome.had_trouble() {
        exit::TROUBLE
    } else {
        exit::OK
    })
}
