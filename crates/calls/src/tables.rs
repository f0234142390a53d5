//! The two small tables beside the calls: `statements` (each statement's
//! text once, joined to the calls by `sqlid`) and `files` (one row per
//! input file: its header facts and what the export found in it).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use tracelab_trace::Statement;

use crate::header::Header;
use crate::FileOutcome;

/// One statement's row.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementRow {
    pub hv: Option<i64>,
    pub oct: Option<i64>,
    pub text: String,
    /// A cursor whose PARSING IN CURSOR the trace does not hold: its
    /// `sqlid` and text are mrskew's `#<cursor>:<file>` placeholder.
    pub placeholder: bool,
}

impl StatementRow {
    pub fn of(s: &Statement) -> StatementRow {
        StatementRow {
            hv: s.hv,
            oct: s.oct,
            text: s.sql.clone(),
            placeholder: s.placeholder,
        }
    }
}

/// Statements by `sqlid`: the key the calls carry.
pub type Statements = BTreeMap<String, StatementRow>;

pub fn statements_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("sqlid", DataType::Utf8, false),
        Field::new("hv", DataType::Int64, true),
        Field::new("oct", DataType::Int64, true),
        Field::new("text", DataType::Utf8, false),
        Field::new("placeholder", DataType::Boolean, false),
    ]))
}

pub fn statements_batch(s: &Statements) -> RecordBatch {
    let mut sqlid = StringBuilder::new();
    let mut hv = Int64Builder::new();
    let mut oct = Int64Builder::new();
    let mut text = StringBuilder::new();
    let mut placeholder = BooleanBuilder::new();
    for (id, row) in s {
        sqlid.append_value(id);
        hv.append_option(row.hv);
        oct.append_option(row.oct);
        text.append_value(&row.text);
        placeholder.append_value(row.placeholder);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(sqlid.finish()),
        Arc::new(hv.finish()),
        Arc::new(oct.finish()),
        Arc::new(text.finish()),
        Arc::new(placeholder.finish()),
    ];
    RecordBatch::try_new(statements_schema(), cols).expect("statements columns match their schema")
}

pub fn files_schema() -> SchemaRef {
    use DataType::{Int64, Utf8};
    let s = |n: &str| Field::new(n, Utf8, true);
    let i = |n: &str| Field::new(n, Int64, true);
    Arc::new(Schema::new(vec![
        Field::new("file_id", DataType::Int32, false),
        Field::new("file", Utf8, false),
        s("basename"),
        s("compression"),
        s("skipped"),
        Field::new("warnings", Int64, false),
        Field::new("lines", Int64, false),
        Field::new("calls", Int64, false),
        Field::new("rows", Int64, false),
        Field::new("depmin", Int64, false),
        s("trace_name"),
        s("banner"),
        s("version"),
        s("host"),
        s("instance"),
        i("pid"),
        s("session"),
        s("service"),
        s("module"),
        s("action"),
        s("client_id"),
        Field::new(
            "start_time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            true,
        ),
        Field::new("utc_offset_s", DataType::Int32, true),
        i("tim_offset_us"),
    ]))
}

pub fn files_batch(files: &[FileOutcome]) -> RecordBatch {
    let mut file_id = Int32Builder::new();
    let mut strs: Vec<StringBuilder> = (0..14).map(|_| StringBuilder::new()).collect();
    let mut ints: Vec<Int64Builder> = (0..5).map(|_| Int64Builder::new()).collect();
    let mut pid = Int64Builder::new();
    let mut start = TimestampMicrosecondBuilder::new().with_timezone("+00:00");
    let mut utc_offset = Int32Builder::new();
    let mut tim_offset = Int64Builder::new();
    let none = Header::default();
    for f in files {
        let h = f.header.as_ref().unwrap_or(&none);
        file_id.append_value(f.file_id);
        let [file, basename, compression, skipped] = [0, 1, 2, 3];
        strs[file].append_value(&f.name);
        strs[basename].append_option(f.basename.as_deref());
        strs[compression].append_option(f.compression.as_deref());
        strs[skipped].append_option(f.skipped.as_deref());
        for (b, v) in
            ints.iter_mut()
                .zip([f.warnings.total, f.lines, f.calls, f.rows, f.depmin as u64])
        {
            b.append_value(v as i64);
        }
        for (b, v) in
            strs[4..]
                .iter_mut()
                .zip([&h.trace_name, &h.banner, &h.version, &h.host, &h.instance])
        {
            b.append_option(v.as_deref());
        }
        pid.append_option(h.pid);
        for (b, v) in
            strs[9..]
                .iter_mut()
                .zip([&h.session, &h.service, &h.module, &h.action, &h.client_id])
        {
            b.append_option(v.as_deref());
        }
        start.append_option(h.wall_us);
        utc_offset.append_option(h.utc_offset_s);
        tim_offset.append_option(h.tim_offset_us);
    }
    let mut cols: Vec<ArrayRef> = vec![Arc::new(file_id.finish())];
    let mut strs = strs
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef);
    cols.extend(strs.by_ref().take(4));
    cols.extend(ints.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    cols.extend(strs.by_ref().take(5));
    cols.push(Arc::new(pid.finish()));
    cols.extend(strs);
    cols.push(Arc::new(start.finish()));
    cols.push(Arc::new(utc_offset.finish()));
    cols.push(Arc::new(tim_offset.finish()));
    RecordBatch::try_new(files_schema(), cols).expect("files columns match their schema")
}
