//! The calls table: one row per call, one typed column per variable that
//! users group and filter by (mrskew's `$af`, `$nam`, `$sqlid`, ...), built
//! in Arrow batches.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tracelab_trace::{Call, CallKind};

use crate::sink::Encodings;

/// Rows per batch handed to a writer (Parquet gathers them into row
/// groups of [`crate::sink::ROW_GROUP_ROWS`]).
pub const BATCH_ROWS: usize = 8 * 1024;

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

/// How the calls table is encoded in Parquet, chosen by measuring each
/// column of the 1 GB bench trace (time to encode, bytes written; the
/// table is in docs/calls.md):
/// - `line`, `exec_id`, `island_id` and the times grow row by row: their
///   deltas, bit-packed (DELTA_BINARY_PACKED), take a tenth of the time
///   of a dictionary or of plain values through zstd, and less room;
///   `oct`, `uid` and `lid` stay put for a statement's calls: their
///   deltas are mostly zero, a quarter quicker than a dictionary for a
///   few kB more;
/// - `parse_id` is mostly distinct but repeats in runs, `hv`, `dep`,
///   `depmin` and `r` are a few values in long runs, `session` is one
///   short value per file: plain values through zstd, half a
///   dictionary's hashing, within a few kB;
/// - everything else gets a dictionary: the durations (`af`, `dur`, `e`,
///   `c`, `ela`) and wait parameters repeat enough that it is both smaller
///   and quicker than plain values (it falls back to plain by itself in a
///   row group where it outgrows its page), and the file's path and name,
///   the same on every row, cost one hash a row where plain values cost
///   zstd every byte of every row (twice as long for a 17-byte path).
pub const ENCODINGS: Encodings<'static> = Encodings {
    plain: &["session", "parse_id", "hv", "dep", "depmin", "r"],
    delta: &[
        "line",
        "exec_id",
        "island_id",
        "tim",
        "start_time",
        "end_time",
        "oct",
        "uid",
        "lid",
    ],
    stats: STATISTICS,
};

/// Columns with row-group statistics, for engines to skip row groups by
/// time, line, statement or name.
const STATISTICS: &[&str] = &[
    "file_id",
    "line",
    "name",
    "sqlid",
    "dep",
    "tim",
    "start_time",
    "end_time",
];

/// A nullable 64-bit column being built: plain vectors appended a block
/// of staged rows at a time (reserved for a batch, never zeroed), the
/// validity bitmap packed once per batch.
/// (Arrow's builders cost a call and a bit operation per value: with 40
/// columns, more than reading the trace.)
struct Ints {
    values: Vec<i64>,
    valid: Vec<bool>,
}

impl Ints {
    fn new() -> Ints {
        Ints {
            values: Vec::with_capacity(BATCH_ROWS),
            valid: Vec::with_capacity(BATCH_ROWS),
        }
    }

    /// The values and their null buffer (none when every value is set);
    /// the column starts again.
    fn take(&mut self) -> (ScalarBuffer<i64>, Option<NullBuffer>) {
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(BATCH_ROWS));
        let nulls = self
            .valid
            .contains(&false)
            .then(|| NullBuffer::from(&self.valid[..]));
        self.valid.clear();
        (values.into(), nulls)
    }

    fn finish(&mut self) -> ArrayRef {
        let (values, nulls) = self.take();
        Arc::new(Int64Array::new(values, nulls))
    }

    fn finish_time(&mut self) -> ArrayRef {
        let (values, nulls) = self.take();
        Arc::new(TimestampMicrosecondArray::new(values, nulls).with_timezone("+00:00"))
    }
}

/// A column of values every row has, as [`Ints`].
struct Required(Vec<i64>);

impl Required {
    fn new() -> Required {
        Required(Vec::with_capacity(BATCH_ROWS))
    }

    fn finish(&mut self) -> ArrayRef {
        let values = std::mem::replace(&mut self.0, Vec::with_capacity(BATCH_ROWS));
        Arc::new(Int64Array::new(values.into(), None))
    }
}

/// A nullable string column being built, as [`Ints`].
struct Strs {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    valid: Vec<bool>,
}

impl Strs {
    fn with_capacity(n: usize, bytes: usize) -> Strs {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        Strs {
            offsets,
            bytes: Vec::with_capacity(bytes),
            valid: Vec::with_capacity(n),
        }
    }

    fn len(&self) -> usize {
        self.valid.len()
    }

    #[inline]
    fn push(&mut self, v: &str) {
        self.push_bytes(v.as_bytes());
    }

    /// Appends bytes known to be UTF-8 (the array checks them again when
    /// it is built).
    #[inline]
    fn push_bytes(&mut self, v: &[u8]) {
        self.bytes.extend_from_slice(v);
        self.offsets.push(self.bytes.len() as i32);
        self.valid.push(true);
    }

    #[inline]
    fn null(&mut self) {
        self.offsets.push(self.bytes.len() as i32);
        self.valid.push(false);
    }

    fn finish(&mut self) -> StringArray {
        let (n, bytes) = (self.valid.capacity(), self.bytes.capacity());
        let Strs {
            offsets,
            bytes,
            valid,
        } = std::mem::replace(self, Strs::with_capacity(n, bytes));
        let nulls = valid.contains(&false).then(|| NullBuffer::from(valid));
        // Checked (offsets and UTF-8), not `new_unchecked`: 3% of an
        // export is not worth undefined behaviour if an invariant ever
        // breaks (a batch's strings past i32 offsets, say).
        StringArray::new(OffsetBuffer::new(offsets.into()), bytes.into(), nulls)
    }
}

/// `n` copies of `v` (a column that holds one value per file).
fn repeated(v: Option<&str>, n: usize) -> ArrayRef {
    match v {
        None => Arc::new(StringArray::new_null(n)),
        Some(v) => {
            let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(v.len(), n));
            Arc::new(StringArray::new(
                offsets,
                v.repeat(n).into_bytes().into(),
                None,
            ))
        }
    }
}

/// The integer columns every row has: `line`, `depmin`, `parse_id`,
/// `exec_id`, `island_id`, `af`, `dur` (indices into [`Staged::required`]).
const REQUIRED: usize = 7;
const LINE: usize = 0;
const DEPMIN: usize = 1;
const PARSE_ID: usize = 2;
const EXEC_ID: usize = 3;
const ISLAND_ID: usize = 4;
const AF: usize = 5;
const DUR: usize = 6;

/// The nullable integer columns: `dep`, `hv`, `oct`, `uid`, `lid`, `e`,
/// `c`, `ela`, `tim`, `start_time`, `end_time`, the 11 database-call
/// fields (`r` ... `rd_only`) and the 4 wait fields (`p1`, `p2`, `p3`,
/// `obj`) (indices into [`Staged::nullable`]).
const NULLABLE: usize = 26;
// One bit a nullable column in `Staged::nulls`.
const _: () = assert!(NULLABLE <= u32::BITS as usize);
const DEP: usize = 0;
const HV: usize = 1;
const OCT: usize = 2;
const UID: usize = 3;
const LID: usize = 4;
const E: usize = 5;
const C: usize = 6;
const ELA: usize = 7;
const TIM: usize = 8;
const START_TIME: usize = 9;
const END_TIME: usize = 10;
/// The first of the database-call fields; the wait fields follow them.
const DB: usize = 11;

/// Rows staged before their integers are spread into the columns: 256
/// rows of 272 bytes stay in the core's cache.
const STAGED: usize = 256;

/// A row's integers, written together and spread into their 33 columns
/// [`STAGED`] rows at a time, one column after the other.
/// (Storing each row's values straight into 33 value and 26 validity
/// vectors kept 59 streams of stores in flight, and the stores waited on
/// memory: a sixth of the export's CPU on the reading thread, which is
/// the export's critical path.)
#[derive(Clone, Copy)]
struct Staged {
    required: [i64; REQUIRED],
    nullable: [i64; NULLABLE],
    /// Bit k set: `nullable[k]` is null.
    nulls: u32,
}

impl Staged {
    const EMPTY: Staged = Staged {
        required: [0; REQUIRED],
        nullable: [0; NULLABLE],
        nulls: 0,
    };
}

/// The columns of one batch being built, typed values taken straight
/// from the call (the integers through [`Staged`] rows).
pub struct CallColumns {
    schema: SchemaRef,
    with_file_id: bool,
    /// The file's columns (`file_id`, `file`, `basename`, `session`): one
    /// value for every row, written out when the batch is finished.
    file: Option<(i32, String, String, Option<String>)>,
    /// Rows so far.
    rows: usize,
    /// The integer values of the latest rows, not yet spread into their
    /// columns (see [`Staged`]).
    staged: Vec<Staged>,
    /// The integer columns every row has, in the order of [`REQUIRED`].
    required: [Required; REQUIRED],
    /// The nullable integer columns, in the order of [`NULLABLE`].
    nullable: [Ints; NULLABLE],
    call: Strs,
    name: Strs,
    cursor: Strs,
    sqlid: Strs,
    /// The bind values of each row: list offsets into `bind_values`.
    bind_offsets: Vec<i32>,
    bind_values: Strs,
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
        let ints = Ints::new;
        let strs = |bytes: usize| Strs::with_capacity(n, n * bytes);
        let vals = Required::new;
        let mut bind_offsets = Vec::with_capacity(n + 1);
        bind_offsets.push(0);
        CallColumns {
            schema: schema(with_file_id),
            with_file_id,
            file: None,
            rows: 0,
            staged: Vec::with_capacity(STAGED),
            required: std::array::from_fn(|_| vals()),
            nullable: std::array::from_fn(|_| ints()),
            call: strs(5),
            name: strs(16),
            cursor: strs(16),
            sqlid: strs(13),
            bind_offsets,
            bind_values: strs(8),
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
        if self.file.is_none() {
            self.file = Some((
                f.file_id,
                f.file.to_string(),
                f.basename.to_string(),
                f.session.map(str::to_string),
            ));
        }
        let db = call.kind.is_dbcall();
        let wait = call.kind == CallKind::Wait;
        self.call.push(call_name(call));
        self.name.push(call.name);
        if call.cursor.is_empty() {
            self.cursor.null();
        } else if call.cursor.is_ascii() {
            // A cursor id is ASCII (`#140...`): checked as such inline,
            // where a UTF-8 check is a call a row.
            self.cursor.push_bytes(call.cursor);
        } else {
            self.cursor.push(&String::from_utf8_lossy(call.cursor));
        }
        let st = call.stmt;
        self.sqlid.push(&st.sqlid);
        let dur = call.dur_us();
        // Written in place: a row built aside and pushed is a copy of
        // its 272 bytes.
        self.staged.push(Staged::EMPTY);
        let r = self.staged.last_mut().expect("a row was just staged");
        r.required[LINE] = call.line as i64;
        r.required[DEPMIN] = call.depmin;
        r.required[PARSE_ID] = call.parse_id as i64;
        r.required[EXEC_ID] = call.exec_id as i64;
        r.required[ISLAND_ID] = call.island_id as i64;
        r.required[AF] = call.af_us();
        r.required[DUR] = dur;
        let tim = call.tim_us();
        let end = tim.and_then(|t| f.tim_offset_us.map(|o| o + t));
        let d = &call.db;
        let (p123, obj) = if wait {
            let w = &call.wait;
            let [p1, p2, p3] = w.p123();
            ([int(p1), int(p2), int(p3)], w.obj)
        } else {
            ([None; 3], None)
        };
        let values: [Option<i64>; NULLABLE] = [
            call.dep,
            st.hv,
            st.oct,
            st.uid,
            st.lid,
            d.e.filter(|_| db),
            d.c.filter(|_| db),
            wait.then_some(call.wait.ela),
            tim,
            end.map(|e| e - dur),
            end,
            d.r,
            d.p,
            d.cr,
            d.cu,
            d.mis,
            d.og,
            d.plh,
            d.typ,
            d.bytes,
            d.rlbk,
            d.rd_only,
            p123[0],
            p123[1],
            p123[2],
            obj,
        ];
        for (k, v) in values.into_iter().enumerate() {
            match v {
                Some(v) => r.nullable[k] = v,
                None => r.nulls |= 1 << k,
            }
        }
        if self.staged.len() == STAGED {
            self.spread();
        }
        for b in call.binds {
            match b {
                Some(v) => self.bind_values.push(v),
                None => self.bind_values.null(),
            }
        }
        self.bind_offsets.push(self.bind_values.len() as i32);
        self.rows += 1;
    }

    /// Spreads the staged rows' integers into their columns, a column at
    /// a time.
    fn spread(&mut self) {
        let rows = &self.staged;
        for (k, col) in self.required.iter_mut().enumerate() {
            col.0.extend(rows.iter().map(|r| r.required[k]));
        }
        for (k, col) in self.nullable.iter_mut().enumerate() {
            col.values.extend(rows.iter().map(|r| r.nullable[k]));
            col.valid.extend(rows.iter().map(|r| r.nulls >> k & 1 == 0));
        }
        self.staged.clear();
    }

    /// The rows so far as a batch; the columns start empty again.
    pub fn finish(&mut self) -> RecordBatch {
        self.spread();
        let n = std::mem::take(&mut self.rows);
        let (file_id, file, basename, session) = self.file.take().unwrap_or_default();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        if self.with_file_id {
            cols.push(Arc::new(Int32Array::from(vec![file_id; n])));
        }
        cols.push(repeated(Some(&file), n));
        cols.push(repeated(Some(&basename), n));
        let (req, null) = (&mut self.required, &mut self.nullable);
        cols.push(req[LINE].finish());
        cols.push(repeated(session.as_deref(), n));
        cols.push(Arc::new(self.call.finish()));
        cols.push(Arc::new(self.name.finish()));
        cols.push(null[DEP].finish());
        cols.push(req[DEPMIN].finish());
        cols.push(Arc::new(self.cursor.finish()));
        cols.push(Arc::new(self.sqlid.finish()));
        for k in [HV, OCT, UID, LID] {
            cols.push(null[k].finish());
        }
        for k in [PARSE_ID, EXEC_ID, ISLAND_ID, AF, DUR] {
            cols.push(req[k].finish());
        }
        for k in [E, C, ELA, TIM] {
            cols.push(null[k].finish());
        }
        cols.push(null[START_TIME].finish_time());
        cols.push(null[END_TIME].finish_time());
        for col in &mut null[DB..] {
            cols.push(col.finish());
        }
        let offsets = std::mem::replace(&mut self.bind_offsets, Vec::with_capacity(n + 1));
        self.bind_offsets.push(0);
        let values = self.bind_values.finish();
        cols.push(Arc::new(ListArray::new(
            Arc::new(bind_item()),
            OffsetBuffer::new(offsets.into()),
            Arc::new(values),
            None,
        )));
        // The columns match the schema field for field: a mismatch is a
        // bug in this file, caught by every test that exports a call.
        RecordBatch::try_new(self.schema.clone(), cols).expect("calls columns match their schema")
    }
}
