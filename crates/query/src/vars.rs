//! mrskew's expression variables, read off a [`Call`].

use std::borrow::Cow;

use tracelab_expr::{Scope, Value, VarId, Vars};
use tracelab_trace::{format_wall_clock, Call, CallKind};

use crate::question::Units;

/// Every scalar variable an expression may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Var {
    Af,
    Dur,
    E,
    C,
    Ela,
    Nam,
    Call,
    R,
    Dep,
    Depmin,
    Tim,
    Line,
    File,
    Basename,
    Text,
    Sqlid,
    Sql,
    Hv,
    Oct,
    Uid,
    Lid,
    Ad,
    CursorId,
    ParseId,
    ExecId,
    P1,
    P2,
    P3,
    Obj,
    P,
    Cr,
    Cu,
    Mis,
    Og,
    Plh,
    Type,
    Bytes,
    Rlbk,
    RdOnly,
    IslandId,
    Ssqlid,
    Ssql,
    Time0,
    Time1,
}

/// Every variant in declaration order, so that an id indexes it.
pub(crate) const ALL: [Var; 44] = [
    Var::Af,
    Var::Dur,
    Var::E,
    Var::C,
    Var::Ela,
    Var::Nam,
    Var::Call,
    Var::R,
    Var::Dep,
    Var::Depmin,
    Var::Tim,
    Var::Line,
    Var::File,
    Var::Basename,
    Var::Text,
    Var::Sqlid,
    Var::Sql,
    Var::Hv,
    Var::Oct,
    Var::Uid,
    Var::Lid,
    Var::Ad,
    Var::CursorId,
    Var::ParseId,
    Var::ExecId,
    Var::P1,
    Var::P2,
    Var::P3,
    Var::Obj,
    Var::P,
    Var::Cr,
    Var::Cu,
    Var::Mis,
    Var::Og,
    Var::Plh,
    Var::Type,
    Var::Bytes,
    Var::Rlbk,
    Var::RdOnly,
    Var::IslandId,
    Var::Ssqlid,
    Var::Ssql,
    Var::Time0,
    Var::Time1,
];

/// What a variable holds: a scalar, `@bind`, or the session (the one
/// column of the calls table that expressions do not read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Var(Var),
    /// `@bind`: the bind values of the call's execution.
    Bind,
    /// `*** SESSION ID:(SID.SERIAL)` of the trace's header.
    Session,
}

/// The type of a column of the calls table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// 64-bit integers (times in whole microseconds of the trace's units).
    Int,
    Text,
    /// Microseconds since the epoch, UTC.
    Timestamp,
    /// A list of texts.
    TextList,
}

/// A variable's column in the calls table (`tracelab calls`), or why it
/// has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Of {
        name: &'static str,
        ty: ColumnType,
        /// Whether a row may have no value (the variable is undefined
        /// for some calls: `$e` of a WAIT, `$dep` of a line without it).
        nullable: bool,
    },
    None {
        why: &'static str,
    },
}

/// One variable: its names in expressions (mrskew's first, then its
/// synonyms; none for the session) and its column.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    pub names: &'static [&'static str],
    pub field: Field,
    pub column: Column,
}

const fn of(
    names: &'static [&'static str],
    var: Var,
    name: &'static str,
    ty: ColumnType,
    nullable: bool,
) -> Variable {
    Variable {
        names,
        field: Field::Var(var),
        column: Column::Of { name, ty, nullable },
    }
}

const fn int(names: &'static [&'static str], var: Var, nullable: bool) -> Variable {
    of(names, var, names[0], ColumnType::Int, nullable)
}

const fn none(names: &'static [&'static str], var: Var, why: &'static str) -> Variable {
    Variable {
        names,
        field: Field::Var(var),
        column: Column::None { why },
    }
}

/// Every variable of a call, the one list: expressions look names up in
/// it, and the calls table has one column for each that has one, in this
/// order.
pub const VARIABLES: &[Variable] = {
    use ColumnType::{Text, Timestamp};
    &[
        of(&["file"], Var::File, "file", Text, false),
        of(&["basename", "base"], Var::Basename, "basename", Text, false),
        int(&["line"], Var::Line, false),
        Variable {
            names: &[],
            field: Field::Session,
            column: Column::Of {
                name: "session",
                ty: Text,
                nullable: true,
            },
        },
        of(&["call"], Var::Call, "call", Text, false),
        of(&["nam", "name"], Var::Nam, "name", Text, false),
        int(&["dep"], Var::Dep, true),
        int(&["depmin"], Var::Depmin, false),
        of(&["cursor_id", "cursor"], Var::CursorId, "cursor", Text, true),
        of(&["sqlid"], Var::Sqlid, "sqlid", Text, true),
        int(&["hv"], Var::Hv, true),
        int(&["oct"], Var::Oct, true),
        int(&["uid"], Var::Uid, true),
        int(&["lid"], Var::Lid, true),
        int(&["parse_id"], Var::ParseId, false),
        int(&["exec_id"], Var::ExecId, false),
        int(&["island_id", "experience_id"], Var::IslandId, false),
        int(&["af"], Var::Af, false),
        int(&["dur"], Var::Dur, false),
        int(&["e"], Var::E, true),
        int(&["c"], Var::C, true),
        int(&["ela"], Var::Ela, true),
        int(&["tim"], Var::Tim, true),
        of(&["time0"], Var::Time0, "start_time", Timestamp, true),
        of(&["time1"], Var::Time1, "end_time", Timestamp, true),
        int(&["r", "row", "rows"], Var::R, true),
        int(&["p"], Var::P, true),
        int(&["cr"], Var::Cr, true),
        int(&["cu"], Var::Cu, true),
        int(&["mis"], Var::Mis, true),
        int(&["og"], Var::Og, true),
        int(&["plh"], Var::Plh, true),
        int(&["type"], Var::Type, true),
        int(&["bytes"], Var::Bytes, true),
        int(&["rlbk"], Var::Rlbk, true),
        int(&["rd_only"], Var::RdOnly, true),
        int(&["p1"], Var::P1, true),
        int(&["p2"], Var::P2, true),
        int(&["p3"], Var::P3, true),
        int(&["obj"], Var::Obj, true),
        Variable {
            names: &["bind"],
            field: Field::Bind,
            column: Column::Of {
                name: "binds",
                ty: ColumnType::TextList,
                nullable: true,
            },
        },
        none(
            &["text"],
            Var::Text,
            "the call's trace line as written: its fields are the other columns",
        ),
        none(
            &["sql"],
            Var::Sql,
            "the statement's text: once per statement in the statements table, joined by sqlid",
        ),
        none(
            &["ad"],
            Var::Ad,
            "the statement's address in the shared pool: sqlid and hv name the statement",
        ),
        none(
            &["ssqlid"],
            Var::Ssqlid,
            "computed from the statement's text (its literals made binds), which the statements table holds",
        ),
        none(
            &["ssql"],
            Var::Ssql,
            "computed from the statement's text (its literals made binds), which the statements table holds",
        ),
    ]
};

/// The only array: `@bind`.
pub const BIND: VarId = VarId(u16::MAX);

/// Compile-time scope of mrskew variables.
pub struct MrskewScope;

impl Scope for MrskewScope {
    fn scalar(&self, name: &str) -> Option<VarId> {
        VARIABLES.iter().find_map(|v| match v.field {
            Field::Var(var) if v.names.contains(&name) => Some(VarId(var as u16)),
            _ => None,
        })
    }
    fn array(&self, name: &str) -> Option<VarId> {
        VARIABLES
            .iter()
            .any(|v| v.field == Field::Bind && v.names.contains(&name))
            .then_some(BIND)
    }
}

impl Var {
    pub fn from_id(id: VarId) -> Option<Var> {
        ALL.get(id.0 as usize).copied()
    }
}

/// One call as expressions see it.
pub struct CallVars<'a, 'c> {
    pub call: &'a Call<'c>,
    /// `$basename`: the trace's name as Oracle wrote it.
    pub basename: &'a str,
    /// `$file`: the file as named on the command line.
    pub file: &'a str,
    pub conv: &'a Conversions,
}

/// One time field's unit: seconds per unit, and microseconds per unit when
/// that is a whole number (then durations stay exact integers).
#[derive(Debug, Clone, Copy)]
pub struct Conv {
    secs: f64,
    us: Option<i64>,
}

impl Conv {
    fn new(secs: f64) -> Conv {
        let k = secs * 1e6;
        let whole = (k - k.round()).abs() <= 1e-9 * k.abs().max(1.0) && k.round() >= 1.0;
        Conv {
            secs,
            us: whole.then(|| k.round() as i64),
        }
    }

    /// Raw units to seconds the way mrskew does it: × 1e-6, not ÷ 1e6
    /// (the two differ in the last bit of some doubles, which decides
    /// bucket edges and sprintf's rounding).
    #[inline]
    pub fn secs(&self, raw: i64) -> f64 {
        raw as f64 * self.secs
    }

    /// Raw units to whole microseconds, if the unit allows.
    #[inline]
    pub fn us(&self, raw: i64) -> Option<i64> {
        self.us.and_then(|k| raw.checked_mul(k))
    }

    /// Microseconds per unit.
    pub fn us_per_unit(&self) -> f64 {
        self.secs * 1e6
    }
}

/// The conversions of `--timunit`, `--cpuunit` and `--trcunit`.
#[derive(Debug, Clone, Copy)]
pub struct Conversions {
    pub tim: Conv,
    pub cpu: Conv,
    pub elapsed: Conv,
}

impl Conversions {
    pub fn new(u: &Units) -> Conversions {
        Conversions {
            tim: Conv::new(u.tim),
            cpu: Conv::new(u.cpu),
            elapsed: Conv::new(u.elapsed),
        }
    }

    /// The unit of a call's accounted-for duration (`$af`).
    #[inline]
    pub fn af(&self, kind: CallKind) -> &Conv {
        match kind {
            CallKind::Wait | CallKind::Unaccounted | CallKind::Line => &self.elapsed,
            _ => &self.cpu,
        }
    }
}

impl Default for Conversions {
    fn default() -> Self {
        Conversions::new(&Units::default())
    }
}

fn num(v: Option<i64>) -> Value<'static> {
    v.map_or(Value::Undef, |n| Value::Num(n as f64))
}

fn str_val(s: &str) -> Value<'_> {
    Value::Str(Cow::Borrowed(s))
}

impl CallVars<'_, '_> {
    pub fn var(&self, v: Var) -> Value<'_> {
        let c = self.call;
        let is_wait = c.kind == CallKind::Wait;
        let is_line = c.kind == CallKind::Line;
        let db = c.kind.is_dbcall();
        let conv = self.conv;
        let ela = &conv.elapsed;
        match v {
            Var::Af if is_line => Value::Undef,
            Var::Af => Value::Num(conv.af(c.kind).secs(c.af_us())),
            Var::Dur if is_line => Value::Undef,
            Var::Dur => Value::Num(ela.secs(c.dur_us())),
            Var::E => {
                c.db.e
                    .filter(|_| db)
                    .map_or(Value::Undef, |e| Value::Num(ela.secs(e)))
            }
            Var::C => {
                c.db.c
                    .filter(|_| db)
                    .map_or(Value::Undef, |e| Value::Num(conv.cpu.secs(e)))
            }
            Var::Ela if is_wait => Value::Num(ela.secs(c.wait.ela)),
            Var::Ela => Value::Undef,
            Var::Nam => str_val(c.name),
            Var::Call => str_val(match c.kind {
                CallKind::Wait => "WAIT",
                CallKind::Line => "",
                _ => c.name,
            }),
            Var::R => num(c.db.r),
            Var::Dep => num(c.dep),
            Var::Depmin => Value::Num(c.depmin as f64),
            Var::Tim => c
                .tim_us()
                .map_or(Value::Undef, |t| Value::Num(conv.tim.secs(t))),
            Var::Line => Value::Num(c.line as f64),
            Var::File => str_val(self.file),
            Var::Basename => str_val(self.basename),
            Var::Text => Value::Str(String::from_utf8_lossy(c.text)),
            Var::Sqlid => str_val(&c.stmt.sqlid),
            Var::Sql => str_val(&c.stmt.sql),
            Var::Hv => num(c.stmt.hv),
            Var::Oct => num(c.stmt.oct),
            Var::Uid => num(c.stmt.uid),
            Var::Lid => num(c.stmt.lid),
            Var::Ad => str_val(&c.stmt.ad),
            Var::CursorId => Value::Str(String::from_utf8_lossy(c.cursor)),
            Var::ParseId => Value::Num(c.parse_id as f64),
            Var::ExecId => Value::Num(c.exec_id as f64),
            Var::P1 => c.wait.p(1).map_or(Value::Undef, str_val),
            Var::P2 => c.wait.p(2).map_or(Value::Undef, str_val),
            Var::P3 => c.wait.p(3).map_or(Value::Undef, str_val),
            Var::Obj => num(c.wait.obj),
            Var::P => num(c.db.p),
            Var::Cr => num(c.db.cr),
            Var::Cu => num(c.db.cu),
            Var::Mis => num(c.db.mis),
            Var::Og => num(c.db.og),
            Var::Plh => num(c.db.plh),
            Var::Type => num(c.db.typ),
            Var::Bytes => num(c.db.bytes),
            Var::Rlbk => num(c.db.rlbk),
            Var::RdOnly => num(c.db.rd_only),
            Var::IslandId => Value::Num(c.island_id as f64),
            Var::Ssqlid => str_val(&c.stmt.shareable().sqlid),
            Var::Ssql => str_val(&c.stmt.shareable().sql),
            Var::Time0 | Var::Time1 if is_line => Value::Undef,
            Var::Time1 => self.wall(0).map_or(Value::Undef, Value::Str),
            Var::Time0 => self.wall(c.dur_us()).map_or(Value::Undef, Value::Str),
        }
    }

    /// `$time1` (`back` = 0) or `$time0` (`back` = the call's duration):
    /// the wall clock `back` elapsed units before the call's `tim`.
    fn wall(&self, back: i64) -> Option<Cow<'static, str>> {
        let c = self.call;
        let tim = c.tim_us()?;
        let end = c.wall_us(tim, self.conv.tim.us_per_unit())?;
        let back_us = (back as f64 * self.conv.elapsed.us_per_unit()).round() as i64;
        Some(Cow::Owned(format_wall_clock(end.saturating_sub(back_us))))
    }
}

impl Vars for CallVars<'_, '_> {
    fn scalar(&self, id: VarId) -> Value<'_> {
        Var::from_id(id).map_or(Value::Undef, |v| self.var(v))
    }

    fn array(&self, id: VarId) -> Vec<Value<'_>> {
        if id != BIND {
            return Vec::new();
        }
        self.call
            .binds
            .iter()
            .map(|b| b.as_deref().map_or(Value::Undef, str_val))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_listed_once_with_its_column_or_why_not() {
        for (i, var) in ALL.iter().enumerate() {
            assert_eq!(*var as usize, i, "ALL is in declaration order");
            let listed: Vec<&Variable> = VARIABLES
                .iter()
                .filter(|v| v.field == Field::Var(*var))
                .collect();
            assert_eq!(listed.len(), 1, "{var:?} listed once");
            match listed[0].column {
                Column::Of { name, .. } => assert!(!name.is_empty(), "{var:?}"),
                Column::None { why } => assert!(why.len() > 20, "{var:?}: say why"),
            }
            assert!(!listed[0].names.is_empty(), "{var:?} has a name");
        }
        // Names and column names are unique.
        let mut names: Vec<&str> = VARIABLES
            .iter()
            .flat_map(|v| v.names.iter().copied())
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "a name names one variable");
        let mut cols: Vec<&str> = VARIABLES
            .iter()
            .filter_map(|v| match v.column {
                Column::Of { name, .. } => Some(name),
                Column::None { .. } => None,
            })
            .collect();
        let n = cols.len();
        cols.sort();
        cols.dedup();
        assert_eq!(cols.len(), n, "a column holds one variable");
    }

    #[test]
    fn expressions_know_every_name_and_synonym() {
        let s = MrskewScope;
        assert_eq!(s.scalar("nam"), s.scalar("name"));
        assert_eq!(s.scalar("r"), s.scalar("rows"));
        assert_eq!(s.scalar("experience_id"), Some(VarId(Var::IslandId as u16)));
        assert_eq!(s.scalar("time1"), Some(VarId(Var::Time1 as u16)));
        assert_eq!(s.scalar("session"), None, "a column, not a variable");
        assert_eq!(s.scalar("bind"), None);
        assert_eq!(s.array("bind"), Some(BIND));
    }
}
