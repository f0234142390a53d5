//! `tracelab prof`: the response-time profile report of a trace (tkprof,
//! TVD$XTAT, Method R Profiler), as text, JSON or one HTML page.

use crate::output::say;
use tracelab_prof::{profile, FileOutcome, Outcome, ProfOptions, TextOptions};

use crate::exit::{self, Failure};
use crate::progress::Progress;

const AFTER_HELP: &str = "\
Per trace file (a trcsess-merged file is one session): the resource profile of the whole
response time R (the CPU of each kind of database call, as `CPU: EXEC calls`, and their
total; each wait; unaccounted-for time within and between calls; think time), the
statements ranked by their share of R, and by their time with their recursive statements'
(TVD$XTAT's ranking), the recursive statements under their parents, then each statement as
tkprof prints it (call count cpu elapsed disk query current rows, misses in library cache,
optimizer mode, parsing user, row-source plan, waits) with what tkprof leaves out: the
figures with its recursive statements, its distinct bind sets and a p10 histogram of its
EXEC/FETCH calls and executions; tkprof's OVERALL TOTALS.
tkprof's figures: a statement's calls net of the recursive calls made inside them (Oracle
writes a parent's c, e, p, cr, cu including its recursive calls'; tkprof lists those under
the recursive statements), seconds truncated to 0.01; --gross prints them as the trace
writes them.
Exit status: 0 done, 1 report written but some input damaged or skipped, 2 bad usage,
3 output error.";

/// Options of `tracelab prof`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// Trace files (plain, gzip, bzip2, xz or zstd); - reads standard input.
    #[arg(value_name = "FILE")]
    files: Vec<String>,
    /// Write the report as one self-contained HTML page to this file; the
    /// text or JSON report is then written only if --output names where
    /// (--output - for standard output).
    #[arg(long, value_name = "FILE")]
    html: Option<String>,
    /// Write JSON instead of text.
    #[arg(long)]
    json: bool,
    /// tkprof's layout only (statements in the order they first appear, no
    /// profile, no tracelab additions), to compare with tkprof's own output.
    #[arg(long, conflicts_with = "json")]
    tkprof: bool,
    /// Call tables gross, as the trace lines give them (a parent's calls
    /// with the recursive calls made inside them), instead of tkprof's
    /// figures net of the recursive calls.
    #[arg(long, conflicts_with = "json")]
    gross: bool,
    /// The SQL*Net message from client (seconds, or 500ms) that count as think time
    /// [default: 1].
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = tracelab_run::duration::seconds)]
    thinktime: Option<std::time::Duration>,
    /// Write the text or JSON report to this file (- for standard output)
    /// instead of standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<String>,
    /// Worker threads [default: one per core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Statements shown, by share of R; the rest are folded into one line
    /// (how many, their time) [default: 100; 0: all].
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// With several files, what of each file's own report follows their
    /// combined profile: short (its resource profile), full, none.
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = Each::Short)]
    each: Each,
    /// Longest line read; a longer one is warned about and read as empty
    /// (bytes, or with K, M, G) [default: 64M].
    #[arg(long = "max-line", value_name = "BYTES")]
    max_line: Option<String>,
    /// Distinct statements past which a file is read twice, the first time
    /// keeping only what ranks each statement (hidden: for the tests that
    /// compare the two ways of reading; the report is the same).
    #[arg(long = "detail-limit", value_name = "N", hide = true)]
    detail_limit: Option<usize>,
}

/// How much of each file's own report follows the combined profile of
/// several files: 20 files' full reports are tens of thousands of lines,
/// so by default each file shows only its resource profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Each {
    /// Each file's header and resource profile.
    Short,
    /// Each file's whole report.
    Full,
    /// None: the combined profile only.
    None,
}

/// A file's header and resource profile: its part of a several-file report
/// when `--each short`.
fn short(p: &tracelab_prof::FileProfile) -> String {
    let mut s = format!(
        "tracelab prof: {}\nResponse time R = {} s\n",
        p.file,
        tracelab_prof::secs6(p.response_time_us)
    );
    for w in &p.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s.push_str("RESOURCE PROFILE\n");
    s.push_str(&tracelab_prof::profile_table(p));
    s
}

fn warnings(o: &Outcome) {
    for f in &o.files {
        match f {
            FileOutcome::Skipped { why, .. } => say!("tracelab: skipped {why}"),
            FileOutcome::Profiled(p) => {
                for w in &p.warnings {
                    say!("tracelab: warning: {w}");
                }
                for n in &p.notes {
                    say!("tracelab: note: {n}");
                }
            }
        }
    }
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let opts = ProfOptions {
        thinktime: a.thinktime.map_or(1.0, |d| d.as_secs_f64()),
        jobs: a.jobs.unwrap_or(0),
        top: a.top.unwrap_or(tracelab_prof::DEFAULT_TOP),
        max_line: crate::skew::max_line(a.max_line.as_deref()).map_err(Failure::Usage)?,
        detail_limit: a
            .detail_limit
            .unwrap_or(tracelab_prof::DEFAULT_DETAIL_LIMIT),
    };
    let total: u64 = a
        .files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let progress = Progress::start(total);
    let outcome = profile(&a.files, &opts, Some(progress.counter.clone()));
    progress.finish();
    let outcome = outcome?;
    warnings(&outcome);
    let profiles: Vec<_> = outcome.profiles().collect();
    let text = if a.json {
        tracelab_prof::to_json(&profiles)
    } else {
        let o = TextOptions {
            tkprof: a.tkprof,
            gross: a.gross,
        };
        let mut parts = Vec::new();
        // Several files: their combined profile first (as skew gives one
        // table for all its files), then each file's (--each). tkprof's
        // layout stays one report per file, as tkprof writes them.
        let several = profiles.len() > 1 && !a.tkprof;
        if several {
            parts.push(tracelab_prof::render_combined(&profiles));
        }
        for p in &profiles {
            match (several, a.each) {
                (true, Each::None) => {}
                (true, Each::Short) => parts.push(short(p)),
                _ => parts.push(tracelab_prof::render(p, o)),
            }
        }
        parts.join("\n")
    };
    if let Some(path) = &a.html {
        let page = tracelab_prof::html::render(&profiles);
        std::fs::write(path, page).map_err(|source| Failure::Output {
            what: path.clone(),
            source,
        })?;
    }
    // With --html the page is what was asked for: the text goes only where
    // --output says (- for standard output), not over the terminal.
    match (a.output.as_deref(), &a.html) {
        (Some("-"), _) => crate::output::out(&text)?,
        (None, Some(_)) => {}
        (path, _) => crate::skew::write_report(path, &text)?,
    }
    Ok(if outcome.had_trouble() {
        exit::TROUBLE
    } else {
        exit::OK
    })
}
