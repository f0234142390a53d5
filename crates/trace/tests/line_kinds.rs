//! `ReadOptions::line_kinds`: a consumer of `all_lines` that leaves out SQL
//! text or the details of BINDS blocks gets every other line and every call
//! exactly as before, and none of the lines it left out.

use tracelab_trace::{CallKind, LineKinds, ReadOptions, Reader, TraceFile};

/// A statement with two lines of text, a BINDS block with the details
/// Oracle writes (and a NULL bind), a quoted value that runs over lines in
/// a second block, a STAT line, a PARSE ERROR with its text, and calls.
const TRACE: &str = "\
Trace file /u01/x_ora_1.trc
*** 2022-09-01T17:39:34.556684-07:00
=====================
PARSING IN CURSOR #1 len=40 dep=0 uid=108 oct=3 lid=108 tim=1000 hv=1 ad='7' sqlid='abc'
select :a, :b
  from dual
END OF STMT
PARSE #1:c=1,e=1,p=0,cr=0,cu=0,mis=1,r=0,dep=0,og=1,plh=0,tim=1001
BINDS #1:

 Bind#0
  oacdty=01 mxl=32(30) mxlc=00 mal=00 scl=00 pre=00
  oacflg=00 fl2=1000000 frm=01 csi=873 siz=64 off=0
  kxsbbbfp=7f5c3bdd1fa0  bln=32  avl=02  flg=05
  value=\"42\"
 Bind#1
  No oacdef for this bind.
EXEC #1:c=2,e=2,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1003
WAIT #1: nam='SQL*Net message to client' ela= 2 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1004
FETCH #1:c=3,e=3,p=0,cr=1,cu=0,mis=0,r=1,dep=0,og=1,plh=1,tim=1007
STAT #1 id=1 cnt=1 pid=0 pos=1 obj=0 op='FAST DUAL  (cr=0 pr=0 pw=0 str=1 time=1 us cost=2 size=0 card=1)'
BINDS #1:
 Bind#0
  oacdty=01 mxl=32(30) mxlc=00 mal=00 scl=00 pre=00
  value=\"two
  oacdty=99 lines\"
  kxsbbbfp=7f5c3bdd1fa0  bln=32  avl=02  flg=05
 Bind#1
  value=7
EXEC #1:c=2,e=2,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1010
PARSE ERROR #2:len=12 dep=0 uid=108 oct=3 lid=108 tim=1011 err=942
select nope
from nowhere
CLOSE #1:c=0,e=1,dep=0,type=0,tim=1012
";

/// Every record a read hands out: (kind, line number, text).
fn read(kinds: LineKinds) -> Vec<(CallKind, u64, String)> {
    let opts = ReadOptions {
        all_lines: true,
        line_kinds: kinds,
        ..ReadOptions::default()
    };
    let file = TraceFile::from_reader("kinds.trc", std::io::Cursor::new(TRACE.as_bytes()));
    let mut out = Vec::new();
    Reader::new(opts)
        .read(file, |c| {
            out.push((c.kind, c.line, String::from_utf8_lossy(c.text).into_owned()))
        })
        .unwrap();
    out
}

/// The lines of `TRACE` with these 1-based numbers.
fn numbered(lines: &[u64]) -> Vec<(u64, String)> {
    let all: Vec<&str> = TRACE.lines().collect();
    lines
        .iter()
        .map(|&n| (n, all[n as usize - 1].to_string()))
        .collect()
}

fn non_calls(records: &[(CallKind, u64, String)]) -> Vec<(u64, String)> {
    records
        .iter()
        .filter(|r| r.0 == CallKind::Line)
        .map(|r| (r.1, r.2.clone()))
        .collect()
}

fn calls(records: &[(CallKind, u64, String)]) -> Vec<(CallKind, u64, String)> {
    records
        .iter()
        .filter(|r| r.0 != CallKind::Line)
        .cloned()
        .collect()
}

#[test]
fn every_line_by_default() {
    assert_eq!(ReadOptions::default().line_kinds, LineKinds::ALL);
    let all = read(LineKinds::ALL);
    let calls: Vec<u64> = calls(&all).iter().map(|r| r.1).collect();
    assert_eq!(calls, [8, 18, 19, 20, 30, 34]);
    let lines = non_calls(&all);
    let want: Vec<u64> = (1..=TRACE.lines().count() as u64)
        .filter(|n| !calls.contains(n))
        .collect();
    assert_eq!(lines, numbered(&want));
}

#[test]
fn without_sql_text() {
    let all = read(LineKinds::ALL);
    let lean = read(LineKinds {
        sql_text: false,
        bind_details: true,
    });
    assert_eq!(calls(&lean), calls(&all));
    // The statement's two lines and END OF STMT, PARSE ERROR's two lines.
    let left_out = [5, 6, 7, 32, 33];
    let want: Vec<(u64, String)> = non_calls(&all)
        .into_iter()
        .filter(|(n, _)| !left_out.contains(n))
        .collect();
    assert_eq!(non_calls(&lean), want);
}

#[test]
fn without_bind_details() {
    let all = read(LineKinds::ALL);
    let lean = read(LineKinds {
        sql_text: true,
        bind_details: false,
    });
    assert_eq!(calls(&lean), calls(&all));
    // The first block's blank line, metadata and "No oacdef"; in the
    // second, the metadata before the value that runs over lines (after
    // it, the block is handed out whole).
    let left_out = [10, 12, 13, 14, 17, 24];
    let want: Vec<(u64, String)> = non_calls(&all)
        .into_iter()
        .filter(|(n, _)| !left_out.contains(n))
        .collect();
    assert_eq!(non_calls(&lean), want);
    // What a consumer of bind values reads is all there.
    let kept = non_calls(&lean);
    for n in [9, 11, 15, 16, 21, 22, 23, 25, 26, 27, 28, 29] {
        assert!(kept.iter().any(|(k, _)| *k == n), "line {n} left out");
    }
}

/// The bind values a reader collects, one list per EXEC: the value of
/// each `Bind#n`, `None` for a bind without one, the quoted value that
/// runs over lines joined, and a value a damaged dump wrote on the
/// `Bind#n` line itself; detail lines that start like `value=` or
/// `Bind#` (`valx=`, `Bindings`) are no values.
#[test]
fn bind_values_of_each_execution() {
    let damaged = TRACE.replace(
        " Bind#1\n  value=7\n",
        " Bind#1 dty=2 value=7\n  valx=8\n Bindings=9\n Bind#2\n  value=\"\"\n",
    );
    assert_ne!(damaged, TRACE);
    let opts = ReadOptions {
        binds: true,
        ..ReadOptions::default()
    };
    let mut execs = Vec::new();
    for text in [TRACE, damaged.as_str()] {
        let file =
            TraceFile::from_reader("binds.trc", std::io::Cursor::new(text.as_bytes().to_vec()));
        let mut got = Vec::new();
        Reader::new(opts.clone())
            .read(file, |c| {
                if c.kind == CallKind::Exec {
                    let values: Vec<Option<String>> = c
                        .binds
                        .iter()
                        .map(|b| b.as_deref().map(str::to_string))
                        .collect();
                    got.push(values);
                }
            })
            .unwrap();
        execs.push(got);
    }
    let s = |v: &str| Some(v.to_string());
    let first = vec![s("\"42\""), None];
    assert_eq!(
        execs[0],
        [first.clone(), vec![s("\"two\n  oacdty=99 lines\""), s("7")]]
    );
    assert_eq!(
        execs[1],
        [
            first,
            vec![s("\"two\n  oacdty=99 lines\""), s("7"), s("\"\"")]
        ]
    );
}
