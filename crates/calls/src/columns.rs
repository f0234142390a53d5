//! The calls table: one row per call, one typed column per variable that
//! users group and filter by (mrskew's `$af`, `$nam`, `$sqlid`, ...), built
//! in Arrow batches.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_buffer::{
    BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tracelab_query::{Column, ColumnType, Field as VarField, Var, VARIABLES};
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

/// The calls table's schema: a column for each of the query engine's
/// variables that has one ([`tracelab_query::VARIABLES`], in its order).
/// `with_file_id`: a column of the file's id first, when all files go to
/// one output file; a directory output holds it in the partition path
/// (`calls/file_id=N/`) instead.
pub fn schema(with_file_id: bool) -> SchemaRef {
    let mut fields = Vec::new();
    if with_file_id {
        fields.push(Field::new("file_id", DataType::Int32, false));
    }
    fields.extend(VARIABLES.iter().filter_map(|v| match v.column {
        Column::Of { name, ty, nullable } => Some(Field::new(
            name,
            match ty {
                ColumnType::Int => DataType::Int64,
                ColumnType::Text => DataType::Utf8,
                ColumnType::Timestamp => utc(),
                ColumnType::TextList => DataType::List(Arc::new(bind_item())),
            },
            nullable,
        )),
        Column::None { .. } => None,
    }));
    Arc::new(Schema::new(fields))
}

/// How the calls table is encoded in Parquet, chosen by measuring each
/// column of the 1 GB bench trace (time to encode, bytes written) and of
/// 60 MB of it under callgrind (instructions, the same from run to run;
/// the tables are in docs/calls.md):
/// - `line`, `exec_id`, `island_id` and the times grow row by row: their
///   deltas, bit-packed (DELTA_BINARY_PACKED), take a tenth of the time
///   of a dictionary or of plain values through zstd, and less room;
///   `oct`, `uid`, `lid` and `og` stay put for a statement's calls: their
///   deltas are mostly zero, a fifth to a third fewer instructions than a
///   dictionary for a few kB more;
/// - `parse_id` is mostly distinct but repeats in runs, `hv`, `dep`,
///   `depmin`, `r`, `p`, `cr`, `cu`, `mis`, `plh`, `obj` and the wait
///   parameters `p1` to `p3` are a few values in long runs, `session` is
///   one short value per file, `cursor` a few per statement: plain values
///   through zstd, a half to five sixths of a dictionary's instructions,
///   within a few kB (60 for `p2`, of 41 MB);
/// - everything else gets a dictionary: the durations (`af`, `dur`, `e`,
///   `c`, `ela`) repeat enough that it is a half to three quarters the
///   bytes of their deltas (it falls back to plain by itself in a row group
///   where it outgrows its page); `name`, `call` and `sqlid` are what
///   engines group and filter by (a dictionary lets Spark skip row groups
///   on `sqlid = '…'`); the file's path and name, the same on every row,
///   are copied whole (see [`crate::encode`]).
pub const ENCODINGS: Encodings<'static> = Encodings {
    plain: &[
        "session", "parse_id", "hv", "dep", "depmin", "r", "p", "cr", "cu", "mis", "plh", "p1",
        "p2", "p3", "obj", "cursor",
    ],
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
        "og",
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
/// validity bitmap packed 64 rows to a word as the block is spread.
/// (Arrow's builders cost a call and a bit operation per value: with 40
/// columns, more than reading the trace; a vector of booleans packed at
/// the end of the batch cost a pass more over every value.)
struct Ints {
    values: Vec<i64>,
    /// Validity, bit i of word i / 64 for row i (Arrow's bit order).
    valid: Vec<u64>,
    /// Rows whose validity is in `valid`.
    valid_len: usize,
    nulls: usize,
}

impl Ints {
    fn new() -> Ints {
        Ints {
            values: Vec::with_capacity(BATCH_ROWS),
            valid: Vec::with_capacity(BATCH_ROWS / 64 + 1),
            valid_len: 0,
            nulls: 0,
        }
    }

    /// Appends the validity of the next `n` rows (at most 64): bit i of
    /// `bits` set when row i has a value.
    #[inline]
    fn push_valid(&mut self, bits: u64, n: usize) {
        let (word, shift) = (self.valid_len / 64, self.valid_len % 64);
        if shift == 0 {
            self.valid.push(bits);
        } else {
            // After a block that was not full. `spread` hands full blocks
            // but the batch's last, so this keeps the bitmap right should
            // that change (a unit test covers it).
            self.valid[word] |= bits << shift;
            if shift + n > 64 {
                self.valid.push(bits >> (64 - shift));
            }
        }
        self.valid_len += n;
        self.nulls += n - bits.count_ones() as usize;
    }

    /// The values and their null buffer (none when every value is set);
    /// the column starts again.
    fn take(&mut self) -> (ScalarBuffer<i64>, Option<NullBuffer>) {
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(BATCH_ROWS));
        let valid = std::mem::replace(&mut self.valid, Vec::with_capacity(BATCH_ROWS / 64 + 1));
        let nulls = std::mem::take(&mut self.nulls);
        let n = std::mem::take(&mut self.valid_len);
        debug_assert_eq!(n, values.len());
        let nulls =
            (nulls > 0).then(|| NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(valid), 0, n)));
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

/// A string column being built, as [`Ints`]; its validity is kept as
/// the rows that are null, most string columns having none.
struct Strs {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    null_rows: Vec<usize>,
}

impl Strs {
    fn with_capacity(n: usize, bytes: usize) -> Strs {
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        Strs {
            offsets,
            bytes: Vec::with_capacity(bytes),
            null_rows: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
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
    }

    #[inline]
    fn null(&mut self) {
        self.null_rows.push(self.len());
        self.offsets.push(self.bytes.len() as i32);
    }

    fn finish(&mut self) -> StringArray {
        let (n, bytes) = (self.offsets.capacity() - 1, self.bytes.capacity());
        let old = std::mem::replace(self, Strs::with_capacity(n, bytes));
        let nulls = (!old.null_rows.is_empty()).then(|| {
            let mut valid = BooleanBufferBuilder::new(old.offsets.len() - 1);
            valid.append_n(old.offsets.len() - 1, true);
            for &i in &old.null_rows {
                valid.set_bit(i, false);
            }
            NullBuffer::new(valid.finish())
        });
        // Checked (offsets and UTF-8), not `new_unchecked`: 3% of an
        // export is not worth undefined behaviour if an invariant ever
        // breaks (a batch's strings past i32 offsets, say).
        StringArray::new(
            OffsetBuffer::new(old.offsets.into()),
            old.bytes.into(),
            nulls,
        )
    }
}

/// A column that holds one value for every row of a file, built once for
/// a batch's length and shared by every batch of that length (building
/// it again for each batch cost more than a column of the call's own).
#[derive(Default)]
struct Repeated {
    last: Option<(Option<String>, usize, ArrayRef)>,
}

impl Repeated {
    fn get(&mut self, v: Option<&str>, n: usize) -> ArrayRef {
        match &self.last {
            Some((lv, ln, a)) if lv.as_deref() == v && *ln == n => a.clone(),
            _ => {
                let a = repeated(v, n);
                self.last = Some((v.map(str::to_string), n, a.clone()));
                a
            }
        }
    }
}

/// `n` copies of `v` (a column that holds one value per file).
pub(crate) fn repeated(v: Option<&str>, n: usize) -> ArrayRef {
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
/// The first of the 11 database-call fields.
const DB: usize = 11;
/// The first of the 4 wait fields.
const WAIT: usize = 22;
const _: () = assert!(WAIT + 4 == NULLABLE);

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

/// The validity of each nullable column for up to 64 staged rows: word k,
/// bit i set when row i has a value in column k.
///
/// Rows come in a few kinds (a database call, a WAIT, a call without
/// `dep=`), each with its own null columns: the rows are sorted by their
/// pattern of nulls first, and each column's word is the union of the
/// rows whose pattern has it, a few operations a column where taking
/// every row's bit of every column is 26 a row. A block with more than a
/// few patterns takes the bits one by one.
fn validity(block: &[Staged]) -> [u64; NULLABLE] {
    const KINDS: usize = 8;
    let mut patterns = [0u32; KINDS];
    let mut rows = [0u64; KINDS];
    let mut kinds = 0;
    let mut out = [0u64; NULLABLE];
    for (i, r) in block.iter().enumerate() {
        let k = match patterns[..kinds].iter().position(|&p| p == r.nulls) {
            Some(k) => k,
            None if kinds < KINDS => {
                patterns[kinds] = r.nulls;
                kinds += 1;
                kinds - 1
            }
            None => {
                for (k, w) in out.iter_mut().enumerate() {
                    *w = block
                        .iter()
                        .enumerate()
                        .fold(0, |w, (i, r)| w | u64::from(r.nulls >> k & 1 == 0) << i);
                }
                return out;
            }
        };
        rows[k] |= 1 << i;
    }
    for (k, w) in out.iter_mut().enumerate() {
        for (p, r) in patterns[..kinds].iter().zip(&rows) {
            if p >> k & 1 == 0 {
                *w |= r;
            }
        }
    }
    out
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
    /// The file's columns of the last batch, shared by the next.
    files: Repeated,
    basenames: Repeated,
    sessions: Repeated,
}

/// The name of a call's kind as mrskew's `$call` gives it.
fn call_name<'a>(c: &Call<'a>) -> &'a str {
    match c.kind {
        CallKind::Wait => "WAIT",
        CallKind::Line => "",
        _ => c.name,
    }
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
            files: Repeated::default(),
            basenames: Repeated::default(),
            sessions: Repeated::default(),
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
        let [p1, p2, p3] = if wait { call.wait.p123() } else { [None; 3] };
        // Field by field, not through an array of options: building and
        // walking 26 of them cost as much as the rest of the row.
        let mut set = |k: usize, v: Option<i64>| match v {
            Some(v) => r.nullable[k] = v,
            None => r.nulls |= 1 << k,
        };
        set(DEP, call.dep);
        set(HV, st.hv);
        set(OCT, st.oct);
        set(UID, st.uid);
        set(LID, st.lid);
        set(E, d.e.filter(|_| db));
        set(C, d.c.filter(|_| db));
        set(ELA, wait.then_some(call.wait.ela));
        set(TIM, tim);
        set(START_TIME, end.map(|e| e - dur));
        set(END_TIME, end);
        let fields = [
            d.r, d.p, d.cr, d.cu, d.mis, d.og, d.plh, d.typ, d.bytes, d.rlbk, d.rd_only,
        ];
        for (k, v) in fields.into_iter().enumerate() {
            set(DB + k, v);
        }
        set(WAIT, p1);
        set(WAIT + 1, p2);
        set(WAIT + 2, p3);
        set(WAIT + 3, call.wait.obj.filter(|_| wait));
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
        }
        for block in rows.chunks(64) {
            let valid = validity(block);
            for (col, bits) in self.nullable.iter_mut().zip(valid) {
                col.push_valid(bits, block.len());
            }
        }
        self.staged.clear();
    }

    /// The built column of a variable (the staged rows spread), in the
    /// calls table's order; `None` for one the table has no column for.
    /// `file`: the file, its basename and session, the same on every row.
    fn column(
        &mut self,
        field: VarField,
        n: usize,
        (file, basename, session): (&str, &str, Option<&str>),
    ) -> Option<ArrayRef> {
        let (req, null) = (&mut self.required, &mut self.nullable);
        let var = match field {
            VarField::Session => return Some(self.sessions.get(session, n)),
            VarField::Bind => {
                let offsets =
                    std::mem::replace(&mut self.bind_offsets, Vec::with_capacity(BATCH_ROWS + 1));
                self.bind_offsets.push(0);
                let values = self.bind_values.finish();
                return Some(Arc::new(ListArray::new(
                    Arc::new(bind_item()),
                    OffsetBuffer::new(offsets.into()),
                    Arc::new(values),
                    None,
                )));
            }
            VarField::Var(v) => v,
        };
        Some(match var {
            Var::File => self.files.get(Some(file), n),
            Var::Basename => self.basenames.get(Some(basename), n),
            Var::Line => req[LINE].finish(),
            Var::Call => Arc::new(self.call.finish()),
            Var::Nam => Arc::new(self.name.finish()),
            Var::Dep => null[DEP].finish(),
            Var::Depmin => req[DEPMIN].finish(),
            Var::CursorId => Arc::new(self.cursor.finish()),
            Var::Sqlid => Arc::new(self.sqlid.finish()),
            Var::Hv => null[HV].finish(),
            Var::Oct => null[OCT].finish(),
            Var::Uid => null[UID].finish(),
            Var::Lid => null[LID].finish(),
            Var::ParseId => req[PARSE_ID].finish(),
            Var::ExecId => req[EXEC_ID].finish(),
            Var::IslandId => req[ISLAND_ID].finish(),
            Var::Af => req[AF].finish(),
            Var::Dur => req[DUR].finish(),
            Var::E => null[E].finish(),
            Var::C => null[C].finish(),
            Var::Ela => null[ELA].finish(),
            Var::Tim => null[TIM].finish(),
            Var::Time0 => null[START_TIME].finish_time(),
            Var::Time1 => null[END_TIME].finish_time(),
            // The database-call fields, in the order `push` stages them.
            Var::R => null[DB].finish(),
            Var::P => null[DB + 1].finish(),
            Var::Cr => null[DB + 2].finish(),
            Var::Cu => null[DB + 3].finish(),
            Var::Mis => null[DB + 4].finish(),
            Var::Og => null[DB + 5].finish(),
            Var::Plh => null[DB + 6].finish(),
            Var::Type => null[DB + 7].finish(),
            Var::Bytes => null[DB + 8].finish(),
            Var::Rlbk => null[DB + 9].finish(),
            Var::RdOnly => null[DB + 10].finish(),
            Var::P1 => null[WAIT].finish(),
            Var::P2 => null[WAIT + 1].finish(),
            Var::P3 => null[WAIT + 2].finish(),
            Var::Obj => null[WAIT + 3].finish(),
            Var::Text | Var::Sql | Var::Ad | Var::Ssqlid | Var::Ssql => return None,
        })
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
        let file = (file.as_str(), basename.as_str(), session.as_deref());
        for v in VARIABLES {
            if let Column::Of { .. } = v.column {
                cols.extend(self.column(v.field, n, file));
            }
        }
        // The columns match the schema field for field: a mismatch is a
        // bug in this file, caught by every test that exports a call.
        RecordBatch::try_new(self.schema.clone(), cols).expect("calls columns match their schema")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    fn staged(nulls: u32) -> Staged {
        Staged {
            nulls,
            ..Staged::EMPTY
        }
    }

    /// Bit by bit, as the definition says.
    fn by_bits(block: &[Staged]) -> [u64; NULLABLE] {
        std::array::from_fn(|k| {
            block
                .iter()
                .enumerate()
                .fold(0, |w, (i, r)| w | u64::from(r.nulls >> k & 1 == 0) << i)
        })
    }

    #[test]
    fn validity_by_kinds_of_row_or_bit_by_bit() {
        // Three kinds of row, as a trace has.
        let few: Vec<Staged> = (0..64u32)
            .map(|i| staged([0b1010, 0x3ff_0000, 0][i as usize % 3]))
            .collect();
        assert_eq!(validity(&few), by_bits(&few));
        // More kinds than are kept apart: bit by bit.
        let many: Vec<Staged> = (0..64u32).map(|i| staged(i * 0x0101_0101)).collect();
        assert_eq!(validity(&many), by_bits(&many));
        // A block that is not full.
        assert_eq!(validity(&few[..5]), by_bits(&few[..5]));
    }

    #[test]
    fn validity_words_join_across_blocks_that_are_not_full() {
        let mut col = Ints::new();
        let mut expect = Vec::new();
        // Blocks of 5, 64, 3 and 60 rows: the later ones start mid-word.
        for (n, bits) in [
            (5usize, 0b10110u64),
            (64, 0xf0f0_0000_ffff_0001),
            (3, 0b101),
            (60, 1 << 59),
        ] {
            col.values.extend(std::iter::repeat_n(0, n));
            col.push_valid(bits, n);
            expect.extend((0..n).map(|i| bits >> i & 1 == 1));
        }
        let (_, nulls) = col.take();
        let nulls = nulls.expect("some rows are null");
        let got: Vec<bool> = (0..expect.len()).map(|i| nulls.is_valid(i)).collect();
        assert_eq!(got, expect);
        assert_eq!(nulls.null_count(), expect.iter().filter(|v| !**v).count());
    }

    #[test]
    fn the_schema_is_the_variables_columns_in_their_order() {
        let names: Vec<String> = schema(true)
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        // The table as it was written out by hand before the list.
        let expected = "file_id file basename line session call name dep depmin cursor sqlid hv \
             oct uid lid parse_id exec_id island_id af dur e c ela tim start_time end_time r p \
             cr cu mis og plh type bytes rlbk rd_only p1 p2 p3 obj binds";
        assert_eq!(names.join(" "), expected);
        // Every column is built, in that order, with its type.
        let batch = CallColumns::new(true).finish();
        assert_eq!(batch.schema(), schema(true));
        let plain = schema(false);
        let nullable: Vec<&str> = plain
            .fields()
            .iter()
            .filter(|f| !f.is_nullable())
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(
            nullable,
            [
                "file",
                "basename",
                "line",
                "call",
                "name",
                "depmin",
                "parse_id",
                "exec_id",
                "island_id",
                "af",
                "dur"
            ]
        );
    }

    #[test]
    fn strings_keep_their_nulls() {
        let mut s = Strs::with_capacity(4, 16);
        s.push("a");
        s.null();
        s.push_bytes(b"bc");
        s.null();
        let a = s.finish();
        let got: Vec<Option<&str>> = a.iter().collect();
        assert_eq!(got, vec![Some("a"), None, Some("bc"), None]);
        s.push("d");
        assert_eq!(s.finish().null_count(), 0);
    }
}
