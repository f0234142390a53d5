//! A mock host for the tests: the variable names of mrskew's expression
//! language (`$af`, `$e`, `$c`, `$nam`, `$sqlid`, ... as mrskew's manual
//! names them) and a record to evaluate against.

#![allow(dead_code)]

use std::borrow::Cow;
use std::collections::HashMap;

use tracelab_expr::{Program, Scope, Value, VarId, Vars};

/// Scalar names offered by the mock host.
pub const SCALARS: &[&str] = &[
    "af",
    "dur",
    "e",
    "c",
    "ela",
    "nam",
    "name",
    "call",
    "r",
    "row",
    "dep",
    "depmin",
    "tim",
    "line",
    "file",
    "basename",
    "base",
    "text",
    "sqlid",
    "sql",
    "hv",
    "oct",
    "uid",
    "cursor_id",
    "parse_id",
    "exec_id",
    "p1",
    "p2",
    "p3",
    "obj",
    "cr",
    "cu",
    "mis",
    "og",
    "plh",
    "island_id",
    "experience_id",
    "ssqlid",
    "ssql",
    "time0",
    "time1",
    "p",
    "lid",
];

/// Array names offered by the mock host.
pub const ARRAYS: &[&str] = &["bind"];

pub struct MockScope;

impl Scope for MockScope {
    fn scalar(&self, name: &str) -> Option<VarId> {
        SCALARS
            .iter()
            .position(|n| *n == name)
            .map(|i| VarId(i as u16))
    }
    fn array(&self, name: &str) -> Option<VarId> {
        ARRAYS
            .iter()
            .position(|n| *n == name)
            .map(|i| VarId(1000 + i as u16))
    }
}

/// One record: values by name; unset names read as undef.
#[derive(Default, Clone)]
pub struct Record {
    scalars: HashMap<u16, Value<'static>>,
    arrays: HashMap<u16, Vec<Value<'static>>>,
}

impl Record {
    pub fn num(mut self, name: &str, v: f64) -> Self {
        let id = MockScope.scalar(name).expect("known name").0;
        self.scalars.insert(id, Value::Num(v));
        self
    }
    pub fn str(mut self, name: &str, v: &str) -> Self {
        let id = MockScope.scalar(name).expect("known name").0;
        self.scalars
            .insert(id, Value::Str(Cow::Owned(v.to_string())));
        self
    }
    pub fn undef(mut self, name: &str) -> Self {
        let id = MockScope.scalar(name).expect("known name").0;
        self.scalars.insert(id, Value::Undef);
        self
    }
    pub fn array(mut self, name: &str, items: &[&str]) -> Self {
        let id = MockScope.array(name).expect("known array").0;
        self.arrays.insert(
            id,
            items
                .iter()
                .map(|s| Value::Str(Cow::Owned(s.to_string())))
                .collect(),
        );
        self
    }
}

impl Vars for Record {
    fn scalar(&self, id: VarId) -> Value<'_> {
        match self.scalars.get(&id.0) {
            Some(v) => v.reborrow(),
            None => Value::Undef,
        }
    }
    fn array(&self, id: VarId) -> Vec<Value<'_>> {
        self.arrays
            .get(&id.0)
            .map(|v| v.iter().map(Value::reborrow).collect())
            .unwrap_or_default()
    }
}

/// A SQL*Net message from client WAIT from crc-local-force, as mrskew saw it
/// (`orcl_ora_30561_...trc:58081`, 60.002586 s).
pub fn snmfc() -> Record {
    Record::default()
        .num("af", 60.002586)
        .num("dur", 60.002586)
        .num("ela", 60.002586)
        .undef("e")
        .undef("c")
        .str("nam", "SQL*Net message from client")
        .str("name", "SQL*Net message from client")
        .str("call", "WAIT")
        .num("dep", 0.0)
        .num("depmin", 0.0)
        .num("line", 58081.0)
        .num("tim", 14522473.254855)
        .str("file", "/traces/crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz")
        .str("basename", "orcl_ora_30561_RC-20230830160541-20230703160541.trc")
        .str("base", "orcl_ora_30561_RC-20230830160541-20230703160541.trc")
        .str(
            "text",
            "WAIT #140661336887528: nam='SQL*Net message from client' ela= 60001584 driver id=1952673792 #bytes=1 p3=0 obj#=-1 tim=14522473254855",
        )
        .str("sqlid", "9babjv8yq8ru3")
        .str("sql", "BEGIN DBMS_OUTPUT.GET_LINES(:LINES, :NUMLINES); END;")
        .num("cursor_id", 140661336887528.0)
        .num("p1", 1952673792.0)
        .num("p2", 1.0)
        .num("p3", 0.0)
        .num("obj", -1.0)
        .num("island_id", 3.0)
        .array("bind", &["1686", "\"5/11/2023 0:0:0\"", "AAAR3sAAEAAAACXAAA"])
}

/// A recursive FETCH database call.
pub fn fetch() -> Record {
    Record::default()
        .num("af", 0.000123)
        .num("dur", 0.000123)
        .num("c", 0.000123)
        .num("e", 0.000456)
        .undef("ela")
        .str("nam", "FETCH")
        .str("name", "FETCH")
        .str("call", "FETCH")
        .num("dep", 2.0)
        .num("depmin", 0.0)
        .num("r", 100.0)
        .num("row", 100.0)
        .num("line", 44.0)
        .num("parse_id", 37.0)
        .num("exec_id", 44.0)
        .num("oct", 3.0)
        .str("sqlid", "#140661335857648:orcl.trc")
        .str("sql", "#140661335857648:orcl.trc")
        .str("ssqlid", "abc")
        .str(
            "ssql",
            "select * from t where x = :1 and a very long tail that goes on and on",
        )
        .str("basename", "orcl.trc")
        .str("base", "orcl.trc")
        .num("island_id", 0.0)
        .array("bind", &[])
}

pub fn compile(src: &str) -> Program {
    match Program::compile(src, &MockScope) {
        Ok(p) => p,
        Err(e) => panic!("{src:?} does not compile:\n{e}"),
    }
}

/// The string value of `src` on `rec`.
pub fn eval_on(src: &str, rec: &Record) -> String {
    let p = compile(src);
    match p.eval(rec) {
        Ok(v) => v.to_string(),
        Err(e) => panic!("{src:?} failed: {e}"),
    }
}

/// The string value of `src` on an empty record.
pub fn ev(src: &str) -> String {
    eval_on(src, &Record::default())
}

pub fn evn(src: &str) -> f64 {
    compile(src)
        .eval_num(&Record::default())
        .expect("evaluates")
}

pub fn evb(src: &str) -> bool {
    compile(src)
        .eval_bool(&Record::default())
        .expect("evaluates")
}

/// The compile error of `src`.
pub fn compile_err(src: &str) -> tracelab_expr::CompileError {
    match Program::compile(src, &MockScope) {
        Ok(_) => panic!("{src:?} compiled but should not"),
        Err(e) => e,
    }
}
