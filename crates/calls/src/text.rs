//! CSV and JSON lines from Arrow batches, written with the `csv` crate and
//! serde_json rather than arrow-csv and arrow-json: those two pull in
//! arrow-cast and arrow-ord (and lexical-core, ...), which Parquet's
//! writer does not need and which took about a sixth of the release
//! build's time (docs/performance.md, "Building tracelab").
//!
//! The text is byte for byte what arrow-csv 60 and arrow-json 60 wrote
//! (the unit tests hold their output for awkward values), so files and
//! scripts made before read the same:
//! - integers and booleans as Rust prints them (`-7`, `true`);
//! - timestamps (µs, UTC) in RFC 3339 with `Z` and 0, 3 or 6 decimals,
//!   as few as the value needs (`2018-04-05T18:18:44.341Z`): chrono's
//!   `to_rfc3339_opts(SecondsFormat::AutoSi, true)`, arrow's display;
//! - strings in CSV quoted only when they must be (a comma, quote or line
//!   break; quotes doubled), in JSON escaped by serde_json, the routine
//!   arrow-json calls;
//! - a null: an empty CSV field; a key left out of the JSON object (an
//!   empty string is an empty field too in CSV: only JSON tells them
//!   apart);
//! - a list of strings (the bind values): a JSON array (`["1",null]`),
//!   in CSV as that text in one field.
//!
//! A JSON line is put together here rather than through a
//! `serde_json::Value` per row: the keys are escaped once per batch, a
//! null's key is left out, and no map is built for each of millions of
//! rows. Only the column types the tables have are written; another is an
//! error naming the column.

use std::io::Write;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{
    Array, BooleanArray, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, TimeUnit};
use chrono::{DateTime, SecondsFormat};

/// One column of a batch, typed once per batch.
enum Col<'a> {
    I32(&'a Int32Array),
    I64(&'a Int64Array),
    Bool(&'a BooleanArray),
    Str(&'a StringArray),
    /// µs since the epoch, UTC.
    Time(&'a TimestampMicrosecondArray),
    StrList(&'a ListArray, &'a StringArray),
}

fn columns(batch: &RecordBatch) -> Result<Vec<Col<'_>>, String> {
    let schema = batch.schema_ref();
    schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, a)| {
            Ok(match a.data_type() {
                DataType::Int32 => Col::I32(a.as_primitive::<Int32Type>()),
                DataType::Int64 => Col::I64(a.as_primitive::<Int64Type>()),
                DataType::Boolean => Col::Bool(a.as_boolean()),
                DataType::Utf8 => Col::Str(a.as_string::<i32>()),
                DataType::Timestamp(TimeUnit::Microsecond, Some(tz))
                    if matches!(tz.as_ref(), "+00:00" | "UTC" | "Z") =>
                {
                    Col::Time(a.as_primitive::<TimestampMicrosecondType>())
                }
                DataType::List(item) if item.data_type() == &DataType::Utf8 => {
                    let list = a.as_list::<i32>();
                    Col::StrList(list, list.values().as_string::<i32>())
                }
                t => return Err(format!("column {}: no text form for type {t}", f.name())),
            })
        })
        .collect()
}

/// Appends row `row` of `col` to `out`, as text for CSV (`json`: false)
/// or as a JSON value; nothing for a null.
fn value(col: &Col<'_>, row: usize, json: bool, out: &mut Vec<u8>) -> Result<(), String> {
    let mut int = itoa::Buffer::new();
    match col {
        Col::I32(a) => out.extend_from_slice(int.format(a.value(row)).as_bytes()),
        Col::I64(a) => out.extend_from_slice(int.format(a.value(row)).as_bytes()),
        Col::Bool(a) => out.extend_from_slice(if a.value(row) { b"true" } else { b"false" }),
        Col::Str(a) if json => json_string(a.value(row), out),
        Col::Str(a) => out.extend_from_slice(a.value(row).as_bytes()),
        Col::Time(a) => {
            let us = a.value(row);
            let t = DateTime::from_timestamp_micros(us)
                .ok_or_else(|| format!("timestamp {us} µs is out of range"))?;
            let text = t.to_rfc3339_opts(SecondsFormat::AutoSi, true);
            if json {
                json_string(&text, out);
            } else {
                out.extend_from_slice(text.as_bytes());
            }
        }
        Col::StrList(list, items) => {
            let offsets = list.value_offsets();
            out.push(b'[');
            for j in offsets[row] as usize..offsets[row + 1] as usize {
                if j > offsets[row] as usize {
                    out.push(b',');
                }
                if items.is_null(j) {
                    out.extend_from_slice(b"null");
                } else {
                    json_string(items.value(j), out);
                }
            }
            out.push(b']');
        }
    }
    Ok(())
}

fn json_string(s: &str, out: &mut Vec<u8>) {
    // Writing to a Vec cannot fail.
    serde_json::to_writer(out, s).expect("a string serializes");
}

fn is_null(col: &Col<'_>, row: usize) -> bool {
    match col {
        Col::I32(a) => a.is_null(row),
        Col::I64(a) => a.is_null(row),
        Col::Bool(a) => a.is_null(row),
        Col::Str(a) => a.is_null(row),
        Col::Time(a) => a.is_null(row),
        Col::StrList(a, _) => a.is_null(row),
    }
}

/// A CSV table: the header (the column names) before the first batch's
/// rows, as arrow-csv wrote it (so a table that gets no batch is an
/// empty file).
pub struct CsvWriter<W: Write> {
    csv: csv::Writer<W>,
    header_written: bool,
    record: csv::ByteRecord,
    field: Vec<u8>,
}

impl<W: Write> CsvWriter<W> {
    pub fn new(w: W) -> CsvWriter<W> {
        // arrow-csv's settings, the csv crate's defaults.
        let csv = csv::WriterBuilder::new()
            .delimiter(b',')
            .quote(b'"')
            .quote_style(csv::QuoteStyle::Necessary)
            .double_quote(true)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(w);
        CsvWriter {
            csv,
            header_written: false,
            record: csv::ByteRecord::new(),
            field: Vec::new(),
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let cols = columns(batch)?;
        if !self.header_written {
            let names = batch.schema_ref().fields().iter().map(|f| f.name());
            self.csv.write_record(names).map_err(|e| e.to_string())?;
            self.header_written = true;
        }
        for row in 0..batch.num_rows() {
            self.record.clear();
            for c in &cols {
                self.field.clear();
                if !is_null(c, row) {
                    value(c, row, false, &mut self.field)?;
                }
                self.record.push_field(&self.field);
            }
            self.csv
                .write_byte_record(&self.record)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Flushes what is buffered and hands back the writer.
    pub fn finish(self) -> Result<W, String> {
        self.csv.into_inner().map_err(|e| e.error().to_string())
    }
}

/// A JSON-lines table: one object per row, keys in column order, nulls
/// left out.
pub struct JsonlWriter<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> JsonlWriter<W> {
    pub fn new(out: W) -> JsonlWriter<W> {
        JsonlWriter {
            out,
            line: Vec::new(),
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        let cols = columns(batch)?;
        // Each key as `"name":`, escaped once per batch.
        let keys: Vec<Vec<u8>> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| {
                let mut k = Vec::new();
                json_string(f.name(), &mut k);
                k.push(b':');
                k
            })
            .collect();
        for row in 0..batch.num_rows() {
            self.line.clear();
            self.line.push(b'{');
            let mut first = true;
            for (c, key) in cols.iter().zip(&keys) {
                if is_null(c, row) {
                    continue;
                }
                if !first {
                    self.line.push(b',');
                }
                first = false;
                self.line.extend_from_slice(key);
                value(c, row, true, &mut self.line)?;
            }
            self.line.extend_from_slice(b"}\n");
            self.out.write_all(&self.line).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Flushes what is buffered and hands back the writer.
    pub fn finish(mut self) -> Result<W, String> {
        self.out.flush().map_err(|e| e.to_string())?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::TimestampMicrosecondArray;
    use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// Awkward values of every column type the tables have, 24 rows, each
    /// column cycling through its list (`None`: null).
    pub(crate) fn awkward() -> RecordBatch {
        const ROWS: usize = 24;
        fn cycle<T: Clone>(v: &[T]) -> Vec<T> {
            (0..ROWS).map(|i| v[i % v.len()].clone()).collect()
        }
        let i32s = cycle(&[
            Some(0),
            Some(-1),
            Some(i32::MIN),
            Some(i32::MAX),
            None,
            Some(7),
        ]);
        let i64s = cycle(&[
            Some(0),
            Some(i64::MIN),
            Some(i64::MAX),
            Some(-42),
            None,
            Some(1_000_000_000_000),
            Some(5),
        ]);
        let bools = cycle(&[Some(true), Some(false), None]);
        let strs = cycle(&[
            Some(""),
            Some("plain"),
            Some("a,b"),
            Some("say \"hi\""),
            Some("line\nbreak"),
            Some("cr\rlf\r\n"),
            Some("tab\there"),
            Some(" lead and trail "),
            Some("ünïcödé ✓ 🦀"),
            Some("nul\u{0}byte"),
            Some("\u{1b}[0m esc \u{7f} del \u{8} bs \u{c} ff"),
            Some("\u{2028}sep\u{2029}\u{85}"),
            Some("back\\slash \\\" both"),
            Some("'single' \"\""),
            Some("#hash;semi|pipe"),
            Some("null"),
            Some("\""),
            Some("\u{FFFD} not UTF-8 in the trace"),
            None,
            Some("</script>"),
            Some("\u{1}\u{1f}"),
        ]);
        let times = cycle(&[
            Some(0),
            Some(1),
            Some(1_000),
            Some(1_000_000),
            Some(-1),
            Some(1_522_977_524_340_998),
            Some(1_522_977_524_341_000),
            Some(1_522_977_524_000_000),
            None,
            Some(253_402_300_799_999_999),
            Some(-62_135_596_800_000_000),
            Some(1_693_436_742_075_026),
            Some(-1_000_001),
        ]);
        let lists: Vec<Option<Vec<Option<&str>>>> = cycle(&[
            Some(vec![]),
            None,
            Some(vec![Some("1")]),
            Some(vec![Some("a,b"), Some("x\"y"), None]),
            Some(vec![Some("")]),
            Some(vec![Some("\n"), Some("'abc'"), Some("\\")]),
            Some(vec![None]),
            Some(vec![Some("ünï 🦀"), Some("\u{0}\u{1f}")]),
        ]);
        let mut list = ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new(
            "item",
            DataType::Utf8,
            true,
        )));
        for l in &lists {
            match l {
                None => list.append_null(),
                Some(items) => {
                    for i in items {
                        list.values().append_option(*i);
                    }
                    list.append(true);
                }
            }
        }
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let schema = Schema::new(vec![
            Field::new("i32", DataType::Int32, true),
            Field::new("i64", DataType::Int64, true),
            Field::new("flag", DataType::Boolean, true),
            Field::new("text", DataType::Utf8, true),
            Field::new("a \"quoted\", name", DataType::Utf8, true),
            Field::new("time", utc, true),
            Field::new(
                "binds",
                DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
                true,
            ),
        ]);
        let reversed: Vec<Option<&str>> = strs.iter().rev().cloned().collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(i32s)),
            Arc::new(Int64Array::from(i64s)),
            Arc::new(BooleanArray::from(bools)),
            Arc::new(StringArray::from(strs)),
            Arc::new(StringArray::from(reversed)),
            Arc::new(TimestampMicrosecondArray::from(times).with_timezone("+00:00")),
            Arc::new(list.finish()),
        ];
        RecordBatch::try_new(Arc::new(schema), cols).unwrap()
    }

    /// The batch in two (a table's rows come in several batches; the
    /// header is written once).
    fn batches() -> Vec<RecordBatch> {
        let b = awkward();
        vec![b.slice(0, 10), b.slice(10, 0), b.slice(10, 14)]
    }

    fn csv_text(batches: &[RecordBatch]) -> Vec<u8> {
        let mut w = CsvWriter::new(Vec::new());
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap()
    }

    fn jsonl_text(batches: &[RecordBatch]) -> Vec<u8> {
        let mut w = JsonlWriter::new(Vec::new());
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap()
    }

    /// What arrow-csv 60 and arrow-json 60 wrote for [`batches`] (kept
    /// from a run of those writers before they were replaced).
    const ARROW_CSV: &[u8] = include_bytes!("../tests/data/awkward.csv");
    const ARROW_JSONL: &[u8] = include_bytes!("../tests/data/awkward.jsonl");

    #[test]
    fn csv_as_arrow_csv_wrote_it() {
        let text = csv_text(&batches());
        assert_eq!(
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(ARROW_CSV)
        );
        assert_eq!(text, ARROW_CSV);
    }

    #[test]
    fn jsonl_as_arrow_json_wrote_it() {
        let text = jsonl_text(&batches());
        assert_eq!(
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(ARROW_JSONL)
        );
        assert_eq!(text, ARROW_JSONL);
    }

    /// Each JSON line is an object serde_json reads back.
    #[test]
    fn jsonl_lines_parse() {
        let text = String::from_utf8(jsonl_text(&batches())).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), awkward().num_rows());
        for l in lines {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v.is_object(), "{l}");
        }
    }

    #[test]
    fn a_table_without_batches_is_an_empty_file() {
        assert_eq!(csv_text(&[]), b"");
        assert_eq!(jsonl_text(&[]), b"");
    }

    #[test]
    fn a_timestamp_out_of_chrono_range_is_an_error() {
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let b = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("t", utc, false)])),
            vec![Arc::new(
                TimestampMicrosecondArray::from(vec![i64::MAX]).with_timezone("+00:00"),
            )],
        )
        .unwrap();
        let e = CsvWriter::new(Vec::new()).write(&b).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        let e = JsonlWriter::new(Vec::new()).write(&b).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn another_type_is_an_error_naming_the_column() {
        let b = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("f", DataType::Float64, false)])),
            vec![Arc::new(arrow_array::Float64Array::from(vec![1.5]))],
        )
        .unwrap();
        let e = CsvWriter::new(Vec::new()).write(&b).unwrap_err();
        assert!(e.contains("column f"), "{e}");
    }
}
