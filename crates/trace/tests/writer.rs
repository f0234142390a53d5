//! What the writer writes, the reader reads back: the same calls, times,
//! statements, binds and waits.

use proptest::prelude::*;
use tracelab_trace::{
    sqlid, CallKind, CallTimes, Header, ReadOptions, Reader, TraceFile, TraceWriter,
};

#[derive(Debug, Clone)]
enum Op {
    Parse(u64, String, i64),
    Binds(u64, Vec<Option<String>>),
    Exec(u64, i64, i64),
    Fetch(u64, i64, i64),
    Wait(u64, String, i64),
    Close(u64),
    Commit,
}

fn header() -> Header<'static> {
    Header {
        name: "client-1.trc",
        engine: "postgres",
        side: "client",
        timer: "vdso",
        started: "2026-11-21T17:00:00.000000+00:00",
    }
}

/// Writes `ops`, each call ending 10 µs after the previous one.
fn write(ops: &[Op]) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    let mut tim = 1_000_000;
    for op in ops {
        tim += 10;
        let t = |c, e, r, dep| CallTimes { c, e, r, dep, tim };
        match op {
            Op::Parse(cur, sql, dep) => w.parse(*cur, sql, 3, t(1, 2, 0, *dep)).unwrap(),
            Op::Binds(cur, v) => {
                let v: Vec<Option<&str>> = v.iter().map(|x| x.as_deref()).collect();
                w.binds(*cur, &v).unwrap()
            }
            Op::Exec(cur, c, e) => w.exec(*cur, t(*c, *e, 0, 0)).unwrap(),
            Op::Fetch(cur, c, r) => w.fetch(*cur, t(*c, *c + 1, *r, 0)).unwrap(),
            Op::Wait(cur, name, ela) => w
                .wait(
                    *cur,
                    name,
                    *ela,
                    [("driver id", 0), ("#bytes", 1), ("p3", 0)],
                    tim,
                )
                .unwrap(),
            Op::Close(cur) => w.close(*cur, t(0, 1, 0, 0)).unwrap(),
            Op::Commit => w.xctend(false, false, tim).unwrap(),
        }
    }
    w.into_inner().unwrap()
}

type Seen = (CallKind, String, i64, i64, String, Vec<Option<String>>);

fn read(bytes: Vec<u8>) -> Vec<Seen> {
    let mut v = Vec::new();
    Reader::new(ReadOptions {
        binds: true,
        ..ReadOptions::default()
    })
    .read(
        TraceFile::from_reader("client-1.trc", std::io::Cursor::new(bytes)),
        |c| {
            v.push((
                c.kind,
                c.name.to_string(),
                c.af_us(),
                c.dur_us(),
                c.stmt.sqlid.clone(),
                c.binds
                    .iter()
                    .map(|b| b.as_deref().map(String::from))
                    .collect(),
            ))
        },
    )
    .unwrap();
    v
}

/// A session that made no call (a failed login, a cancel request) still
/// wrote a SQL trace: read back, it is empty, not "another kind of trace".
#[test]
fn a_session_without_calls_reads_back_empty() {
    assert_eq!(read(write(&[])), Vec::<Seen>::new());
}

#[test]
fn a_session_reads_back() {
    let sql = "select * from chair where chair = $1";
    let ops = vec![
        Op::Wait(1, "SQL*Net message from client".into(), 500),
        Op::Parse(1, sql.into(), 0),
        Op::Binds(1, vec![Some("42".into()), None]),
        Op::Exec(1, 30, 40),
        Op::Fetch(1, 5, 1),
        Op::Close(1),
        Op::Commit,
    ];
    let got = read(write(&ops));
    let names: Vec<&str> = got.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "SQL*Net message from client",
            "PARSE",
            "EXEC",
            "FETCH",
            "CLOSE",
            "XCTEND"
        ]
    );
    let exec = &got[2];
    assert_eq!((exec.2, exec.3), (30, 40));
    assert_eq!(exec.4, sqlid(sql).0);
    assert_eq!(exec.5, vec![Some("\"42\"".to_string()), None]);
    assert_eq!(got[0].2, 500);
}

fn op() -> impl Strategy<Value = Op> {
    let cur = 1u64..4;
    prop_oneof![
        (cur.clone(), "[a-z ()$1=*]{1,40}", 0i64..3).prop_map(|(c, s, d)| Op::Parse(
            c,
            format!("select {s}"),
            d
        )),
        (
            cur.clone(),
            proptest::collection::vec(proptest::option::of("[a-z0-9 ]{0,8}"), 0..4)
        )
            .prop_map(|(c, v)| Op::Binds(c, v)),
        (cur.clone(), 0i64..1000, 0i64..1000).prop_map(|(c, x, e)| Op::Exec(c, x, e)),
        (cur.clone(), 0i64..1000, 0i64..100).prop_map(|(c, x, r)| Op::Fetch(c, x, r)),
        (cur.clone(), "[A-Za-z*: ]{1,30}", 0i64..100000).prop_map(|(c, n, e)| Op::Wait(c, n, e)),
        cur.prop_map(Op::Close),
        Just(Op::Commit),
    ]
}

proptest! {
    #[test]
    fn any_session_reads_back(ops in proptest::collection::vec(op(), 1..60)) {
        let got = read(write(&ops));
        let want: usize = ops.iter().filter(|o| !matches!(o, Op::Binds(..))).count();
        prop_assert_eq!(got.len(), want);
        // Every call's duration is what was written.
        let mut i = 0;
        for o in &ops {
            match o {
                Op::Binds(..) => continue,
                Op::Exec(_, c, e) => prop_assert_eq!((got[i].2, got[i].3), (*c, *e)),
                Op::Wait(_, n, e) => {
                    prop_assert_eq!(&got[i].1, n);
                    prop_assert_eq!(got[i].2, *e);
                }
                _ => {}
            }
            i += 1;
        }
    }
}
