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
const ALL: [Var; 44] = [
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

/// Name → variable; several names are synonyms, as in mrskew.
const SCALARS: &[(&str, Var)] = &[
    ("af", Var::Af),
    ("dur", Var::Dur),
    ("e", Var::E),
    ("c", Var::C),
    ("ela", Var::Ela),
    ("nam", Var::Nam),
    ("name", Var::Nam),
    ("call", Var::Call),
    ("r", Var::R),
    ("row", Var::R),
    ("rows", Var::R),
    ("dep", Var::Dep),
    ("depmin", Var::Depmin),
    ("tim", Var::Tim),
    ("line", Var::Line),
    ("file", Var::File),
    ("basename", Var::Basename),
    ("base", Var::Basename),
    ("text", Var::Text),
    ("sqlid", Var::Sqlid),
    ("sql", Var::Sql),
    ("hv", Var::Hv),
    ("oct", Var::Oct),
    ("uid", Var::Uid),
    ("lid", Var::Lid),
    ("ad", Var::Ad),
    ("cursor_id", Var::CursorId),
    ("cursor", Var::CursorId),
    ("parse_id", Var::ParseId),
    ("exec_id", Var::ExecId),
    ("p1", Var::P1),
    ("p2", Var::P2),
    ("p3", Var::P3),
    ("obj", Var::Obj),
    ("p", Var::P),
    ("cr", Var::Cr),
    ("cu", Var::Cu),
    ("mis", Var::Mis),
    ("og", Var::Og),
    ("plh", Var::Plh),
    ("type", Var::Type),
    ("bytes", Var::Bytes),
    ("rlbk", Var::Rlbk),
    ("rd_only", Var::RdOnly),
    ("island_id", Var::IslandId),
    ("experience_id", Var::IslandId),
    ("ssqlid", Var::Ssqlid),
    ("ssql", Var::Ssql),
    ("time0", Var::Time0),
    ("time1", Var::Time1),
];

/// The only array: `@bind`.
pub const BIND: VarId = VarId(u16::MAX);

/// Compile-time scope of mrskew variables.
pub struct MrskewScope;

impl Scope for MrskewScope {
    fn scalar(&self, name: &str) -> Option<VarId> {
        SCALARS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| VarId(*v as u16))
    }
    fn array(&self, name: &str) -> Option<VarId> {
        (name == "bind").then_some(BIND)
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
