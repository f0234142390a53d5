//! The calls table: one row per call, one typed column per variable that
//! users group and filter by (mrskew's `$af`, `$nam`, `$sqlid`, ...), built
//! in Arrow batches.

use std::sync::Arc;

use arrow_array::builder::{
    Int32Builder, Int64Builder, ListBuilder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tracelab_trace::{Call, CallKind};

/// Rows per batch handed to a writer (Parquet gathers them into row
/// groups of [`crate::sink::ROW_GROUP_ROWS`]).
pub const BATCH_ROWS: usize = 64 * 1024;

/// What a call's row takes from its file rather than from the call.
pub struct FileContext<'a> {
    pub file_id: i32,
    /// `$file`: as named on the command line.
    pub file: &'a str,
    /// `$basename`: the name the database gave the trace.
    pub basename: &'a str,
    /// `*** SESSION ID:(SID.SERIAL)` of the header.
    pub session: Option<&'a str>,
    /// Wall-clock µs minus `tim` µs (see [`crate::Header::tim_offset_us`]).
    pub tim_offset_us: Option<i64>,
}

fn utc() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
}

fn bind_item() -> Field {
    Field::new("item", DataType::Utf8, true)
}

/// The calls table's schema. `with_file_id`: a column of the file's id,
/// when all files go to one output file; a directory output holds it in
/// the partition path (`calls/file_id=N/`) instead.
pub fn schema(with_file_id: bool) -> SchemaRef {
    use DataType::{Int64, Utf8};
    let i = |name: &str| Field::new(name, Int64, true);
    let s = |name: &str| Field::new(name, Utf8, true);
    let mut fields = Vec::new();
    if with_file_id {
        fields.push(Field::new("file_id", DataType::Int32, false));
    }
    fields.extend([
        Field::new("file", Utf8, false),
        Field::new("basename", Utf8, false),
        Field::new("line", Int64, false),
        s("session"),
        Field::new("call", Utf8, false),
        Field::new("name", Utf8, false),
        i("dep"),
        Field::new("depmin", Int64, false),
        s("cursor"),
        s("sqlid"),
        i("hv"),
        i("oct"),
        i("uid"),
        i("lid"),
        Field::new("parse_id", Int64, false),
        Field::new("exec_id", Int64, false),
        Field::new("island_id", Int64, false),
        Field::new("af", Int64, false),
        Field::new("dur", Int64, false),
        i("e"),
        i("c"),
        i("ela"),
        i("tim"),
        Field::new("start_time", utc(), true),
        Field::new("end_time", utc(), true),
        i("r"),
        i("p"),
        i("cr"),
        i("cu"),
        i("mis"),
        i("og"),
        i("plh"),
        i("type"),
        i("bytes"),
        i("rlbk"),
        i("rd_only"),
        i("p1"),
        i("p2"),
        i("p3"),
        i("obj"),
        Field::new("binds", DataType::List(Arc::new(bind_item())), true),
    ]);
    Arc::new(Schema::new(fields))
}

/// Columns whose values are mostly distinct: a Parquet dictionary would
/// be built only to be dropped when it grows past its page.
pub const NOT_DICTIONARY: &[&str] = &[
    "line",
    "parse_id",
    "exec_id",
    "af",
    "dur",
    "e",
    "c",
    "ela",
    "tim",
    "start_time",
    "end_time",
    "p2",
];

/// Columns with row-group statistics, for engines to skip row groups by
/// time, line, statement or name.
pub const STATISTICS: &[&str] = &[
    "file_id",
    "line",
    "name",
    "sqlid",
    "dep",
    "tim",
    "start_time",
    "end_time",
];

/// The columns of one batch being built.
pub struct CallColumns {
    schema: SchemaRef,
    file_id: Option<Int32Builder>,
    file: StringBuilder,
    basename: StringBuilder,
    line: Int64Builder,
    session: StringBuilder,
    call: StringBuilder,
    name: StringBuilder,
    dep: Int64Builder,
    depmin: Int64Builder,
    cursor: StringBuilder,
    sqlid: StringBuilder,
    hv: Int64Builder,
    oct: Int64Builder,
    uid: Int64Builder,
    lid: Int64Builder,
    parse_id: Int64Builder,
    exec_id: Int64Builder,
    island_id: Int64Builder,
    af: Int64Builder,
    dur: Int64Builder,
    e: Int64Builder,
    c: Int64Builder,
    ela: Int64Builder,
    tim: Int64Builder,
    start_time: TimestampMicrosecondBuilder,
    end_time: TimestampMicrosecondBuilder,
    r: Int64Builder,
    p: Int64Builder,
    cr: Int64Builder,
    cu: Int64Builder,
    mis: Int64Builder,
    og: Int64Builder,
    plh: Int64Builder,
    typ: Int64Builder,
    bytes: Int64Builder,
    rlbk: Int64Builder,
    rd_only: Int64Builder,
    p1: Int64Builder,
    p2: Int64Builder,
    p3: Int64Builder,
    obj: Int64Builder,
    binds: ListBuilder<StringBuilder>,
    rows: usize,
}

/// The name of a call's kind as mrskew's `$call` gives it.
fn call_name<'a>(c: &Call<'a>) -> &'a str {
    match c.kind {
        CallKind::Wait => "WAIT",
        CallKind::Line => "",
        _ => c.name,
    }
}

fn int(s: Option<&str>) -> Option<i64> {
    s.and_then(|v| v.parse().ok())
}

impl CallColumns {
    pub fn new(with_file_id: bool) -> CallColumns {
        let n = BATCH_ROWS;
        let ints = || Int64Builder::with_capacity(n);
        let strs = |bytes: usize| StringBuilder::with_capacity(n, n * bytes);
        let times = || TimestampMicrosecondBuilder::with_capacity(n).with_timezone("+00:00");
        CallColumns {
            schema: schema(with_file_id),
            file_id: with_file_id.then(|| Int32Builder::with_capacity(n)),
            file: strs(32),
            basename: strs(32),
            line: ints(),
            session: strs(12),
            call: strs(5),
            name: strs(16),
            dep: ints(),
            depmin: ints(),
            cursor: strs(16),
            sqlid: strs(13),
            hv: ints(),
            oct: ints(),
            uid: ints(),
            lid: ints(),
            parse_id: ints(),
            exec_id: ints(),
            island_id: ints(),
            af: ints(),
            dur: ints(),
            e: ints(),
            c: ints(),
            ela: ints(),
            tim: ints(),
            start_time: times(),
            end_time: times(),
            r: ints(),
            p: ints(),
            cr: ints(),
            cu: ints(),
            mis: ints(),
            og: ints(),
            plh: ints(),
            typ: ints(),
            bytes: ints(),
            rlbk: ints(),
            rd_only: ints(),
            p1: ints(),
            p2: ints(),
            p3: ints(),
            obj: ints(),
            binds: ListBuilder::new(StringBuilder::new()).with_field(Arc::new(bind_item())),
            rows: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Appends `call` as a row. Values the call does not have are null,
    /// as the variable is undefined in mrskew: `$e` of a WAIT, `$ela` of a
    /// database call, `$dep` of a line without `dep=`.
    pub fn push(&mut self, call: &Call<'_>, f: &FileContext<'_>) {
        let db = call.kind.is_dbcall();
        let wait = call.kind == CallKind::Wait;
        if let Some(b) = &mut self.file_id {
            b.append_value(f.file_id);
        }
        self.file.append_value(f.file);
        self.basename.append_value(f.basename);
        self.line.append_value(call.line as i64);
        self.session.append_option(f.session);
        self.call.append_value(call_name(call));
        self.name.append_value(call.name);
        self.dep.append_option(call.dep);
        self.depmin.append_value(call.depmin);
        if call.cursor.is_empty() {
            self.cursor.append_null();
        } else {
            self.cursor
                .append_value(String::from_utf8_lossy(call.cursor).as_ref());
        }
        let st = call.stmt;
        self.sqlid.append_value(&st.sqlid);
        self.hv.append_option(st.hv);
        self.oct.append_option(st.oct);
        self.uid.append_option(st.uid);
        self.lid.append_option(st.lid);
        self.parse_id.append_value(call.parse_id as i64);
        self.exec_id.append_value(call.exec_id as i64);
        self.island_id.append_value(call.island_id as i64);
        self.af.append_value(call.af_us());
        self.dur.append_value(call.dur_us());
        self.e.append_option(call.db.e.filter(|_| db));
        self.c.append_option(call.db.c.filter(|_| db));
        self.ela.append_option(wait.then_some(call.wait.ela));
        let tim = call.tim_us();
        self.tim.append_option(tim);
        let end = tim.and_then(|t| f.tim_offset_us.map(|o| o + t));
        self.end_time.append_option(end);
        self.start_time
            .append_option(end.map(|e| e - call.dur_us()));
        let d = &call.db;
        self.r.append_option(d.r);
        self.p.append_option(d.p);
        self.cr.append_option(d.cr);
        self.cu.append_option(d.cu);
        self.mis.append_option(d.mis);
        self.og.append_option(d.og);
        self.plh.append_option(d.plh);
        self.typ.append_option(d.typ);
        self.bytes.append_option(d.bytes);
        self.rlbk.append_option(d.rlbk);
        self.rd_only.append_option(d.rd_only);
        if wait {
            self.p1.append_option(int(call.wait.p(1)));
            self.p2.append_option(int(call.wait.p(2)));
            self.p3.append_option(int(call.wait.p(3)));
            self.obj.append_option(call.wait.obj);
        } else {
            self.p1.append_null();
            self.p2.append_null();
            self.p3.append_null();
            self.obj.append_null();
        }
        let values = self.binds.values();
        for b in call.binds {
            values.append_option(b.as_deref());
        }
        self.binds.append(true);
        self.rows += 1;
    }

    /// The rows so far as a batch; the builders start empty again.
    pub fn finish(&mut self) -> RecordBatch {
        self.rows = 0;
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        if let Some(b) = &mut self.file_id {
            cols.push(Arc::new(b.finish()));
        }
        let strs = [&mut self.file, &mut self.basename];
        cols.extend(strs.into_iter().map(|b| Arc::new(b.finish()) as ArrayRef));
        cols.push(Arc::new(self.line.finish()));
        let strs = [&mut self.session, &mut self.call, &mut self.name];
        cols.extend(strs.into_iter().map(|b| Arc::new(b.finish()) as ArrayRef));
        cols.push(Arc::new(self.dep.finish()));
        cols.push(Arc::new(self.depmin.finish()));
        let strs = [&mut self.cursor, &mut self.sqlid];
        cols.extend(strs.into_iter().map(|b| Arc::new(b.finish()) as ArrayRef));
        let ints = [
            &mut self.hv,
            &mut self.oct,
            &mut self.uid,
            &mut self.lid,
            &mut self.parse_id,
            &mut self.exec_id,
            &mut self.island_id,
            &mut self.af,
            &mut self.dur,
            &mut self.e,
            &mut self.c,
            &mut self.ela,
            &mut self.tim,
        ];
        cols.extend(ints.into_iter().map(|b| Arc::new(b.finish()) as ArrayRef));
        cols.push(Arc::new(self.start_time.finish()));
        cols.push(Arc::new(self.end_time.finish()));
        let ints = [
            &mut self.r,
            &mut self.p,
            &mut self.cr,
            &mut self.cu,
            &mut self.mis,
            &mut self.og,
            &mut self.plh,
            &mut self.typ,
            &mut self.bytes,
            &mut self.rlbk,
            &mut self.rd_only,
            &mut self.p1,
            &mut self.p2,
            &mut self.p3,
            &mut self.obj,
        ];
        cols.extend(ints.into_iter().map(|b| Arc::new(b.finish()) as ArrayRef));
        cols.push(Arc::new(self.binds.finish()));
        // The builders match the schema field for field: a mismatch is a
        // bug in this file, caught by every test that exports a call.
        RecordBatch::try_new(self.schema.clone(), cols).expect("calls columns match their schema")
    }
}
