//! `tracelab study`: list, show, run, report and compare studies.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use tracelab_study::{
    builtin, compare_stores, dry_run, load, render, report_dir, report_dir_as, run_study, Choice,
    Format, Observer, Options, Store, StudyError,
};

use crate::exit::{self, Failure};
use crate::output::{out, say};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// The built-in studies.
    List,
    /// Print a built-in study's file (or one of its SQL files, e.g.
    /// redo-undo/debt.sql), to copy and change.
    Show {
        /// A built-in study's name, or NAME/FILE.sql for one of its SQL
        /// files.
        name: String,
    },
    /// Run a study (built-in name or file) and print its report.
    Run(RunArgs),
    /// Rebuild the report of a study's results directory.
    Report {
        /// A results directory written by `study run` (its `--out`).
        dir: PathBuf,
        /// text for a terminal, markdown for a wiki or an issue, html for
        /// a self-contained page with charts.
        #[arg(long, default_value = "text", value_parser = ["text", "markdown", "html"])]
        format: String,
        /// Lay the report out by this study file's `[report]` (columns,
        /// charts, questions, title) instead of the stored one's, without
        /// running again; refused, naming the difference, when its
        /// factors, levels, workload or measurements differ from the
        /// stored study's.
        #[arg(long, value_name = "FILE")]
        study: Option<String>,
    },
    /// Compare two results directories of the same study, cell by cell:
    /// B against A (ratios B/A with 95 % intervals).
    Compare {
        /// The results directory compared against (the baseline).
        a: PathBuf,
        /// The results directory compared with A.
        b: PathBuf,
    },
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// A built-in study (`tracelab study list`) or a study file.
    study: String,
    /// Fewer levels, rows and repetitions: well under 3 minutes.
    #[arg(long)]
    quick: bool,
    /// Repetitions of every cell (overrides the file), or `auto`: rounds
    /// of every cell are added until each comparison's 95 % interval is
    /// narrower than --target-width, or --max-reps is reached.
    #[arg(long, value_name = "N|auto", value_parser = reps_parser)]
    reps: Option<Reps>,
    /// With --reps auto: the widest a comparison's 95 % interval may be,
    /// in % of the ratio (10: about ±5 %) [default: 10; implies --reps auto].
    #[arg(long, value_name = "PCT")]
    target_width: Option<f64>,
    /// With --reps auto: the most repetitions of a cell [default: 20;
    /// implies --reps auto].
    #[arg(long, value_name = "N")]
    max_reps: Option<u32>,
    /// Run on this database instead of a private server; the URL's scheme
    /// names the engine (postgres://, sqlite:PATH, mysql://). Repeatable,
    /// one per engine.
    #[arg(long, value_name = "URL")]
    db: Vec<String>,
    /// The results directory (results.sqlite and the reports).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Continue the interrupted study in --out, skipping the runs done.
    #[arg(long, requires = "out")]
    resume: bool,
    /// Run only these levels of a factor: `--level engine=postgres,sqlite`.
    #[arg(long, value_name = "FACTOR=LEVELS")]
    level: Vec<String>,
    /// Seed of a random run order (recorded in the store).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Give a study var another value: `--var oltp_server=15000`
    /// (recorded in the store; repeatable).
    #[arg(long, value_name = "NAME=VALUE")]
    var: Vec<String>,
    /// Keep every run's traces (the client's, and a proxy's server-side
    /// ones) in DIR/traces/SEQ-client/ and SEQ-proxy/, for `tracelab
    /// skew`, rather than remove them once profiled.
    #[arg(long)]
    keep_traces: bool,
    /// Go ahead with what the study creates, drops or changes on a --db
    /// database (without it, that is listed and nothing runs).
    #[arg(long)]
    yes: bool,
    /// List every SQL statement, server setting and command the study
    /// would run, cell by cell (vars replaced), and run nothing: no
    /// server is started, no results directory made. A study file is a
    /// program; read what it does before running one you did not write.
    #[arg(long, conflicts_with = "resume")]
    dry_run: bool,
    /// Let the study set server settings that run programs or load code
    /// (archive_command, restore_command, ssl_passphrase_command, a
    /// preload library given by path, ...): refused without it.
    #[arg(long)]
    allow_server_programs: bool,
}

/// `--reps`: a number, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reps {
    Fixed(u32),
    Auto,
}

fn reps_parser(s: &str) -> Result<Reps, String> {
    match s.trim() {
        "auto" => Ok(Reps::Auto),
        n => n
            .parse::<u32>()
            .map(Reps::Fixed)
            .map_err(|_| format!("`{s}`: expected a number of repetitions or `auto`")),
    }
}

impl From<StudyError> for Failure {
    fn from(e: StudyError) -> Failure {
        Failure::Study(e)
    }
}

/// A bar across runs with an ETA; hidden when stderr is not a terminal.
struct Bar(ProgressBar);

impl Observer for Bar {
    fn begin(&self, total: usize, done: usize) {
        self.0.set_length(total as u64);
        self.0.set_position(done as u64);
        self.0.reset_eta();
    }
    fn run_done(&self, cell: &str) {
        self.0.set_message(cell.to_string());
        self.0.inc(1);
    }
    fn note(&self, msg: &str) {
        if !self.0.is_hidden() {
            self.0.println(format!("tracelab: {msg}"));
        }
    }
    fn tell(&self, msg: &str) {
        if self.0.is_hidden() {
            say!("tracelab: {msg}");
        } else {
            self.0.println(format!("tracelab: {msg}"));
        }
    }
}

pub fn run(a: Args) -> Result<i32, Failure> {
    match a.command {
        Command::List => {
            let mut t = String::new();
            for (name, text, _) in builtin::STUDIES {
                let title = tracelab_study::Loaded::parse(name, text, None, &[])
                    .map(|l| l.study.title)
                    .unwrap_or_default();
                t.push_str(&format!("{name:<14} {title}\n"));
            }
            out(&t)?;
            Ok(exit::OK)
        }
        Command::Show { name } => match builtin::text(&name).or_else(|| builtin::sql_file(&name)) {
            Some(t) => {
                out(t)?;
                Ok(exit::OK)
            }
            None => Err(Failure::Study(StudyError::NoStudy(name))),
        },
        Command::Report {
            dir,
            format,
            study: None,
        } => {
            out(&report_dir(&dir, parse_format(&format))?)?;
            Ok(exit::OK)
        }
        Command::Report {
            dir,
            format,
            study: Some(file),
        } => {
            let study = tracelab_study::load(&file)?;
            let (report, changed) = report_dir_as(&dir, &study, parse_format(&format))?;
            if !changed.is_empty() {
                say!(
                    "tracelab: laid out by {}, which differs from the stored study in: {}",
                    study.file,
                    changed.join(", ")
                );
            }
            out(&report)?;
            Ok(exit::OK)
        }
        Command::Compare { a, b } => {
            let sa = Store::open(&a, false)?.load()?;
            let sb = Store::open(&b, false)?.load()?;
            // Which store is which, before the table that says A and B.
            out(&format!(
                "A: {}\nB: {}\n{}",
                a.display(),
                b.display(),
                compare_stores(&sa, &sb)?
            ))?;
            Ok(exit::OK)
        }
        Command::Run(r) => run_one(r),
    }
}

fn parse_format(f: &str) -> Format {
    match f {
        "markdown" => Format::Markdown,
        "html" => Format::Html,
        _ => Format::Text,
    }
}

fn run_one(r: RunArgs) -> Result<i32, Failure> {
    let loaded = load(&r.study)?;
    let mut levels = BTreeMap::new();
    for l in &r.level {
        let Some((f, v)) = l.split_once('=') else {
            return Err(Failure::Usage(format!(
                "--level {l}: expected FACTOR=LEVEL[,LEVEL...]"
            )));
        };
        levels.insert(
            f.trim().to_string(),
            v.split(',').map(|s| s.trim().to_string()).collect(),
        );
    }
    let mut vars = BTreeMap::new();
    for v in &r.var {
        let Some((k, x)) = v.split_once('=') else {
            return Err(Failure::Usage(format!("--var {v}: expected NAME=VALUE")));
        };
        vars.insert(k.trim().to_string(), x.trim().to_string());
    }
    if r.reps == Some(Reps::Fixed(0)) {
        return Err(Failure::Usage("--reps: expected at least 1".into()));
    }
    let auto = (r.reps == Some(Reps::Auto) || r.target_width.is_some() || r.max_reps.is_some())
        .then(|| tracelab_study::Auto {
            target_pct: r.target_width.unwrap_or(tracelab_study::Auto::TARGET_PCT),
            max_reps: r.max_reps.unwrap_or(tracelab_study::Auto::MAX_REPS),
        });
    if let Some(a) = auto {
        if matches!(r.reps, Some(Reps::Fixed(_))) {
            return Err(Failure::Usage(
                "--target-width and --max-reps go with --reps auto, not a number of repetitions"
                    .into(),
            ));
        }
        if !(a.target_pct > 0.0 && a.target_pct.is_finite()) {
            return Err(Failure::Usage(format!(
                "--target-width {}: expected a width in % above 0",
                a.target_pct
            )));
        }
        if !(2..=tracelab_study::MAX_REPS).contains(&a.max_reps) {
            return Err(Failure::Usage(format!(
                "--max-reps {}: expected 2 to {} (an interval needs two runs)",
                a.max_reps,
                tracelab_study::MAX_REPS
            )));
        }
    }
    let choice = Choice {
        quick: r.quick,
        reps: match r.reps {
            Some(Reps::Fixed(n)) => Some(n),
            _ => None,
        },
        levels,
        seed: r.seed,
        vars,
    };
    let out = r.out.clone().unwrap_or_else(|| {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("study-{}-{stamp}", loaded.study.name))
    });
    if r.dry_run {
        let opts = Options {
            choice,
            dbs: r.db.clone(),
            out,
            resume: false,
            interrupt: Default::default(),
            keep_traces: r.keep_traces,
            yes: r.yes,
            allow_server_programs: r.allow_server_programs,
        };
        crate::output::out(&dry_run(&loaded, &opts)?)?;
        return Ok(exit::OK);
    }
    // Ctrl-C, SIGTERM and SIGHUP stop the study after the run in flight
    // (or the private server being made); its server goes all the same.
    let interrupt = crate::signals::install();
    crate::db::remove_orphans();
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} runs, ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let opts = Options {
        choice,
        dbs: r.db.clone(),
        out: out.clone(),
        resume: r.resume,
        interrupt: interrupt.clone(),
        keep_traces: r.keep_traces,
        yes: r.yes,
        allow_server_programs: r.allow_server_programs,
    };
    let bar = Bar(bar);
    // The server tracer this binary embeds, for studies that preload it
    // (`{server_trace_lib}`: trace-overhead's server_trace level).
    tracelab_study::set_server_tracer(crate::server_trace::LIB);
    let outcome = match auto {
        Some(a) => tracelab_study::run_study_auto(&loaded, &opts, a, &bar).map(|(o, said)| {
            bar.0.suspend(|| say!("tracelab: {said}"));
            o
        }),
        None => run_study(&loaded, &opts, &bar),
    };
    bar.0.finish_and_clear();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            // What was measured is kept: say how to go on from it.
            // (Not when another run holds the store: it is still going.)
            let has_runs = !matches!(e, StudyError::Busy { .. })
                && Store::open(&out, false)
                    .and_then(|s| s.done())
                    .is_ok_and(|d| !d.is_empty());
            if has_runs {
                say!(
                    "tracelab: the runs done are in {}; after fixing the cause, continue with `tracelab study run {} --out {} --resume`",
                    out.display(),
                    r.study,
                    out.display()
                );
            }
            return Err(e.into());
        }
    };
    // The report is built from the store, as `study report` builds it.
    let stored = Store::open(&out, false)?.load()?;
    // A report that cannot be written is named and makes the exit 3; the
    // others, and the text on stdout, are still written.
    let mut unwritten = false;
    for (fmt, file) in [
        (Format::Markdown, "report.md"),
        (Format::Html, "report.html"),
    ] {
        let text = render(&stored, fmt)?;
        let path = out.join(file);
        if let Err(e) = std::fs::write(&path, text) {
            say!("tracelab: cannot write {}: {e}", path.display());
            unwritten = true;
        }
    }
    crate::output::out(&render(&stored, Format::Text)?)?;
    say!(
        "tracelab: {} runs done now, {} before; results in {} (report.md, report.html)",
        outcome.ran,
        outcome.skipped,
        out.display()
    );
    if outcome.interrupted {
        say!(
            "tracelab: interrupted; continue with `tracelab study run {} --out {} --resume`",
            r.study,
            out.display()
        );
        return Ok(crate::signals::status());
    }
    Ok(if unwritten { exit::OUTPUT } else { exit::OK })
}
