//! `tracelab skew`: mrskew's options in, mrskew's table out.

use tracelab_skew::{profile, Format, Outcome, PercentFormat, SkewError, SkewOptions, Sort, Units};

use crate::exit::{self, Failure};
use crate::output::{out, say};
use crate::progress::Progress;

const AFTER_HELP: &str = "\
Expressions (--where, --where1, --group, --group-label, --select) are Perl, as in mrskew:
  numbers, 'strings', \"interpolated $strings\", q{...}, qq{...}, barewords (FETCH is 'FETCH');
  + - * / % ** . x;
  == != < > <= >= <=> eq ne lt gt le ge cmp; && || ! and or not xor ?: ; =~ !~ /regex/imsx;
  sprintf substr length lc uc lcfirst ucfirst index rindex join split int abs sqrt
  log exp hex oct ord chr defined scalar basename dirname.
Variables: $af (accounted-for seconds: CPU c of a database call, ela of a WAIT),
  $dur ($e or $ela), $e $c $ela $nam/$name $call $r/$row $dep $depmin $tim $line $file
  $basename/$base $text $sqlid $sql $hv $oct $uid $lid $ad $cursor_id $parse_id $exec_id
  $p1 $p2 $p3 $obj $p $cr $cu $mis $og $plh $type $bytes $rlbk $rd_only
  $island_id/$experience_id, $ssqlid $ssql (the statement with its literals made binds),
  $time0 $time1 (wall clock of the call's start and end), and @bind (bind values of the
  current execution).
The filter is ((--where) and (--where1)) and ($nam=~/--name/i); defaults 1, $dep==$depmin, .+
Options take mrskew's spellings too: -where, --alldep, --gl, --nohead, --no-dashes, --commas=0,
  --rc=FILE; every flag has its --no form. Accepted for mrskew's rc files, without effect:
  --[no]histogram, --initrc.
Built-in rc files: p10.rc disk.rc ssd.rc all.rc sqlid.rc cull-snmfc.rc (--listrc shows them).
A compressed file's $basename drops the compression suffix (x.trc.gz reads as x.trc).
Numbers are exact decimals (times are whole microseconds) rounded half up, as mrskew prints them.
Exit status: 0 done; 1 some input damaged or skipped (report written), or no call matched;
2 bad usage; 3 output error.";

/// Options of `tracelab skew` (mrskew's, plus --unaccounted, --buckets,
/// --json, --output, --jobs).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true, after_help = AFTER_HELP)]
pub struct Args {
    /// Trace files (plain, gzip, bzip2, xz or zstd); - reads standard input.
    #[arg(value_name = "FILE")]
    files: Vec<String>,

    /// Keep calls for which this expression is true (mrskew's where0).
    #[arg(long = "where", value_name = "EXPR")]
    where0: Option<String>,
    /// Second filter conjunct [default: $dep==$depmin].
    #[arg(long, value_name = "EXPR")]
    where1: Option<String>,
    /// Report calls at every depth (same as --where1=1); --noalldepths: only the minimum depth [default].
    #[arg(long, overrides_with = "noalldepths")]
    alldepths: bool,
    #[arg(long = "noalldepths", hide = true, overrides_with = "alldepths")]
    noalldepths: bool,
    /// Keep calls whose name matches this case-insensitive regex, or a class:
    /// :all, :dbcall, :oscall (:syscall) [default: .+].
    #[arg(long, value_name = "REGEX")]
    name: Option<String>,
    /// Group calls by this expression [default: $nam].
    #[arg(long, value_name = "EXPR")]
    group: Option<String>,
    /// Header of column 1: an expression ('"FILE"') or plain text.
    #[arg(long = "group-label", visible_aliases = ["glabel", "gl"], value_name = "EXPR")]
    group_label: Option<String>,
    /// Value summed in column 2 [default: $af].
    #[arg(long, value_name = "EXPR")]
    select: Option<String>,
    /// Header of column 2 [default: DURATION].
    #[arg(long = "select-label", visible_alias = "slabel", value_name = "EXPR")]
    select_label: Option<String>,
    /// Group by duration range instead: p10, disk, ssd, or edges in seconds
    /// (0.001,0.01,0.1); every range is shown.
    #[arg(long, value_name = "SPEC")]
    buckets: Option<String>,
    /// Sort by column (1 label .. 7 MAX), n numeric, a/d direction, or no
    /// [default: 2nd].
    #[arg(long, value_name = "SPEC")]
    sort: Option<String>,
    /// Rows to show; the rest fold into "N others"; 0 (or none) shows all
    /// [default: 10].
    #[arg(long, value_name = "N")]
    top: Option<String>,
    /// Decimals of durations [default: 6].
    #[arg(long, value_name = "N")]
    precision: Option<usize>,
    /// Show at most N characters of column 1.
    #[arg(long, value_name = "N")]
    gwidth: Option<usize>,
    /// The % column is the share times this factor [default: 100].
    #[arg(long, value_name = "FACTOR")]
    pfact: Option<f64>,
    /// printf format of the % column, one %f conversion [default: %.1f%%].
    #[arg(long, value_name = "FORMAT")]
    pform: Option<String>,
    /// Header of the % column [default: %].
    #[arg(long, value_name = "TEXT")]
    plabel: Option<String>,
    /// Seconds per unit of tim [default: 1e-6; 0.01 for Oracle 8i and older].
    #[arg(long, value_name = "SECONDS")]
    timunit: Option<f64>,
    /// Seconds per unit of c (CPU) [default: --trcunit].
    #[arg(long, value_name = "SECONDS")]
    cpuunit: Option<f64>,
    /// Seconds per unit of e and ela, and of c and tim unless --cpuunit and
    /// --timunit say otherwise [default: 1e-6].
    #[arg(long, value_name = "SECONDS")]
    trcunit: Option<f64>,
    /// Longest line read; a longer one is warned about and read as empty
    /// (bytes, or with K, M, G) [default: 64M].
    #[arg(long = "max-line", value_name = "BYTES")]
    max_line: Option<String>,
    /// Thousands separators; --nocommas: none [default: on].
    #[arg(long, overrides_with = "nocommas")]
    commas: bool,
    #[arg(long = "nocommas", hide = true, overrides_with = "commas")]
    nocommas: bool,
    /// Header row; --nohead: none [default: on].
    #[arg(long, overrides_with = "nohead")]
    head: bool,
    #[arg(long = "nohead", hide = true, overrides_with = "head")]
    nohead: bool,
    /// Footer (TOTAL) row; --nofoot: none [default: on].
    #[arg(long, overrides_with = "nofoot")]
    foot: bool,
    #[arg(long = "nofoot", hide = true, overrides_with = "foot")]
    nofoot: bool,
    /// Dash rules; --nodashes: none [default: on].
    #[arg(long, overrides_with = "nodashes")]
    dashes: bool,
    #[arg(long = "nodashes", hide = true, overrides_with = "dashes")]
    nodashes: bool,
    /// Write comma-separated values.
    #[arg(long, overrides_with = "nocsv")]
    csv: bool,
    #[arg(long = "nocsv", hide = true, overrides_with = "csv")]
    nocsv: bool,
    /// Write JSON.
    #[arg(long, overrides_with = "nojson")]
    json: bool,
    #[arg(long = "nojson", hide = true, overrides_with = "json")]
    nojson: bool,
    /// Write the report to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<String>,
    /// Column separator [default: two spaces].
    #[arg(long, value_name = "TEXT")]
    separator: Option<String>,
    /// The SQL*Net message from client (seconds, or 500ms) that end an island
    /// ($island_id, $experience_id) [default: 1].
    #[arg(long, value_name = "TIME", allow_hyphen_values = true,
          value_parser = tracelab_run::duration::seconds)]
    thinktime: Option<std::time::Duration>,
    /// Minimum depth of every file, instead of each file's own.
    #[arg(long, value_name = "N")]
    depmin: Option<i64>,
    /// Add the time mrskew leaves out as pseudo-calls: "unaccounted-for
    /// within calls" (e - c - waits) and "unaccounted-for between calls"
    /// (gaps), so that the TOTAL is the session's response time.
    #[arg(long, overrides_with = "nounaccounted")]
    unaccounted: bool,
    #[arg(long = "nounaccounted", hide = true, overrides_with = "unaccounted")]
    nounaccounted: bool,
    /// List input files, the effective expressions, matched files and call
    /// names on stderr, as mrskew does.
    #[arg(long, overrides_with = "noverbose")]
    verbose: bool,
    #[arg(long = "noverbose", hide = true, overrides_with = "verbose")]
    noverbose: bool,
    /// Worker threads [default: one per core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Read options from this rc file, in place (as named, in
    /// ~/.tracelab/rc/, in $TRACELAB_RCPATH, or built in: p10.rc ...).
    #[arg(long, value_name = "FILE")]
    rc: Option<String>,
    /// List the built-in rc files and exit.
    #[arg(long, overrides_with = "nolistrc")]
    listrc: bool,
    #[arg(long = "nolistrc", hide = true, overrides_with = "listrc")]
    nolistrc: bool,
}

/// A flag given as `--X` (true), `--noX` (false) or not at all; the last
/// of the two on the command line wins (`overrides_with`).
fn flag(on: bool, off: bool) -> Option<bool> {
    if on {
        Some(true)
    } else if off {
        Some(false)
    } else {
        None
    }
}

fn options(a: &Args) -> Result<SkewOptions, SkewError> {
    let d = SkewOptions::default();
    let top = match a.top.as_deref().map(str::trim) {
        None => d.top,
        Some("none") | Some("all") => 0,
        Some(t) => t.parse().map_err(|_| {
            SkewError::Usage(format!("--top={t}: expected a number of rows (0 for all)"))
        })?,
    };
    let format = match (flag(a.csv, a.nocsv), flag(a.json, a.nojson)) {
        (Some(true), Some(true)) => {
            return Err(SkewError::Usage(
                "--csv and --json exclude each other".into(),
            ))
        }
        (Some(true), _) => Format::Csv,
        (_, Some(true)) => Format::Json,
        _ => Format::Text,
    };
    let where1 = match (flag(a.alldepths, a.noalldepths), &a.where1) {
        (Some(true), _) => "1".to_string(),
        (_, Some(w)) => w.clone(),
        _ => d.where1.clone(),
    };
    let unit = |name: &str, v: Option<f64>, default: f64| -> Result<f64, SkewError> {
        match v {
            Some(u) if !(u.is_finite() && u > 0.0) => Err(SkewError::Usage(format!(
                "--{name}={u}: expected a positive number of seconds per unit (1e-6 for microseconds)"
            ))),
            Some(u) => Ok(u),
            None => Ok(default),
        }
    };
    let trc = unit("trcunit", a.trcunit, d.units.elapsed)?;
    let units = Units {
        tim: unit("timunit", a.timunit, trc)?,
        cpu: unit("cpuunit", a.cpuunit, trc)?,
        elapsed: trc,
    };
    let pfact = match a.pfact {
        Some(f) if !f.is_finite() => {
            return Err(SkewError::Usage(format!("--pfact={f}: expected a number")))
        }
        Some(f) => f,
        None => d.pfact,
    };
    let pform = match &a.pform {
        Some(f) => PercentFormat::parse(f).map_err(SkewError::Usage)?,
        None => d.pform.clone(),
    };
    let max_line = max_line(a.max_line.as_deref()).map_err(SkewError::Usage)?;
    Ok(SkewOptions {
        where0: a.where0.clone().unwrap_or(d.where0),
        where1,
        name: a.name.clone().unwrap_or(d.name),
        group: a.group.clone(),
        buckets: a.buckets.clone(),
        group_label: a.group_label.clone(),
        select: a.select.clone(),
        select_label: a.select_label.clone(),
        sort: match &a.sort {
            Some(s) => Sort::parse(s).map_err(SkewError::Usage)?,
            None => d.sort,
        },
        top,
        precision: a.precision.unwrap_or(d.precision),
        gwidth: a.gwidth,
        pfact,
        pform,
        plabel: a.plabel.clone().unwrap_or(d.plabel),
        units,
        max_line,
        min_split: d.min_split,
        commas: flag(a.commas, a.nocommas).unwrap_or(d.commas),
        head: flag(a.head, a.nohead).unwrap_or(d.head),
        foot: flag(a.foot, a.nofoot).unwrap_or(d.foot),
        dashes: flag(a.dashes, a.nodashes).unwrap_or(d.dashes),
        format,
        separator: a.separator.clone().unwrap_or(d.separator),
        thinktime: a.thinktime.map_or(d.thinktime, |d| d.as_secs_f64()),
        depmin: a.depmin,
        unaccounted: a.unaccounted,
        verbose: a.verbose,
        jobs: a.jobs.unwrap_or(0),
    })
}

/// `--max-line` of skew, prof and calls (one meaning for all three): the
/// longest line read, or the reader's default when not given.
pub fn max_line(arg: Option<&str>) -> Result<usize, String> {
    match arg {
        Some(m) => parse_bytes(m).ok_or_else(|| {
            format!(
                "--max-line={m}: expected a number of bytes of at least 1K, optionally with K, M or G (64M)"
            )
        }),
        None => Ok(tracelab_trace::DEFAULT_MAX_LINE),
    }
}

/// `65536`, `64K`, `64M`, `1G` (binary multiples).
fn parse_bytes(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, shift) = match s.chars().last()?.to_ascii_uppercase() {
        'K' => (&s[..s.len() - 1], 10),
        'M' => (&s[..s.len() - 1], 20),
        'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: usize = digits.trim().parse().ok()?;
    n.checked_mul(1 << shift).filter(|&b| b >= 1024)
}

fn list_rc() -> Result<(), Failure> {
    let mut t = String::new();
    for (name, text) in tracelab_skew::rc::BUILTIN {
        t.push_str(&format!("{name} (built-in):\n"));
        for l in text.lines() {
            t.push_str(&format!("    {l}\n"));
        }
    }
    t.push_str("rc files are looked up as named, in ~/.tracelab/rc/, in $TRACELAB_RCPATH, then among the built-ins.\n");
    out(&t)
}

/// Mrskew's diagnostic listing, on stderr.
fn listing(o: &Outcome) {
    let mut e = String::from("input files:\n");
    for f in &o.files {
        e.push_str(&format!("\t{}\n", f.name));
    }
    e.push_str(&format!(
        "\nwhere expression:\n\t{}\n",
        o.query.effective_where
    ));
    e.push_str(&format!("\ngroup expression:\n\t{}\n", o.query.group_text));
    e.push_str("\nmatched input files:\n");
    for f in o.files.iter().filter(|f| f.matched > 0) {
        e.push_str(&format!("\t{}\n", f.name));
    }
    let names: Vec<String> = o.matched_names.iter().map(|n| format!("'{n}'")).collect();
    e.push_str(&format!("\nmatched call names:\n\t{}\n\n", names.join(" ")));
    crate::output::err(format_args!("{e}"));
}

fn warnings(o: &Outcome) {
    for f in &o.files {
        notes(f);
        file_warnings(&f.name, f.skipped.as_deref(), &f.warnings);
    }
}

/// One input file's trouble on stderr: why it was skipped, its first
/// warnings and how many more there were (skew and calls alike).
pub fn file_warnings(name: &str, skipped: Option<&str>, w: &tracelab_trace::Diagnostics) {
    if let Some(why) = skipped {
        say!("tracelab: skipped {why}");
    }
    for d in &w.kept {
        say!("tracelab: warning: {d}");
    }
    let more = w.total.saturating_sub(w.kept.len() as u64);
    if more > 0 {
        say!("tracelab: warning: {name}: {more} more warnings not shown");
    }
}

/// What `--unaccounted` did about overlapping calls and interleaved
/// sessions: not damage, but the user must know.
fn notes(f: &tracelab_skew::FileOutcome) {
    let t = &f.timeline;
    let secs = |us: i128| tracelab_skew::Num::micros(us).fixed(6);
    if t.overlaps > 0 {
        say!(
            "tracelab: note: {}: {} calls or waits start before the one before them ended ({} s of overlap in all); that time is counted once, taken out of the unaccounted-for rows",
            f.name,
            t.overlaps,
            secs(t.overlap)
        );
    }
    if t.restarts > 0 {
        say!(
            "tracelab: note: {}: tim goes back {} times (files concatenated, or a clock reset): each starts a new clock walk, counted in full, with no gap across the jump",
            f.name,
            t.restarts
        );
    }
    if t.session_switches > 0 {
        say!(
            "tracelab: note: {}: {} sessions take turns in this file (a shared server's): the {} s across its {} changes of session belong to other sessions and are left out of 'unaccounted-for between calls'",
            f.name,
            t.sessions,
            secs(t.left_out),
            t.session_switches
        );
    }
}

pub fn run(a: Args) -> Result<i32, Failure> {
    if a.listrc {
        list_rc()?;
        return Ok(exit::OK);
    }
    let opts = options(&a)?;
    let total: u64 = a
        .files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let progress = Progress::start(total);
    let outcome = profile(&opts, &a.files, Some(progress.counter.clone()));
    progress.finish();
    let outcome = outcome?;
    if opts.verbose {
        listing(&outcome);
    }
    warnings(&outcome);
    let none = outcome.report.calls() == 0;
    // As mrskew says it, on stderr: a script reads the exit status, and
    // a report with nothing in it is not written (text) or is empty
    // (CSV, JSON). When no file could be read at all, the skip messages
    // said why.
    if none && outcome.files.iter().any(|f| f.skipped.is_none()) {
        say!(
            "tracelab: no calls match where '{}' is true",
            outcome.query.effective_where
        );
    }
    if !(none && opts.format == Format::Text) {
        write_report(a.output.as_deref(), &outcome.report.render(&opts.layout()))?;
    }
    Ok(if none || outcome.had_trouble() {
        exit::TROUBLE
    } else {
        exit::OK
    })
}

/// Writes a report to `path`, or to standard output (a closed pipe is no
/// error: see `crate::output`).
pub fn write_report(path: Option<&str>, text: &str) -> Result<(), Failure> {
    match path {
        Some(p) => std::fs::write(p, text).map_err(|source| Failure::Output {
            what: p.to_string(),
            source,
        }),
        None => out(text),
    }
}
