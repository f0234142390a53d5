//! A trace written by hand, every figure of its profile checked by hand:
//! a top-level statement whose PARSE runs a recursive statement, three
//! executions with binds, think time, waits inside and between calls, row
//! source plans, an error.

use tracelab_prof::{profile, FileOutcome, FileProfile, ProfOptions, P10};

const TRACE: &str = "\
Trace file /tmp/anatomy.trc
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
Version 19.12.0.0.0

*** 2024-01-01T00:00:00.000000+00:00
*** SESSION ID:(12.34) 2024-01-01T00:00:00.000000+00:00
WAIT #0: nam='SQL*Net message from client' ela= 2000000 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1000000
=====================
PARSING IN CURSOR #2 len=30 dep=1 uid=0 oct=3 lid=0 tim=1000100 hv=1 ad='1' sqlid='child0000000a'
select x from sys_t where a=:1
END OF STMT
PARSE #2:c=10,e=20,p=0,cr=0,cu=0,mis=1,r=0,dep=1,og=4,plh=11,tim=1000100
BINDS #2:

 Bind#0
  oacdty=02 mxl=22(22) mxlc=00 mal=00 scl=00 pre=00
  oacflg=00 fl2=1000001 frm=00 csi=00 siz=24 off=0
  kxsbbbfp=7fc98918fc10  bln=22  avl=04  flg=05
  value=7
EXEC #2:c=30,e=40,p=1,cr=2,cu=0,mis=0,r=0,dep=1,og=4,plh=11,tim=1000150
WAIT #2: nam='db file sequential read' ela= 100 file#=1 block#=2 blocks=1 obj#=5 tim=1000260
FETCH #2:c=50,e=150,p=1,cr=3,cu=0,mis=0,r=1,dep=1,og=4,plh=11,tim=1000300
STAT #2 id=1 cnt=1 pid=0 pos=1 obj=5 op='TABLE ACCESS FULL SYS_T (cr=3 pr=1 pw=0 time=140 us cost=2 size=10 card=1)'
CLOSE #2:c=0,e=5,dep=1,type=3,tim=1000310
=====================
PARSING IN CURSOR #1 len=28 dep=0 uid=108 oct=3 lid=108 tim=1001000 hv=2 ad='2' sqlid='parent000000b'
select * from t where k = :1
END OF STMT
PARSE #1:c=500,e=1000,p=2,cr=5,cu=0,mis=1,r=0,dep=0,og=1,plh=22,tim=1001000
BINDS #1:

 Bind#0
  value=\"A\"
EXEC #1:c=100,e=120,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=22,tim=1001200
WAIT #1: nam='SQL*Net message to client' ela= 2 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1001210
FETCH #1:c=200,e=300,p=0,cr=10,cu=0,mis=0,r=3,dep=0,og=1,plh=22,tim=1001500
STAT #1 id=1 cnt=3 pid=0 pos=1 obj=9 op='TABLE ACCESS FULL T (cr=10 pr=0 pw=0 time=290 us cost=3 size=30 card=3)'
WAIT #1: nam='SQL*Net message from client' ela= 500 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1002100
BINDS #1:

 Bind#0
  value=\"B\"
EXEC #1:c=100,e=100,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=22,tim=1002300
FETCH #1:c=300,e=2000,p=0,cr=10,cu=0,mis=0,r=5,dep=0,og=1,plh=22,tim=1004400
STAT #1 id=1 cnt=5 pid=0 pos=1 obj=9 op='TABLE ACCESS FULL T (cr=10 pr=0 pw=0 time=1990 us cost=3 size=30 card=3)'
WAIT #1: nam='SQL*Net message from client' ela= 1500000 driver id=1 #bytes=1 p3=0 obj#=-1 tim=2905000
BINDS #1:

 Bind#0
  value=\"A\"
EXEC #1:c=100,e=100,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=22,tim=2905200
ERROR #1:err=1403 tim=2905201
CLOSE #1:c=0,e=10,dep=0,type=0,tim=2905300
XCTEND rlbk=0, rd_only=1, tim=2905300
";

fn prof(text: &str) -> FileProfile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anatomy.trc");
    std::fs::write(&path, text).unwrap();
    let out = profile(
        &[path.to_string_lossy().into_owned()],
        &ProfOptions {
            thinktime: 1.0,
            jobs: 1,
            top: 0,
            ..ProfOptions::default()
        },
        None,
    )
    .unwrap();
    match out.files.into_iter().next().unwrap() {
        FileOutcome::Profiled(p) => *p,
        FileOutcome::Skipped { why, .. } => panic!("{why}"),
    }
}

fn comp(p: &FileProfile, name: &str) -> (i64, u64) {
    p.profile
        .iter()
        .find(|c| c.name == name)
        .map_or((0, 0), |c| (c.duration_us, c.calls))
}

#[test]
fn the_resource_profile_adds_up_to_the_session_by_hand() {
    let p = prof(TRACE);
    // From the first wait's start (1000000 - 2000000) to the last end.
    assert_eq!(
        (p.first_tim, p.last_tim),
        (Some(-1_000_000), Some(2_905_300))
    );
    assert_eq!(p.response_time_us, 3_905_300);
    let think = "think time (SQL*Net message from client >= 1 s)";
    assert_eq!(comp(&p, think), (3_500_000, 2));
    assert_eq!(comp(&p, "SQL*Net message from client"), (500, 1));
    assert_eq!(comp(&p, "db file sequential read"), (100, 1));
    assert_eq!(comp(&p, "SQL*Net message to client"), (2, 1));
    // Database calls count their CPU at depth 0 only (the child's is in
    // its parent's PARSE).
    // The rows are named as the Method R Profiler names them, and add up
    // to the CPU total (TVD$XTAT's one CPU row): 500 + 300 + 500 + 0.
    assert_eq!(comp(&p, "CPU: PARSE calls"), (500, 1));
    assert_eq!(comp(&p, "CPU: EXEC calls"), (300, 3));
    assert_eq!(comp(&p, "CPU: FETCH calls"), (500, 2));
    assert_eq!(comp(&p, "EXEC"), (0, 0));
    assert_eq!(p.cpu_us, 1300);
    let calls: Vec<&str> = p.profile.iter().filter_map(|c| c.call.as_deref()).collect();
    assert_eq!(calls.len(), 5, "{calls:?}");
    for k in ["PARSE", "EXEC", "FETCH", "CLOSE", "XCTEND"] {
        assert!(calls.contains(&k), "{calls:?}");
    }
    assert_eq!(comp(&p, "CPU: CLOSE calls"), (0, 1));
    assert_eq!(comp(&p, "CPU: XCTEND calls"), (0, 1));
    // e - c - waits inside: PARSE 1000-500-100, EXEC 120-100, FETCH
    // 300-200-2, FETCH 2000-300, CLOSE 10.
    assert_eq!(comp(&p, "unaccounted-for within calls"), (2_228, 5));
    // Gaps: 80 before the first EXEC, 100+100 around a short SNMFC, 100
    // before the second FETCH, 400600+100 around the think time, 90.
    assert_eq!(comp(&p, "unaccounted-for between calls"), (401_170, 5));
    let sum: i64 = p.profile.iter().map(|c| c.duration_us).sum();
    assert_eq!(sum, p.response_time_us);
    // The timeline holds the same time.
    let tl: i64 = p
        .timeline
        .bins
        .iter()
        .flat_map(|(_, v)| v.iter().map(|(_, us)| us))
        .sum();
    assert_eq!(tl, p.response_time_us);
}

#[test]
fn statements_with_and_without_their_recursive_calls_by_hand() {
    let p = prof(TRACE);
    assert_eq!(p.statements.len(), 2);
    let parent = &p.statements[0];
    let child = &p.statements[1];
    assert_eq!((parent.sqlid.as_str(), parent.rank), ("parent000000b", 1));
    assert_eq!(child.sqlid, "child0000000a");
    // As written (tkprof's figures).
    let w = &parent.with_recursive;
    assert_eq!(
        (
            w.parse.count,
            w.parse.cpu_us,
            w.parse.elapsed_us,
            w.parse.disk,
            w.parse.query,
            w.parse.misses
        ),
        (1, 500, 1000, 2, 5, 1)
    );
    assert_eq!(
        (w.execute.count, w.execute.cpu_us, w.execute.elapsed_us),
        (3, 300, 320)
    );
    assert_eq!(
        (
            w.fetch.count,
            w.fetch.cpu_us,
            w.fetch.elapsed_us,
            w.fetch.query,
            w.fetch.rows
        ),
        (2, 500, 2300, 20, 8)
    );
    assert_eq!((w.other.count, w.other.elapsed_us), (1, 10));
    // Less the child's four calls inside the PARSE: c 90, e 215, p 2, cr 5.
    let n = &parent.without_recursive;
    assert_eq!(
        (
            n.parse.count,
            n.parse.cpu_us,
            n.parse.elapsed_us,
            n.parse.disk,
            n.parse.query,
            n.parse.misses
        ),
        (1, 410, 785, 0, 0, 1)
    );
    assert_eq!(n.fetch, w.fetch);
    assert_eq!((parent.self_elapsed_us, parent.self_cpu_us), (3_415, 1_210));
    assert_eq!((child.self_elapsed_us, child.self_cpu_us), (215, 90));
    assert_eq!(parent.children.len(), 1);
    let edge = &parent.children[0];
    assert_eq!(
        (edge.statement, edge.calls, edge.elapsed_us, edge.cpu_us),
        (1, 4, 215, 90)
    );
    assert_eq!(child.parents, vec![0]);
    assert_eq!((parent.dep, child.dep), (Some(0), Some(1)));
    assert_eq!(
        (parent.optimizer_goal, parent.plan_hash, parent.uid),
        (Some(1), 22, Some(108))
    );
    // Waits by cursor, as tkprof lists them.
    let wait = |s: &tracelab_prof::StatementReport, n: &str| {
        s.waits
            .iter()
            .find(|w| w.name == n)
            .map(|w| (w.times, w.max_us, w.total_us))
    };
    assert_eq!(
        wait(parent, "SQL*Net message from client"),
        Some((2, 1_500_000, 1_500_500))
    );
    assert_eq!(wait(child, "db file sequential read"), Some((1, 100, 100)));
    // Bind sets: A, B, A.
    assert_eq!((parent.binds.executions, parent.binds.distinct), (3, 2));
    let sets: Vec<(Option<String>, u64)> = parent
        .binds
        .sets
        .iter()
        .map(|s| (s.values[0].clone(), s.executions))
        .collect();
    assert_eq!(
        sets,
        vec![(Some("\"A\"".into()), 2), (Some("\"B\"".into()), 1)]
    );
    assert_eq!(child.binds.sets[0].values, vec![Some("7".to_string())]);
    // Executions 120+300, 100+2000, 100; EXECs 120, 100, 100; FETCHes 300,
    // 2000. 100 µs falls in the 10–100 µs bucket, as in mrskew's p10.rc.
    let mut exe = [0u64; 11];
    exe[2] = 1;
    exe[3] = 1;
    exe[4] = 1;
    assert_eq!(parent.execution_histogram.counts, exe);
    let mut ex = [0u64; 11];
    ex[2] = 2;
    ex[3] = 1;
    assert_eq!(parent.exec_histogram.counts, ex);
    assert_eq!(P10::bucket(2000), 4);
    let slow = parent.slowest.as_ref().unwrap();
    assert_eq!((slow.elapsed_us, slow.line), (2_100, 43));
    assert_eq!(slow.binds, vec![Some("\"B\"".to_string())]);
    assert_eq!(parent.errors, vec!["1403".to_string()]);
    // One plan, captured twice: rows 3 then 5.
    assert_eq!(parent.plans.len(), 1);
    let plan = &parent.plans[0];
    assert_eq!((plan.captures, plan.plan_hash), (2, 22));
    assert_eq!(
        (
            plan.lines[0].rows_first,
            plan.rows_avg(0),
            plan.lines[0].rows_max
        ),
        (3, 4, 5)
    );
    // tkprof's totals: depth 0 and deeper, net of the recursive calls
    // inside (as tkprof adds up its listings), gross beside them; WAIT #0
    // counts as non-recursive.
    assert_eq!(p.non_recursive.calls, parent.without_recursive);
    assert_eq!(p.non_recursive.with_recursive, parent.with_recursive);
    assert_eq!(p.recursive.calls, child.with_recursive);
    assert_eq!(p.recursive.with_recursive, child.with_recursive);
    // TVD$XTAT's ranking: the parent's 3,630 µs with its child's (PARSE
    // 1000, EXEC 320, FETCH 2300, CLOSE 10) before its own 3,415 (less the
    // child's 215).
    assert_eq!(parent.elapsed_with_recursive_us, 3630);
    assert_eq!(parent.self_elapsed_us, 3415);
    assert_eq!(parent.rank_with_recursive, 1);
    assert_eq!(child.rank_with_recursive, 2);
    let snmfc = p
        .non_recursive
        .waits
        .iter()
        .find(|w| w.name == "SQL*Net message from client")
        .unwrap();
    assert_eq!(
        (snmfc.times, snmfc.max_us, snmfc.total_us),
        (3, 2_000_000, 3_500_500)
    );
    assert_eq!(
        (
            p.summary.user_statements,
            p.summary.internal_statements,
            p.summary.unique_statements,
            p.summary.elapsed_seconds
        ),
        (1, 1, 2, 3)
    );
}

#[test]
fn tkprof_block_of_each_statement() {
    let p = prof(TRACE);
    let text = tracelab_prof::render(
        &p,
        tracelab_prof::TextOptions {
            tkprof: true,
            gross: false,
        },
    );
    let expected_parent = "\
SQL ID: parent000000b Plan Hash: 22

select * 
from
 t where k = :1


call     count       cpu    elapsed       disk      query    current        rows
------- ------  -------- ---------- ---------- ---------- ----------  ----------
Parse        1      0.00       0.00          0          0          0           0
Execute      3      0.00       0.00          0          0          0           0
Fetch        2      0.00       0.00          0         20          0           8
------- ------  -------- ---------- ---------- ---------- ----------  ----------
total        6      0.00       0.00          0         20          0           8

Misses in library cache during parse: 1
Optimizer mode: ALL_ROWS
Parsing user id: 108  
Number of plan statistics captured: 2

Rows (1st) Rows (avg) Rows (max)  Row Source Operation
---------- ---------- ----------  ---------------------------------------------------
         3          4          5  TABLE ACCESS FULL T (cr=10 pr=0 pw=0 time=290 us cost=3 size=30 card=3)


Elapsed times include waiting on following events:
  Event waited on                             Times   Max. Wait  Total Waited
  ----------------------------------------   Waited  ----------  ------------
  SQL*Net message to client                       1        0.00          0.00
  SQL*Net message from client                     2        1.50          1.50
********************************************************************************
";
    assert!(text.contains(expected_parent), "{text}");
    assert!(
        text.contains("Optimizer mode: CHOOSE\nParsing user id: SYS   (recursive depth: 1)\n"),
        "{text}"
    );
    // tkprof's order: the child's PARSING IN CURSOR comes first.
    assert!(text.find("child0000000a").unwrap() < text.find("parent000000b").unwrap());
    assert!(text.contains("OVERALL TOTALS FOR ALL NON-RECURSIVE STATEMENTS"));
    assert!(text.contains("OVERALL TOTALS FOR ALL RECURSIVE STATEMENTS"));
    assert!(text.contains("    1  user  SQL statements in session.\n    1  internal SQL statements in session.\n    2  SQL statements in session.\n"));
    assert!(text.contains("       2  unique SQL statements in trace file.\n"));
}
