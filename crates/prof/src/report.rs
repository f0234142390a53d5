//! The profile of one trace as the renderers (text, tkprof layout, JSON,
//! HTML) read it: built once from what the collector gathered.

use serde::Serialize;

use crate::binds::BindSet;
use crate::collect::{Collector, StmtAgg, StmtDetail, BETWEEN, WITHIN};
use crate::plan::Plan;
use crate::stats::{CallTable, ChildTable, Dur, P10};

/// Who wrote the trace, which decides which columns mean something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Engine {
    /// Oracle's own trace (event 10046): every column is real.
    Oracle { banner: Option<String> },
    /// tracelab's client or server trace of PostgreSQL, MariaDB or SQLite:
    /// no disk/query/current block counts, no library cache, no optimizer
    /// goal, no row-source plans (the writer puts 0 there).
    Tracelab { side: String, engine: String },
}

impl Engine {
    /// Whether `p`, `cr`, `cu`, `mis` and `og` were measured.
    pub fn has_block_stats(&self) -> bool {
        matches!(self, Engine::Oracle { .. })
    }

    /// A short description for headers.
    pub fn describe(&self) -> String {
        match self {
            Engine::Oracle { banner: Some(b) } => b.clone(),
            Engine::Oracle { banner: None } => "Oracle extended SQL trace".into(),
            Engine::Tracelab { side, engine } => format!("tracelab {side}-side trace of {engine}"),
        }
    }

    /// Why a column is empty, for engines that do not have it.
    pub fn missing(&self) -> String {
        match self {
            Engine::Oracle { .. } => String::new(),
            Engine::Tracelab { engine, .. } => format!("{engine} has no such figure"),
        }
    }
}

/// One row of the resource profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    /// The row's name: `CPU: EXEC calls` for the CPU of the database calls
    /// of a kind (as the Method R Profiler names it), the wait event's name,
    /// or one of the unaccounted-for and think-time rows.
    pub name: String,
    /// For a CPU row, the database call (`PARSE`, `EXEC`, `FETCH`, ...)
    /// whose CPU at the top depth it adds up; absent for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    pub duration_us: i64,
    pub percent: f64,
    pub calls: u64,
    pub min_us: i64,
    pub max_us: i64,
}

/// A wait event of a statement or of a totals section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitRow {
    pub name: String,
    pub times: u64,
    pub max_us: i64,
    pub total_us: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BindReport {
    /// Executions that had a BINDS block.
    pub executions: u64,
    /// Distinct bind sets (a lower bound when `capped`).
    pub distinct: u64,
    pub capped: bool,
    /// The first sets seen, with their executions.
    pub sets: Vec<BindSet>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Slowest {
    pub elapsed_us: i64,
    /// Line of the EXEC (0 when it began before the trace).
    pub line: u64,
    pub binds: Vec<Option<String>>,
}

/// A recursive statement run inside this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChildRef {
    /// Index into [`FileProfile::statements`].
    pub statement: usize,
    pub calls: u64,
    pub elapsed_us: i64,
    pub cpu_us: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatementReport {
    /// 1 for the statement with the largest share.
    pub rank: usize,
    pub sqlid: String,
    pub sql: String,
    /// No PARSING IN CURSOR for it in the trace: `sql` is mrskew's
    /// `#<cursor>:<file>` placeholder.
    pub placeholder: bool,
    pub dep: Option<i64>,
    pub uid: Option<i64>,
    pub oct: Option<i64>,
    pub hv: Option<i64>,
    pub plan_hash: i64,
    pub optimizer_goal: Option<i64>,
    /// Elapsed time in its calls less that of the recursive calls inside
    /// them: its share of the response time, with no double counting.
    pub self_elapsed_us: i64,
    pub self_cpu_us: i64,
    pub percent_of_r: f64,
    /// Elapsed time in its calls with that of the recursive calls inside
    /// them (as the trace lines give it): TVD$XTAT's ranking figure.
    pub elapsed_with_recursive_us: i64,
    pub cpu_with_recursive_us: i64,
    /// 1 for the statement with the largest `elapsed_with_recursive_us`
    /// among those shown (TVD$XTAT's order).
    pub rank_with_recursive: usize,
    /// The calls as the trace writes them (gross: a parent's figures
    /// include its recursive calls'), shown by `--tkprof --gross`.
    pub with_recursive: CallTable,
    /// The same less the recursive calls made inside them (net): what
    /// tkprof prints, since it lists a recursive statement's figures under
    /// that statement and not under the one that caused it.
    pub without_recursive: CallTable,
    pub waits: Vec<WaitRow>,
    pub plans: Vec<Plan>,
    pub binds: BindReport,
    pub exec_histogram: P10,
    pub fetch_histogram: P10,
    /// Executions: an EXEC and the FETCHes after it.
    pub execution_histogram: P10,
    pub executions: Dur,
    pub slowest: Option<Slowest>,
    pub errors: Vec<String>,
    pub error_count: u64,
    pub first_line: u64,
    pub children: Vec<ChildRef>,
    pub parents: Vec<usize>,
}

/// The statements past the report's `--top`, added up: how much the report
/// leaves out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Folded {
    pub statements: u64,
    pub self_elapsed_us: i64,
    pub self_cpu_us: i64,
    pub calls: u64,
}

/// tkprof's OVERALL TOTALS section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Totals {
    /// The statements' calls net of the recursive calls inside them, as
    /// tkprof adds them up (no time counted twice across the two sections).
    pub calls: CallTable,
    /// The same, gross: as the trace lines give them.
    pub with_recursive: CallTable,
    pub waits: Vec<WaitRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Summary {
    /// PARSING IN CURSOR lines at depth 0 (tkprof's "user SQL statements").
    pub user_statements: u64,
    /// ... and deeper ("internal SQL statements").
    pub internal_statements: u64,
    pub unique_statements: u64,
    pub parse_errors: u64,
    /// STAT lines that could not be read or tied to a statement.
    pub stat_lines_unread: u64,
    /// Whole seconds from the first call's start to the last call's end.
    pub elapsed_seconds: i64,
}

/// Time per profile component in bins over `tim`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct TimelineReport {
    pub bin_us: i64,
    /// Bins with any time: (start tim, [(index into `profile`, µs)]).
    pub bins: Vec<(i64, Vec<(usize, i64)>)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileProfile {
    /// The file as named on the command line.
    pub file: String,
    /// `Trace file` of the header.
    pub trace_name: Option<String>,
    pub engine: Engine,
    pub lines: u64,
    pub calls: u64,
    pub first_tim: Option<i64>,
    pub last_tim: Option<i64>,
    /// The first `***` timestamp: wall clock near the start.
    pub started: Option<String>,
    pub sessions: Vec<String>,
    /// trcsess's process blocks (`*** [ Unix process pid: N ]`).
    pub process_blocks: u64,
    pub thinktime_us: i64,
    /// The response time R: the sum of the profile (for a whole trace, the
    /// time from the first call's start to the last call's end).
    pub response_time_us: i64,
    /// The CPU of the database calls at the top depth: the sum of the
    /// profile's `CPU: ... calls` rows (TVD$XTAT's one `CPU` row).
    pub cpu_us: i64,
    pub profile: Vec<Component>,
    pub statements: Vec<StatementReport>,
    /// The statements past `--top`, added up (shown as one line).
    pub folded: Folded,
    pub non_recursive: Totals,
    pub recursive: Totals,
    pub summary: Summary,
    /// tkprof's "Trace file compatibility".
    pub compatibility: String,
    pub timeline: TimelineReport,
    pub warnings: Vec<String>,
    /// What reading the trace cost, when the report is whole but the
    /// reader should know (standard input held whole in memory): not
    /// trouble with the input, as warnings are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Times the file was read: again for the detail of the statements
    /// shown when it has many, or with its own top depth.
    #[serde(skip)]
    pub readings: usize,
}

impl FileProfile {
    /// Builds the report; `line` translates (offset, line) into the file's
    /// line number.
    pub(crate) fn build(
        file: &str,
        col: Collector,
        lines: u64,
        calls: u64,
        warnings: Vec<String>,
        top: usize,
        line: impl Fn(u64, u64) -> u64,
    ) -> FileProfile {
        let meta = &col.meta;
        let engine = match &meta.tracelab {
            Some((side, engine)) if meta.oracle.is_none() => Engine::Tracelab {
                side: side.clone(),
                engine: engine.clone(),
            },
            _ => Engine::Oracle {
                banner: meta.oracle.clone(),
            },
        };
        let names = &col.names.list;
        // The resource profile, largest first; unaccounted-for rows too.
        let mut profile: Vec<Component> = col
            .comps
            .iter()
            .enumerate()
            .filter(|(_, d)| d.count > 0)
            .map(|(i, d)| Component {
                name: names[i].to_string(),
                call: crate::collect::cpu_row_call(&names[i]).map(str::to_string),
                duration_us: d.total_us,
                percent: 0.0,
                calls: d.count,
                min_us: d.min_us,
                max_us: d.max_us,
            })
            .collect();
        let r: i64 = profile.iter().map(|c| c.duration_us).sum();
        let cpu: i64 = profile
            .iter()
            .filter(|c| c.call.is_some())
            .map(|c| c.duration_us)
            .sum();
        for c in &mut profile {
            c.percent = pct(c.duration_us, r);
        }
        profile.sort_by(|a, b| {
            b.duration_us
                .cmp(&a.duration_us)
                .then_with(|| a.name.cmp(&b.name))
        });
        let comp_index = |id: u32| -> Option<usize> {
            profile.iter().position(|c| *c.name == *names[id as usize])
        };
        let comp_of: Vec<Option<usize>> = (0..names.len() as u32).map(comp_index).collect();
        let timeline = TimelineReport {
            bin_us: col.timeline.width(),
            bins: col
                .timeline
                .bins
                .iter()
                .map(|(k, v)| {
                    let mut parts: Vec<(usize, i64)> = v
                        .iter()
                        .filter_map(|(c, us)| comp_of[*c as usize].map(|i| (i, *us)))
                        .collect();
                    parts.sort_unstable();
                    (k << col.timeline.shift, parts)
                })
                .collect(),
        };
        let Ranking { shown: order, keep } = rank(&col.stmts, top);
        let kept = order.len();
        let mut folded = Folded::default();
        for (s, _) in col.stmts.iter().zip(&keep).filter(|(_, k)| !**k) {
            folded.statements += 1;
            folded.self_elapsed_us += s.own.self_elapsed_us();
            folded.self_cpu_us += s.own.self_cpu_us();
            folded.calls += s.own.calls;
        }
        let mut rank_of = vec![usize::MAX; col.stmts.len()];
        for (r, &i) in order[..kept].iter().enumerate() {
            rank_of[i] = r;
        }
        let wait_rows = |w: &[(u32, Dur, u64)]| -> Vec<WaitRow> {
            let mut w: Vec<&(u32, Dur, u64)> = w.iter().collect();
            w.sort_by_key(|x| (x.2, x.0));
            w.into_iter()
                .map(|(n, d, _)| WaitRow {
                    name: names[*n as usize].to_string(),
                    times: d.count,
                    max_us: d.max_us,
                    total_us: d.total_us,
                })
                .collect()
        };
        // (A statement shown has its detail: the reading kept it for the
        // statements this ranking shows.)
        let none = StmtDetail::default();
        let mut statements: Vec<StatementReport> = order[..kept]
            .iter()
            .enumerate()
            .map(|(rank, &i)| {
                let s = &col.stmts[i];
                debug_assert!(s.detail.is_some(), "statement {i} shown without its detail");
                let d = s.detail.as_deref().unwrap_or(&none);
                let without = net_calls(&d.calls, &d.children);
                let se = s.own.self_elapsed_us();
                StatementReport {
                    rank: rank + 1,
                    sqlid: crate::collect::stmt_key(&d.stmt).into_owned(),
                    sql: d.stmt.sql.clone(),
                    placeholder: d.stmt.placeholder,
                    dep: s.dep.or(s.dep_seen),
                    uid: d.stmt.uid,
                    oct: d.stmt.oct,
                    hv: d.stmt.hv,
                    plan_hash: d.plh,
                    optimizer_goal: d.og,
                    self_elapsed_us: se,
                    self_cpu_us: s.own.self_cpu_us(),
                    percent_of_r: pct(se, r),
                    elapsed_with_recursive_us: s.own.elapsed_us,
                    cpu_with_recursive_us: s.own.cpu_us,
                    rank_with_recursive: 0,
                    with_recursive: d.calls.clone(),
                    without_recursive: without,
                    waits: wait_rows(&d.waits),
                    plans: d.plans.clone(),
                    binds: BindReport {
                        executions: d.binds.executions,
                        distinct: d.binds.distinct.len() as u64,
                        capped: d.binds.saturated,
                        sets: d.binds.sets(),
                    },
                    exec_histogram: d.exec_hist,
                    fetch_histogram: d.fetch_hist,
                    execution_histogram: d.execution_hist,
                    executions: d.executions,
                    slowest: d.slowest.as_ref().map(|x| Slowest {
                        elapsed_us: x.elapsed_us,
                        line: if x.line == 0 {
                            0
                        } else {
                            line(x.offset, x.line)
                        },
                        binds: x.binds.clone(),
                    }),
                    errors: d.errors.clone(),
                    error_count: d.error_count,
                    first_line: line(s.first.0, s.first.1),
                    children: Vec::new(),
                    parents: Vec::new(),
                }
            })
            .collect();
        // TVD$XTAT's ranking: statements shown by their time with their
        // recursive statements'.
        let mut by_gross: Vec<usize> = (0..statements.len())
            .filter(|&i| col.stmts[order[i]].own.calls > 0)
            .collect();
        by_gross.sort_by(|&a, &b| {
            statements[b]
                .elapsed_with_recursive_us
                .cmp(&statements[a].elapsed_with_recursive_us)
                .then_with(|| a.cmp(&b))
        });
        for (n, &i) in by_gross.iter().enumerate() {
            statements[i].rank_with_recursive = n + 1;
        }
        let mut edges: Vec<(&(u32, u32), &crate::collect::EdgeAgg)> = col.edges.iter().collect();
        edges.sort_by_key(|((p, c), _)| (rank_of[*p as usize], rank_of[*c as usize]));
        for ((p, c), e) in edges {
            let (p, c) = (rank_of[*p as usize], rank_of[*c as usize]);
            if p == usize::MAX || c == usize::MAX {
                // A folded statement's recursive calls are in the folded line.
                continue;
            }
            statements[p].children.push(ChildRef {
                statement: c,
                calls: e.calls,
                elapsed_us: e.elapsed_us,
                cpu_us: e.cpu_us,
            });
            if !statements[c].parents.contains(&p) {
                statements[c].parents.push(p);
            }
        }
        // tkprof's overall totals: statements at depth 0, and deeper (added
        // up as the calls came; those whose side was not known then, now).
        let mut sides = col.totals.clone();
        for s in &col.stmts {
            if let Some(u) = &s.unclassed {
                sides[s.final_class()].add(u, None);
            }
        }
        for (side, waits) in sides.iter_mut().zip(&col.side_waits) {
            for (n, (d, at)) in waits.iter().enumerate() {
                if d.count > 0 {
                    crate::collect::merge_wait(&mut side.waits, n as u32, d, *at);
                }
            }
        }
        let [nr, rc] = sides;
        let mut nr_waits: Vec<(u32, Dur, u64)> = col.loose_waits.clone();
        for (n, d, at) in &nr.waits {
            crate::collect::merge_wait(&mut nr_waits, *n, d, *at);
        }
        let non_recursive = Totals {
            calls: net_calls(&nr.calls, &nr.children),
            with_recursive: nr.calls,
            waits: wait_rows(&nr_waits),
        };
        let recursive = Totals {
            calls: net_calls(&rc.calls, &rc.children),
            with_recursive: rc.calls,
            waits: wait_rows(&rc.waits),
        };
        let summary = Summary {
            user_statements: meta.pic_user,
            internal_statements: meta.pic_internal,
            unique_statements: col.stmts.iter().filter(|s| !s.placeholder).count() as u64,
            parse_errors: meta.parse_errors,
            stat_lines_unread: meta.stat_unread,
            elapsed_seconds: match (meta.first_start, meta.last_end) {
                (Some(a), Some(b)) => (b - a) / 1_000_000,
                _ => 0,
            },
        };
        let _ = (WITHIN, BETWEEN);
        FileProfile {
            file: file.to_string(),
            trace_name: meta.trace_name.clone(),
            engine,
            lines,
            calls,
            first_tim: meta.first_start,
            last_tim: meta.last_end,
            started: meta.started.clone(),
            sessions: meta.sessions.clone(),
            process_blocks: meta.process_blocks,
            thinktime_us: col.thinktime_us,
            response_time_us: r,
            cpu_us: cpu,
            profile,
            statements,
            folded,
            non_recursive,
            recursive,
            summary,
            compatibility: if meta.modern { "11.1.0.7" } else { "10.01.00" }.to_string(),
            timeline,
            warnings,
            notes: Vec::new(),
            readings: 1,
        }
    }
}

/// Calls less the recursive calls made inside them.
fn net_calls(calls: &CallTable, children: &ChildTable) -> CallTable {
    CallTable {
        parse: calls.parse.net_of(&children.parse),
        execute: calls.execute.net_of(&children.execute),
        fetch: calls.fetch.net_of(&children.fetch),
        other: calls.other.net_of(&children.other),
    }
}

/// The statements a report shows, in rank order, and whether each (by id)
/// is one of them.
pub(crate) struct Ranking {
    pub shown: Vec<usize>,
    pub keep: Vec<bool>,
}

/// Ranks statements by their own elapsed time (their share of R); with
/// `top` > 0, those past `top` by both rankings (own time, and TVD$XTAT's
/// time with the recursive statements) are only added up: a PL/SQL block
/// whose own time is small but whose recursive statements take most of R
/// stays in the report. Needs only what is kept of every statement, so that
/// a first reading that kept no detail can say which statements a second
/// must keep it of.
pub(crate) fn rank(stmts: &[StmtAgg], top: usize) -> Ranking {
    let mut order: Vec<usize> = (0..stmts.len()).collect();
    // A cursor seen only in WAIT lines has no call to show: it goes
    // last, so that the ranks of the statements shown run 1, 2, 3, ...
    let has_calls = |s: &StmtAgg| s.own.calls > 0;
    order.sort_by(|&a, &b| {
        let (x, y) = (&stmts[a], &stmts[b]);
        has_calls(y)
            .cmp(&has_calls(x))
            .then_with(|| y.own.self_elapsed_us().cmp(&x.own.self_elapsed_us()))
            .then_with(|| x.first.0.cmp(&y.first.0))
    });
    let mut keep = vec![top == 0; stmts.len()];
    if top > 0 {
        for &i in order.iter().take(top) {
            keep[i] = true;
        }
        let mut by_gross: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| has_calls(&stmts[i]))
            .collect();
        by_gross.sort_by(|&a, &b| {
            let (x, y) = (&stmts[a], &stmts[b]);
            y.own
                .elapsed_us
                .cmp(&x.own.elapsed_us)
                .then_with(|| x.first.0.cmp(&y.first.0))
        });
        for &i in by_gross.iter().take(top) {
            keep[i] = true;
        }
    }
    order.retain(|&i| keep[i]);
    Ranking { shown: order, keep }
}

/// `x` as a percentage of `of` (0 when `of` is 0).
pub fn pct(x: i64, of: i64) -> f64 {
    if of == 0 {
        0.0
    } else {
        x as f64 / of as f64 * 100.0
    }
}
