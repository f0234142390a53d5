//! `Reader::read_until`: a consumer that has what it wants stops the read;
//! the lines after are not read, and a file that is no SQL trace is still
//! refused.

use std::ops::ControlFlow;

use tracelab_trace::{ReadError, ReadOptions, Reader, TraceFile};

const TRACE: &str = "\
Trace file /u01/x_ora_1.trc
*** 2022-09-01T17:39:34.556684-07:00
=====================
PARSING IN CURSOR #1 len=8 dep=0 uid=108 oct=3 lid=108 tim=1000 hv=1 ad='7' sqlid='abc'
select 1
END OF STMT
PARSE #1:c=1,e=1,p=0,cr=0,cu=0,mis=1,r=0,dep=0,og=1,plh=0,tim=1001
EXEC #1:c=2,e=2,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1003
FETCH #1:c=3,e=3,p=0,cr=1,cu=0,mis=0,r=1,dep=0,og=1,plh=1,tim=1007
EXEC #1:c=oops
CLOSE #1:c=0,e=1,dep=0,type=0,tim=1012
";

fn read_until(text: &str, stop_at: u64) -> Result<(Vec<u64>, u64, u64), ReadError> {
    let file = TraceFile::from_reader("x.trc", std::io::Cursor::new(text.as_bytes().to_vec()));
    let mut seen = Vec::new();
    let summary = Reader::new(ReadOptions {
        all_lines: true,
        ..ReadOptions::default()
    })
    .read_until(file, |c| {
        seen.push(c.line);
        if c.line >= stop_at {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok((seen, summary.lines, summary.diagnostics.total))
}

#[test]
fn the_read_ends_where_the_consumer_stops_it() {
    // Stopped at line 8: the damaged line 10 is neither read nor warned
    // about.
    let (seen, lines, warnings) = read_until(TRACE, 8).unwrap();
    assert_eq!(seen, (1..=8).collect::<Vec<_>>());
    assert_eq!((lines, warnings), (8, 0));
    // Asked to stop in the header: reading goes on to the PARSING IN
    // CURSOR line, which shows the file is a SQL trace.
    let (seen, lines, _) = read_until(TRACE, 1).unwrap();
    assert_eq!((seen.len(), lines), (4, 4));
    // Never stopped: the whole file, its damage warned about.
    let (seen, lines, warnings) = read_until(TRACE, u64::MAX).unwrap();
    assert_eq!((seen.len(), lines, warnings), (11, 11, 1));
}

#[test]
fn a_file_that_is_no_trace_is_refused_however_early_the_stop() {
    let text = "just\nsome\ntext\n".repeat(10);
    let e = read_until(&text, 1).unwrap_err().to_string();
    assert!(e.contains("not an Oracle extended SQL trace file"), "{e}");
}
