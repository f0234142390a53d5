//! Statements run inside the client's statement (PL/pgSQL's, through
//! SPI) as `dep=1` calls (`dep=2` a level further): PostgreSQL's executor
//! hooks, which the server exports as variables (`ExecutorRun_hook`,
//! `ExecutorFinish_hook`, `ProcessUtility_hook`), set by the library when
//! a traced session begins, each chaining the value it found (an
//! extension's, or none: the `standard_` function).
//!
//! The nesting level is counted as pg_stat_statements counts it: up
//! around each ExecutorRun, ExecutorFinish and ProcessUtility; an
//! ExecutorRun entered at level 1 or more is a statement inside another
//! (the client's `SELECT f()` runs at level 0, `CALL p()` is a utility at
//! level 0, the procedure's statements run at level 1; the client's
//! `FETCH` or `MOVE`, a utility too, does not raise the level: its
//! cursor's query is the client's call). An error unwinds
//! the server's stack past the hooks (a longjmp), so the level is set
//! back to 0 when the backend next reads from its client, idle between
//! statements.
//!
//! What the library reads of the server's structures is one field: the
//! statement's text, `QueryDesc.sourceText`, the third member of
//! `struct QueryDesc` (after `CmdType operation`, an enum, and
//! `PlannedStmt *plannedstmt`): offset 16 on a 64-bit server, the same
//! from PostgreSQL 14 to 18. The hooks' types differ by version:
//! `ExecutorRun_hook` takes `(QueryDesc *, ScanDirection, uint64 count,
//! bool execute_once)` on 14-17 and drops `execute_once` on 18;
//! `ProcessUtility_hook` takes eight arguments from 14 on (14 added
//! `bool readOnlyTree`); `ExecutorFinish_hook` takes the `QueryDesc *`
//! alone. Checked against each version's `executor/execdesc.h`,
//! `executor/executor.h` and `tcop/utility.h`, and run on builds of 14,
//! 15, 16, 17 and 18 (crates/tracelab/tests/server_trace.rs,
//! `every_supported_postgres_version_is_traced`).
//! The hooks are installed only on a server whose data directory (the
//! backend's working directory) says one of those versions in
//! `PG_VERSION`: a later version's types are unknown until checked, and
//! there statements inside functions stay inside the calling statement's
//! EXEC.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::Relaxed};

use crate::{dlsym, enter, session, RTLD_DEFAULT};

/// `sourceText`'s offset in `struct QueryDesc` (see the module's doc).
const SOURCE_TEXT: usize = 16;

/// `ExecutorRun_hook_type` of PostgreSQL 14-17, and of 18 (no
/// `execute_once`).
type RunHook = unsafe extern "C" fn(*mut c_void, c_int, u64, bool);
type RunHook18 = unsafe extern "C" fn(*mut c_void, c_int, u64);
type FinishHook = unsafe extern "C" fn(*mut c_void);
type UtilityHook = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    bool,
    c_int,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_void,
);

/// The hooks' previous values (or the standard functions), as addresses.
static RUN: AtomicUsize = AtomicUsize::new(0);
static FINISH: AtomicUsize = AtomicUsize::new(0);
static UTILITY: AtomicUsize = AtomicUsize::new(0);
static LEVEL: AtomicI32 = AtomicI32::new(0);

/// `LEVEL` up or down by `by`: a load and a store, not an atomic add
/// (a locked instruction, four a query in the hooks of a client's
/// statement; perf put them at ~0.3 % of the machine's time at
/// saturation): only the backend's one thread runs its executor.
#[inline]
fn level_add(by: i32) -> i32 {
    let level = LEVEL.load(Relaxed);
    LEVEL.store(level + by, Relaxed);
    level
}

/// The major versions whose hook types and `QueryDesc` are known (the
/// module's doc), from the data directory's `PG_VERSION`.
fn known_version(pg_version: &str) -> Option<u32> {
    pg_version
        .trim()
        .parse()
        .ok()
        .filter(|v| (14..=18).contains(v))
}

/// Sets the hooks, once per process, on a server whose layout is known.
pub fn install() {
    if RUN.load(Relaxed) != 0 {
        return;
    }
    let version = std::fs::read_to_string("PG_VERSION").unwrap_or_default();
    let Some(version) = known_version(&version) else {
        return;
    };
    // SAFETY: the variables and functions are looked up by name and have
    // the types of the version's headers (the module's doc); a hook
    // variable holds a function pointer or NULL.
    unsafe {
        let sym = |n: &CStr| dlsym(RTLD_DEFAULT, n.as_ptr());
        let vars = [
            sym(c"ExecutorRun_hook"),
            sym(c"ExecutorFinish_hook"),
            sym(c"ProcessUtility_hook"),
        ];
        let std = [
            sym(c"standard_ExecutorRun"),
            sym(c"standard_ExecutorFinish"),
            sym(c"standard_ProcessUtility"),
        ];
        if vars.iter().chain(&std).any(|p| p.is_null()) {
            return;
        }
        let ours = [
            if version >= 18 {
                run18 as *const () as usize
            } else {
                run as *const () as usize
            },
            finish as *const () as usize,
            utility as *const () as usize,
        ];
        for (i, slot) in [&RUN, &FINISH, &UTILITY].into_iter().enumerate() {
            let var = vars[i] as *mut usize;
            let before = *var;
            slot.store(if before == 0 { std[i] as usize } else { before }, Relaxed);
            *var = ours[i];
        }
    }
}

/// The backend is idle, between the client's statements.
pub fn idle() {
    LEVEL.store(0, Relaxed);
}

/// A statement's text.
///
/// # Safety
/// `qd` is the server's `QueryDesc *`.
unsafe fn source_text(qd: *mut c_void) -> Option<String> {
    let p = *(qd.cast::<u8>().add(SOURCE_TEXT) as *const *const c_char);
    (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// The start of a statement inside another, at nesting level `dep`.
fn nested_start(dep: i32, qd: *mut c_void) -> Option<(u64, i64, session::At)> {
    let g = enter()?;
    let t = g.0.synced()?;
    if !t.tracer.started() {
        return None;
    }
    // SAFETY: the server's QueryDesc, handed to its hook.
    let sql = unsafe { source_text(qd) }?;
    let at = t.at();
    let cursor = t.tracer.nested_begin(&sql, dep as i64, at);
    Some((cursor, dep as i64, at))
}

fn nested_end(cursor: u64, dep: i64, start: session::At) {
    let Some(g) = enter() else { return };
    let Some(t) = g.0.synced() else { return };
    let at = t.at();
    t.tracer.nested_end(cursor, dep, start, at);
}

/// Around an ExecutorRun: the level up, and a statement inside another
/// timed.
#[inline(always)]
fn around_run(qd: *mut c_void, standard: impl FnOnce()) {
    let level = level_add(1);
    let started = if level >= 1 {
        nested_start(level, qd)
    } else {
        None
    };
    standard();
    level_add(-1);
    if let Some((cursor, dep, start)) = started {
        nested_end(cursor, dep, start);
    }
}

/// `ExecutorRun_hook` of PostgreSQL 14-17.
unsafe extern "C" fn run(qd: *mut c_void, dir: c_int, count: u64, once: bool) {
    let f: RunHook = std::mem::transmute::<usize, RunHook>(RUN.load(Relaxed));
    around_run(qd, || f(qd, dir, count, once));
}

/// `ExecutorRun_hook` of PostgreSQL 18.
unsafe extern "C" fn run18(qd: *mut c_void, dir: c_int, count: u64) {
    let f: RunHook18 = std::mem::transmute::<usize, RunHook18>(RUN.load(Relaxed));
    around_run(qd, || f(qd, dir, count));
}

unsafe extern "C" fn finish(qd: *mut c_void) {
    level_add(1);
    let f: FinishHook = std::mem::transmute::<usize, FinishHook>(FINISH.load(Relaxed));
    f(qd);
    level_add(-1);
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn utility(
    stmt: *mut c_void,
    text: *const c_char,
    read_only: bool,
    context: c_int,
    params: *mut c_void,
    env: *mut c_void,
    dest: *mut c_void,
    qc: *mut c_void,
) {
    // A FETCH or MOVE of the client's runs its cursor's query one level
    // down: that is the client's call, not a statement inside it.
    let rise = !(LEVEL.load(Relaxed) == 0 && !text.is_null() && fetch(CStr::from_ptr(text)));
    if rise {
        level_add(1);
    }
    let f: UtilityHook = std::mem::transmute::<usize, UtilityHook>(UTILITY.load(Relaxed));
    f(stmt, text, read_only, context, params, env, dest, qc);
    if rise {
        level_add(-1);
    }
}

/// Whether a statement's text is a FETCH or a MOVE.
fn fetch(text: &CStr) -> bool {
    let b = text.to_bytes();
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let word = &b[start..];
    let is = |w: &[u8]| {
        word.len() >= w.len()
            && word[..w.len()].eq_ignore_ascii_case(w)
            && word.get(w.len()).is_none_or(|c| !c.is_ascii_alphanumeric())
    };
    is(b"fetch") || is(b"move")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_only_on_the_versions_whose_types_are_known() {
        assert_eq!(known_version("15\n"), Some(15));
        assert_eq!(known_version("14"), Some(14));
        assert_eq!(known_version("18\n"), Some(18));
        for v in ["13\n", "19\n", "9.6\n", "", "x"] {
            assert_eq!(known_version(v), None, "{v:?}");
        }
    }

    #[test]
    fn the_clients_fetch_and_move_are_told_apart() {
        for t in [
            c"FETCH 100 FROM c",
            c"  fetch next in c",
            c"move\tc",
            c"MOVE",
        ] {
            assert!(fetch(t), "{t:?}");
        }
        for t in [c"call p()", c"fetchx", c"select 'fetch'", c"", c"removed"] {
            assert!(!fetch(t), "{t:?}");
        }
    }
}
