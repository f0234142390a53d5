//! Profiles of a run's traces (the client's, a proxy's server-side ones,
//! and the server tracer's from inside PostgreSQL) by call name, through
//! the skew engine: as measurements (`trace_NAME_s`, `trace_NAME_calls`,
//! ...), and as rows kept in the store from which the report prints
//! mrskew's table for each cell.

use std::collections::BTreeMap;
use std::path::Path;

use tracelab_query::{Layout, Profiling, Question};

use crate::model::profiles::measurement_name;
use crate::store::ProfileRow;

/// The trace files of a directory, in name order.
fn trace_files(dir: &Path) -> Result<Vec<String>, String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".trc"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no trace files", dir.display()));
    }
    Ok(files)
}

/// The profile by call name of every trace in `dir`, of the calls `where`
/// passes (`1`: all), as `tracelab skew --where=... --top=0` computes it
/// (mrskew's accounted-for time: a call's CPU and every wait).
pub fn of_dir(dir: &Path, filter: &str) -> Result<Vec<ProfileRow>, String> {
    of_files(&trace_files(dir)?, filter, ".+")
}

/// The profile by call name of `files`, of the calls `filter` passes and
/// whose name `name` matches (skew's `--name`: a regex, or `:dbcall`).
pub fn of_files(files: &[String], filter: &str, name: &str) -> Result<Vec<ProfileRow>, String> {
    let opts = Profiling {
        question: Question {
            where0: filter.to_string(),
            name: name.to_string(),
            ..Question::default()
        },
        layout: Layout {
            top: 0,
            ..Layout::default()
        },
        jobs: 1,
        ..Profiling::default()
    };
    let out = tracelab_query::profile(&opts, files, None).map_err(|e| e.to_string())?;
    Ok(out
        .report
        .rows
        .iter()
        .filter_map(|r| {
            r.stats.map(|s| ProfileRow {
                source: String::new(),
                name: r.label.clone(),
                duration: s.duration,
                calls: s.calls,
                min: s.min,
                max: s.max,
            })
        })
        .collect())
}

/// Rows marked as coming from `source`'s traces.
pub fn tagged(rows: Vec<ProfileRow>, source: &str) -> Vec<ProfileRow> {
    rows.into_iter()
        .map(|r| ProfileRow {
            source: source.to_string(),
            ..r
        })
        .collect()
}

/// The rows as measurements: `{prefix}NAME_s`, `{prefix}NAME_calls` and
/// `{prefix}total_s`.
pub fn measurements(rows: &[ProfileRow], prefix: &str) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for r in rows {
        let name = measurement_name(&r.name);
        m.insert(format!("{prefix}{name}_s"), r.duration);
        m.insert(format!("{prefix}{name}_calls"), r.calls as f64);
    }
    if !rows.is_empty() {
        m.insert(
            format!("{prefix}total_s"),
            rows.iter().map(|r| r.duration).sum(),
        );
    }
    m
}

/// The server tracer's profile as measurements: `server_trace_NAME_s` and
/// `_calls` per call or wait name (`rows`, mrskew's default profile, where
/// a database call's row is its own CPU), and the time accounting of the
/// backends: `server_trace_cpu_s`, the database calls' rows (`db`: the
/// profile of the database calls alone, which names them);
/// `server_trace_idle_s`, the wait for the client between calls
/// (`Client:ClientRead`, told from the other waits by the rule skew and
/// prof take think time by, `tracelab_trace::is_client_wait`: the round
/// trips and the client's think time); `server_trace_waits_s`, every other
/// wait; and `server_trace_total_s`, their sum. `exit` (seconds) is the
/// backends' last waits for their client, after their last calls (see
/// [`exit_wait_s`]): kept out of the idle time and the total, as
/// `server_trace_exit_s`.
pub fn server_sums(rows: &[ProfileRow], db: &[ProfileRow], exit: f64) -> BTreeMap<String, f64> {
    let mut m = measurements(rows, "server_trace_");
    let is_db = |r: &ProfileRow| db.iter().any(|d| d.name == r.name);
    let is_idle = |r: &ProfileRow| tracelab_trace::is_client_wait(r.name.as_bytes());
    let sum = |f: &dyn Fn(&ProfileRow) -> bool| -> f64 {
        rows.iter().filter(|r| f(r)).map(|r| r.duration).sum()
    };
    let cpu = sum(&is_db);
    let idle = (sum(&|r| !is_db(r) && is_idle(r)) - exit).max(0.0);
    let waits = sum(&|r| !is_db(r) && !is_idle(r));
    m.insert("server_trace_cpu_s".into(), cpu);
    m.insert("server_trace_waits_s".into(), waits);
    m.insert("server_trace_idle_s".into(), idle);
    m.insert("server_trace_total_s".into(), cpu + waits + idle);
    m.insert("server_trace_exit_s".into(), exit);
    m
}

/// The last wait of a backend's trace when it is a wait for its client
/// after the last call, in seconds (else 0): the session waiting to close,
/// not a round trip (a study run's sessions pause at their exit while
/// their CPU is read, 100 ms or more).
pub fn exit_wait_s(file: &str) -> Result<f64, String> {
    use tracelab_trace::{CallKind, ReadOptions, Reader, Source};
    let f = tracelab_trace::open(&Source::Path(file.into())).map_err(|e| format!("{file}: {e}"))?;
    let mut last: Option<i64> = None;
    Reader::new(ReadOptions::default())
        .read(f, |c| {
            if c.kind == CallKind::Wait {
                last = tracelab_trace::is_client_wait(c.name.as_bytes()).then_some(c.wait.ela);
            } else if c.kind.is_dbcall() {
                last = None;
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(last.unwrap_or(0) as f64 / 1e6)
}

/// Bytes of the files in `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Moves a run's trace directory to `keep` (kept traces), or removes it.
pub fn keep_or_remove(dir: &Path, keep: Option<&Path>, notes: &mut Vec<String>) {
    match keep {
        Some(to) => {
            let moved = to
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::rename(dir, to));
            if let Err(e) = moved {
                notes.push(format!("traces not kept in {}: {e}", to.display()));
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        None => {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server trace by hand: a PARSE and an EXEC (100 and 300 µs of
    /// CPU), the commit's waits (IO:WALSync 500 µs, LWLock:WALWrite 100
    /// µs), an XCTEND, and two waits for the client (a 2 ms round trip,
    /// 3 s of think time).
    const TRACE: &str = "\
PARSING IN CURSOR #1 len=8 dep=0 uid=0 oct=2 lid=0 tim=1000 hv=1 ad='0' sqlid='a'
insert 1
END OF STMT
PARSE #1:c=100,e=200,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1200
WAIT #1: nam='IO:WALSync' ela= 500 file#=0 tim=1800
WAIT #1: nam='LWLock:WALWrite' ela= 100 tim=1900
EXEC #1:c=300,e=900,p=0,cr=0,cu=0,mis=0,r=1,dep=0,og=1,plh=0,tim=2100
WAIT #0: nam='Client:ClientRead' ela= 2000 tim=4200
WAIT #0: nam='Client:ClientRead' ela= 3000000 tim=3004200
XCTEND rlbk=0, rd_only=0, tim=3004300
";

    #[test]
    fn a_server_traces_time_is_cpu_waits_and_idle() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tracelab_server_1.trc");
        std::fs::write(&f, TRACE).unwrap();
        let files = vec![f.to_string_lossy().into_owned()];
        let all = of_files(&files, "1", ".+").unwrap();
        let db = of_files(&files, "1", ":dbcall").unwrap();
        let exit = exit_wait_s(&files[0]).unwrap();
        // The 3 s wait comes before the XCTEND: not the exit's.
        assert_eq!(exit, 0.0);
        let m = server_sums(&all, &db, exit);
        let near = |k: &str, v: f64| {
            assert!((m[k] - v).abs() < 1e-9, "{k} = {} not {v}: {m:?}", m[k]);
        };
        near("server_trace_cpu_s", 0.000400);
        near("server_trace_waits_s", 0.000600);
        near("server_trace_idle_s", 3.002);
        near("server_trace_total_s", 3.003);
        near("server_trace_io_walsync_s", 0.000500);
        near("server_trace_io_walsync_calls", 1.0);
        near("server_trace_client_clientread_calls", 2.0);
        near("server_trace_exec_s", 0.000300);

        // Ending on a wait for the client: the session's exit, out of the
        // idle time and the total.
        std::fs::write(
            &f,
            format!("{TRACE}WAIT #0: nam='Client:ClientRead' ela= 150000 tim=3154300\n"),
        )
        .unwrap();
        let exit = exit_wait_s(&files[0]).unwrap();
        assert!((exit - 0.15).abs() < 1e-9, "{exit}");
        let all = of_files(&files, "1", ".+").unwrap();
        let m = server_sums(&all, &db, exit);
        assert!((m["server_trace_idle_s"] - 3.002).abs() < 1e-9, "{m:?}");
        assert!((m["server_trace_total_s"] - 3.003).abs() < 1e-9, "{m:?}");
        assert!((m["server_trace_exit_s"] - 0.15).abs() < 1e-9, "{m:?}");
    }
}
