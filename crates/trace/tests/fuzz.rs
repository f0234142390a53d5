//! Property tests: the reader never panics, whatever the bytes, and a
//! damaged line never costs the calls on the other lines.

use proptest::prelude::*;
use tracelab_trace::{ReadOptions, Reader, TraceFile};

/// Real lines of every kind the reader knows, to be shuffled, cut and
/// mutated.
const LINES: &[&str] = &[
    "Trace file /u01/app/oracle/diag/rdbms/cdb/cdb1/trace/cdb1_ora_15440_PINGTEST.trc",
    "*** 2022-09-01T17:39:34.556684-07:00 (PDB1(3))",
    "*** 2018-04-05 18:18:44.341",
    "*** SESSION ID:(1183.18399) 2022-09-01T17:39:34.556701-07:00",
    "=====================",
    "PARSING IN CURSOR #140174154976552 len=52 dep=0 uid=108 oct=47 lid=108 tim=9578274564774 hv=1029988163 ad='7814bc38' sqlid='9babjv8yq8ru3'",
    "BEGIN DBMS_OUTPUT.GET_LINES(:LINES, :NUMLINES); END;",
    "END OF STMT",
    "PARSE #140174154976552:c=14,e=14,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=9578274564773",
    "BINDS #140174154976552:",
    "",
    " Bind#0",
    "  oacdty=01 mxl=32(30) mxlc=00 mal=00 scl=00 pre=00",
    "  value=\"1686\"",
    "  value=\"multi",
    "WAIT #140174154976552: nam='SQL*Net message to client' ela= 2 driver id=1413697536 #bytes=1 p3=0 obj#=774 tim=9578274564990",
    "WAIT #0x7ff225353470: nam='PGA memory operation' ela= 13 p1=65536 p2=1 p3=0 obj#=-1 tim=7782186392312",
    "WAIT #3220341128: nam='db file sequential read' ela= 2769 p1=37 p2=12931 p3=1",
    "EXEC #140174154976552:c=206,e=205,p=0,cr=0,cu=0,mis=0,r=1,dep=0,og=1,plh=0,tim=9578274565013",
    "FETCH #140174154976552:c=34,e=34,p=0,cr=0,cu=0,mis=0,r=1,dep=1,og=1,plh=1636480816,tim=7782186390950",
    "CLOSE #140174154976552:c=31,e=31,dep=0,type=3,tim=9578284640212",
    "STAT #140507091973648 id=1 cnt=1 pid=0 pos=1 obj=0 op='MERGE JOIN CARTESIAN (cr=0 pr=0 pw=0 str=1 time=280 us cost=0 size=36 card=1)'",
    "STAT #1 (cr=0 pr=0 pw=0 str=1 time=29 us)'",
    "XCTEND rlbk=0, rd_only=1, tim=5793511831940",
    "ERROR #139637903883184:err=27403 tim=3034700188655",
    "PARSE ERROR #140604232973104:len=67 dep=1 uid=112 oct=3 lid=112 tim=6149052610789 err=10980",
    "LOBREAD: type=PERSISTENT LOB,bytes=225,c=256,e=255,p=1,cr=1,cu=0,tim=7795634109950",
    "RPC EXEC:c=0,e=12",
    "*** TRACE CONTINUED FROM FILE /u01/x.trc ***",
    "UNMAP #1:c=0,e=1,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=4,tim=1",
    "SORT UNMAP #1:c=0,e=1,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=4,tim=1",
];

fn run(bytes: Vec<u8>, opts: ReadOptions) -> u64 {
    let file = TraceFile::from_reader("fuzz.trc", std::io::Cursor::new(bytes));
    let mut calls = 0;
    // Ok or a clean NotATrace; never a panic.
    let _ = Reader::new(opts).read(file, |c| {
        // Touch what consumers touch.
        calls += 1;
        let _ = (
            c.af_us(),
            c.dur_us(),
            c.tim_us(),
            c.stmt.sqlid.len(),
            c.binds.len(),
        );
    });
    calls
}

fn all_on() -> ReadOptions {
    ReadOptions {
        binds: true,
        unaccounted: true,
        all_lines: true,
        ..ReadOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        run(bytes.clone(), ReadOptions::default());
        run(bytes, all_on());
    }

    #[test]
    fn shuffled_and_cut_real_lines_never_panic(
        picks in proptest::collection::vec((0..LINES.len(), 0usize..200, any::<u8>(), any::<bool>()), 0..200)
    ) {
        let mut text = Vec::new();
        for (i, cut, byte, mutate) in picks {
            let mut line = LINES[i].as_bytes().to_vec();
            if mutate && !line.is_empty() {
                let at = cut % line.len();
                line[at] = byte;
                line.truncate(line.len().min(at + cut));
            }
            text.extend_from_slice(&line);
            text.push(if cut % 7 == 0 { b'\r' } else { b'\n' });
            if cut % 7 == 0 { text.push(b'\n'); }
        }
        run(text.clone(), ReadOptions::default());
        run(text, all_on());
    }

    #[test]
    fn a_damaged_line_costs_only_itself(damage in 0usize..60) {
        let good = [
            LINES[8], LINES[15], LINES[18], LINES[19], LINES[20],
        ];
        let whole: Vec<u8> = good.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect();
        let clean = run(whole, ReadOptions::default());
        prop_assert_eq!(clean, 5);
        // Cut the middle line short: the others are still read.
        let mut text = Vec::new();
        for (i, l) in good.iter().enumerate() {
            let l = if i == 2 { &l[..damage.min(l.len())] } else { l };
            text.extend_from_slice(l.as_bytes());
            text.push(b'\n');
        }
        let got = run(text, ReadOptions::default());
        prop_assert!(got >= 4, "got {got}");
    }
}
