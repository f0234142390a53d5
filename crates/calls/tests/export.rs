//! The export read back with Parquet's own reader and checked against the
//! trace text, independently of the trace reader: every row's numbers are
//! those written on its line; header facts, statements, `$depmin` of a
//! trace that starts inside recursive SQL, and the output layouts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tracelab_calls::{export, CallsError, CallsOptions, Format, Layout, ENCODINGS};

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn read(path: &Path) -> RecordBatch {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let r = ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = r.map(Result::unwrap).collect();
    let schema = batches[0].schema();
    arrow_select_concat(&schema, &batches)
}

fn arrow_select_concat(schema: &arrow_schema::SchemaRef, b: &[RecordBatch]) -> RecordBatch {
    // Small tables: one batch, or the rows of several put together.
    if b.len() == 1 {
        return b[0].clone();
    }
    let cols = (0..schema.fields().len())
        .map(|i| {
            let parts: Vec<&dyn Array> = b.iter().map(|x| x.column(i).as_ref()).collect();
            arrow_select::concat::concat(&parts).unwrap()
        })
        .collect();
    RecordBatch::try_new(schema.clone(), cols).unwrap()
}

fn opts(output: &Path) -> CallsOptions {
    CallsOptions {
        output: output.to_path_buf(),
        ..CallsOptions::default()
    }
}

fn int(b: &RecordBatch, col: &str, row: usize) -> Option<i64> {
    let a = b.column_by_name(col).unwrap().as_primitive::<Int64Type>();
    (!a.is_null(row)).then(|| a.value(row))
}

fn text(b: &RecordBatch, col: &str, row: usize) -> Option<String> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    (!a.is_null(row)).then(|| a.value(row).to_string())
}

/// `key=value` of a trace line (`ela= 5` too), read here by hand.
fn field(line: &str, key: &str) -> Option<i64> {
    let words: Vec<&str> = line
        .split([',', ':', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    let want = format!("{key}=");
    let i = words.iter().position(|w| w.starts_with(&want))?;
    let v = match &words[i][want.len()..] {
        "" => words.get(i + 1)?,
        v => v,
    };
    v.parse().ok()
}

#[test]
fn every_row_holds_the_numbers_written_on_its_line() {
    // Binds on EXEC lines.
    let with_binds = rows_hold_their_lines(&fixture("trctools/lobread.trc"), 20);
    assert!(with_binds > 0, "no EXEC with binds checked");
    // Rows past the columns' staging of 256 rows, in several blocks.
    rows_hold_their_lines(
        &fixture("analytics-vs-groupby/oravm1_ora_26226_S1.trc"),
        2000,
    );
}

/// Checks every row exported from `trace` against its line; the rows
/// must be more than `min_rows`. Returns how many EXECs with bind values
/// were checked.
fn rows_hold_their_lines(trace: &str, min_rows: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let trace = trace.to_string();
    let mut o = opts(&out);
    o.where1 = "1".into();
    let outcome = export(&o, std::slice::from_ref(&trace), None).unwrap();
    let b = read(&out.join("calls/file_id=0/part-0.parquet"));
    assert_eq!(b.num_rows() as u64, outcome.rows);
    assert!(b.num_rows() > min_rows, "{} rows", b.num_rows());
    let lines: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let binds = b.column_by_name("binds").unwrap().as_list::<i32>();
    let mut with_binds = 0;
    for row in 0..b.num_rows() {
        let line = &lines[int(&b, "line", row).unwrap() as usize - 1];
        let call = text(&b, "call", row).unwrap();
        assert!(
            line.starts_with(&call) || (call == "WAIT" && line.starts_with("WAIT")),
            "row {row}: {call} on '{line}'"
        );
        assert_eq!(int(&b, "tim", row), field(line, "tim"), "{line}");
        if call == "WAIT" {
            assert_eq!(int(&b, "ela", row), field(line, "ela"), "{line}");
            assert_eq!(int(&b, "af", row), field(line, "ela"), "{line}");
            assert_eq!(int(&b, "e", row), None);
            assert_eq!(int(&b, "obj", row), field(line, "obj#"), "{line}");
            let name = line.split('\'').nth(1).unwrap();
            assert_eq!(text(&b, "name", row).as_deref(), Some(name));
        } else {
            assert_eq!(int(&b, "c", row), field(line, "c"), "{line}");
            assert_eq!(int(&b, "e", row), field(line, "e"), "{line}");
            assert_eq!(int(&b, "af", row), field(line, "c"), "{line}");
            assert_eq!(int(&b, "dur", row), field(line, "e"), "{line}");
            assert_eq!(int(&b, "ela", row), None);
            assert_eq!(int(&b, "dep", row), field(line, "dep"), "{line}");
            if line.starts_with("FETCH") || line.starts_with("EXEC") {
                assert_eq!(int(&b, "cr", row), field(line, "cr"), "{line}");
                assert_eq!(int(&b, "r", row), field(line, "r"), "{line}");
            }
        }
        // The last bind value of an EXEC is the value= of the last
        // Bind#n of the BINDS block before it, null when it has none.
        if call == "EXEC" && !binds.value(row).is_empty() {
            with_binds += 1;
            let v = binds.value(row);
            let v = v.as_string::<i32>();
            let last = (!v.is_null(v.len() - 1)).then(|| v.value(v.len() - 1));
            let before = &lines[..int(&b, "line", row).unwrap() as usize - 1];
            let entry = before
                .iter()
                .rposition(|l| l.trim_start().starts_with("Bind#"))
                .unwrap();
            let value = before[entry + 1..]
                .iter()
                .find_map(|l| l.trim_start().strip_prefix("value="));
            assert_eq!(value, last, "{line}");
        }
    }
    with_binds
}

#[test]
fn header_facts_and_wall_clock_times() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let crc = fixture("crc-local-force/orcl_ora_30537_RC-20230830160541-20230703160541.trc.gz");
    let ping = fixture("db-ping/cdb1_ora_15440_PINGTEST.trc");
    export(&opts(&out), &[crc.clone(), ping], None).unwrap();
    let f = read(&out.join("files.parquet"));
    assert_eq!(f.num_rows(), 2);
    let s = |c: &str, r: usize| text(&f, c, r);
    assert_eq!(s("file", 0).as_deref(), Some(crc.as_str()));
    assert_eq!(
        s("basename", 0).as_deref(),
        Some("orcl_ora_30537_RC-20230830160541-20230703160541.trc")
    );
    assert_eq!(s("compression", 0).as_deref(), Some("gzip"));
    assert_eq!(s("version", 0).as_deref(), Some("19.3.0.0.0"));
    assert_eq!(s("host", 0).as_deref(), Some("lestrade.jks.com"));
    assert_eq!(s("session", 0).as_deref(), Some("39.64812"));
    assert_eq!(s("service", 0).as_deref(), Some("orcl.jks.com"));
    assert_eq!(
        s("module", 0).as_deref(),
        Some("perl@poirot.jks.com (TNS V1-V3)")
    );
    assert_eq!(s("action", 0).as_deref(), Some(""));
    assert_eq!(s("instance", 1).as_deref(), Some("cdb1"));
    assert_eq!(s("session", 1).as_deref(), Some("1183.18399"));
    assert_eq!(s("module", 1).as_deref(), Some("SQL*Plus"));
    let off = f
        .column_by_name("utc_offset_s")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert_eq!((off.value(0), off.value(1)), (0, -7 * 3600));
    let ids = f
        .column_by_name("file_id")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert_eq!((ids.value(0), ids.value(1)), (0, 1));

    // The first call after the header's timestamp ends at that moment;
    // every call starts `dur` before it ends.
    let c = read(&out.join("calls/file_id=1/part-0.parquet"));
    let start = c
        .column_by_name("start_time")
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>();
    let end = c
        .column_by_name("end_time")
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>();
    // 2022-09-01T17:39:34.556684-07:00
    assert_eq!(end.value(0), 1_662_079_174_556_684);
    for r in 0..c.num_rows() {
        assert_eq!(end.value(r) - start.value(r), int(&c, "dur", r).unwrap());
        let tim = int(&c, "tim", r).unwrap();
        assert_eq!(
            end.value(r) - tim,
            1_662_079_174_556_684 - 9_578_274_564_137
        );
    }
    assert_eq!(text(&c, "session", 0).as_deref(), Some("1183.18399"));
}

#[test]
fn statements_hold_the_text_of_every_sqlid_the_calls_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.parquet");
    let crc = fixture("crc-local-force/orcl_ora_30537_RC-20230830160541-20230703160541.trc.gz");
    let outcome = export(&opts(&out), &[crc], None).unwrap();
    assert_eq!(outcome.layout, Some(Layout::File(out.clone())));
    let calls = read(&out);
    let st = read(&dir.path().join("x.statements.parquet"));
    assert!(dir.path().join("x.files.parquet").exists());
    let mut text_of = HashMap::new();
    for r in 0..st.num_rows() {
        text_of.insert(
            text(&st, "sqlid", r).unwrap(),
            text(&st, "text", r).unwrap(),
        );
    }
    assert_eq!(st.num_rows(), outcome.statements);
    for r in 0..calls.num_rows() {
        let id = text(&calls, "sqlid", r).unwrap();
        assert!(text_of.contains_key(&id), "{id} has no statement row");
    }
    assert!(text_of["7cmmb5pvfds2d"].starts_with("SELECT H.* FROM HOLIDAY H WHERE"));
    let ids = calls
        .column_by_name("file_id")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert!(ids.iter().all(|i| i == Some(0)));
}

/// A trace that starts inside recursive SQL: its first calls are at depth
/// 1, and only a later call shows the file's minimum depth, 0.
fn starts_recursive() -> String {
    let mut t = String::from(
        "Trace file /x/late_ora_1.trc\nOracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\n\n*** 2024-01-02T03:04:05.000006+00:00\n",
    );
    for i in 0..3 {
        t.push_str(&format!(
            "EXEC #1:c={},e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=1,plh=0,tim={}\n",
            i + 1,
            100 + i
        ));
    }
    t.push_str(
        "WAIT #1: nam='db file sequential read' ela= 7 file#=1 block#=2 blocks=1 obj#=5 tim=200\n",
    );
    t.push_str("EXEC #2:c=40,e=50,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=300\n");
    t.push_str("EXEC #2:c=60,e=70,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=400\n");
    t
}

#[test]
fn depmin_known_late_is_applied_to_the_calls_before() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("late.trc");
    std::fs::write(&trace, starts_recursive()).unwrap();
    let out = dir.path().join("x");
    let outcome = export(&opts(&out), &[trace.to_string_lossy().into_owned()], None).unwrap();
    let b = read(&out.join("calls/file_id=0/part-0.parquet"));
    // $dep==$depmin keeps the two top-level EXECs and the WAIT (no dep=,
    // 0 to Perl's ==); the recursive EXECs, judged first with a minimum
    // of 1, are dropped once the minimum proves to be 0.
    let mut got: Vec<(String, i64, i64)> = (0..b.num_rows())
        .map(|r| {
            (
                text(&b, "name", r).unwrap(),
                int(&b, "af", r).unwrap(),
                int(&b, "depmin", r).unwrap(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("EXEC".to_string(), 40, 0),
            ("EXEC".to_string(), 60, 0),
            ("db file sequential read".to_string(), 7, 0),
        ]
    );
    assert_eq!(outcome.rows, 3);
    // Wait parameters are typed: file#, block#, blocks.
    let w = (0..b.num_rows())
        .find(|&r| text(&b, "call", r).as_deref() == Some("WAIT"))
        .unwrap();
    assert_eq!(
        (
            int(&b, "p1", w),
            int(&b, "p2", w),
            int(&b, "p3", w),
            int(&b, "obj", w)
        ),
        (Some(1), Some(2), Some(1), Some(5))
    );
}

#[test]
fn layouts_formats_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    assert_eq!(
        Layout::resolve(&p("a.csv"), None).unwrap(),
        (Layout::File(p("a.csv")), Format::Csv)
    );
    assert_eq!(
        Layout::resolve(&p("out"), None).unwrap(),
        (Layout::Dir(p("out")), Format::Parquet)
    );
    assert!(matches!(
        Layout::resolve(&p("a.csv"), Some(Format::Parquet)),
        Err(CallsError::Usage(_))
    ));
    let trace = fixture("db-ping/cdb1_ora_15440_PINGTEST.trc");
    let out: PathBuf = p("again");
    export(&opts(&out), std::slice::from_ref(&trace), None).unwrap();
    match export(&opts(&out), std::slice::from_ref(&trace), None) {
        Err(CallsError::Usage(m)) => assert!(m.contains("exists"), "{m}"),
        other => panic!("a second export into {out:?} must be refused: {other:?}"),
    }
    // A filter error names the option and the column.
    let mut bad = opts(&p("bad"));
    bad.where0 = "$af < (1".into();
    let e = export(&bad, std::slice::from_ref(&trace), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--where"), "{e}");
    // A file that is not a trace is reported and the others exported.
    let junk = p("junk.trc");
    std::fs::write(&junk, "hello\n".repeat(10)).unwrap();
    let o = export(
        &opts(&p("mixed")),
        &[junk.to_string_lossy().into_owned(), trace],
        None,
    )
    .unwrap();
    assert!(o.files[0].skipped.is_some());
    assert!(o.had_trouble());
    assert!(o.files[1].rows > 0);
}

/// Each column is written as measured best for it ([`ENCODINGS`]): the
/// growing integers delta-packed, the names, paths and durations through a
/// dictionary, the ids, flags, plans, objects and wait parameters in long
/// runs plain.
#[test]
fn columns_are_encoded_as_measured_best() {
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let trace = fixture("db-ping/cdb1_ora_15440_PINGTEST.trc");
    export(&opts(&out), std::slice::from_ref(&trace), None).unwrap();
    let f = std::fs::File::open(out.join("calls/file_id=0/part-0.parquet")).unwrap();
    let meta = SerializedFileReader::new(f).unwrap().metadata().clone();
    let rg = meta.row_group(0);
    let encodings = |name: &str| -> Vec<Encoding> {
        let c = rg
            .columns()
            .iter()
            .find(|c| c.column_path().string() == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        c.encodings().collect()
    };
    assert!(ENCODINGS.delta.contains(&"line") && ENCODINGS.delta.contains(&"tim"));
    for &c in ENCODINGS.delta {
        let e = encodings(c);
        assert!(e.contains(&Encoding::DELTA_BINARY_PACKED), "{c}: {e:?}");
        assert!(!e.contains(&Encoding::RLE_DICTIONARY), "{c}: {e:?}");
    }
    for c in ["name", "call", "sqlid", "af", "ela", "file", "basename"] {
        let e = encodings(c);
        assert!(e.contains(&Encoding::RLE_DICTIONARY), "{c}: {e:?}");
    }
    assert!(ENCODINGS.plain.contains(&"parse_id") && ENCODINGS.plain.contains(&"p2"));
    for &c in ENCODINGS.plain {
        let e = encodings(c);
        assert!(
            !e.contains(&Encoding::RLE_DICTIONARY) && !e.contains(&Encoding::DELTA_BINARY_PACKED),
            "{c}: {e:?}"
        );
    }
}
