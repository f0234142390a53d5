//! `tracelab skew` on damaged, hostile and unusual input: every damaged
//! file is made here, from the real traces of tests/fixtures.

mod common;
use common::{db_ping, fixture, tempdir, tracelab};

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn crc(pid: u32) -> Vec<u8> {
    let path = fixture(&format!(
        "crc-local-force/orcl_ora_{pid}_RC-20230830160541-20230703160541.trc.gz"
    ));
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    text
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

/// Runs `tracelab ARGS` with at most `data` bytes of heap (RLIMIT_DATA:
/// an allocation past it aborts the program), killing it after `limit`;
/// (stdout, stderr, exit code or None if it was killed or aborted).
fn tracelab_within(args: &[&str], data: u64, limit: Duration) -> (String, String, Option<i32>) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracelab"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: data,
                rlim_max: data,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (reader.join().unwrap(), err_reader.join().unwrap(), code)
}

/// The heap a run may use in the memory tests: a few MB of buffers and
/// threads, far less than the 40 MB line they read.
const HEAP: u64 = 32 << 20;

/// The line number in a warning `file:N: read error`.
fn damaged_line(err: &str, file: &str) -> u64 {
    let at = err
        .find(&format!("{file}:"))
        .unwrap_or_else(|| panic!("no warning for {file}: {err}"));
    let rest = &err[at + file.len() + 1..];
    assert!(rest.contains(": read error: "), "{err}");
    rest[..rest.find(':').unwrap()].parse().unwrap()
}

#[test]
fn a_truncated_compressed_trace_is_profiled_up_to_the_damage() {
    let dir = tempdir("cut");
    let text = crc(30561);
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    };
    let bz = {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    };
    let xz = {
        let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    };
    let zst = zstd::encode_all(&text[..], 1).unwrap();
    for (name, bytes) in [
        ("cut.trc.gz", gz),
        ("cut.trc.bz2", bz),
        ("cut.trc.xz", xz),
        ("cut.trc.zst", zst),
    ] {
        // A copy cut short at 60 % of its bytes.
        let cut = write(&dir, name, &bytes[..bytes.len() * 6 / 10]);
        let (out, err, code) = tracelab(&["skew", "--csv", "--top=0", &cut]);
        assert_eq!(code, 1, "{name}: {err}");
        let n = damaged_line(&err, &cut);
        assert!(
            n > 10_000,
            "{name}: most of the lines before the damage were read: {err}"
        );
        // Everything before the damaged line, and nothing else, counted.
        let before: Vec<&[u8]> = text.split(|&b| b == b'\n').take(n as usize - 1).collect();
        let mut prefix = before.join(&b'\n');
        prefix.push(b'\n');
        let plain = write(&dir, "prefix.trc", &prefix);
        let (want, _, code) = tracelab(&["skew", "--csv", "--top=0", &plain]);
        assert_eq!(code, 0);
        assert_eq!(out, want, "{name}");
        assert!(out.lines().count() > 5, "{out}");
    }
    // A small file is one block of bzip2 or zstd: cut short, none of it
    // decodes. It is skipped with a reason, the other files reported.
    let small = std::fs::read(db_ping()).unwrap();
    let zst = zstd::encode_all(&small[..], 1).unwrap();
    let cut = write(&dir, "small.trc.zst", &zst[..zst.len() / 2]);
    let other = write(&dir, "other.trc", &small);
    let (out, err, code) = tracelab(&["skew", &cut, &other]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("tracelab: skipped {cut}:1: read error: "))
            && err.contains("the file is damaged or cut short before its first trace line"),
        "{err}"
    );
    assert_eq!(out, tracelab(&["skew", &other]).0);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A gzip copy of `text` whose deflate stream breaks right after its first
/// `good` bytes: a sync flush there, and the block after it given the
/// reserved block type, which no inflater reads past.
fn gzip_broken_after(text: &[u8], good: usize) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&text[..good]).unwrap();
    e.flush().unwrap();
    let at = e.get_ref().len();
    e.write_all(&text[good..]).unwrap();
    let mut gz = e.finish().unwrap();
    gz[at] |= 0b110;
    gz
}

#[test]
fn a_gzip_damaged_mid_stream_keeps_its_good_lines_and_says_so_first() {
    let dir = tempdir("gzmid");
    // 240 good lines (the file had 239), seven of them damaged
    // calls, so that the damage has other warnings to be buried under.
    let text = crc(30561);
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let mut good = Vec::new();
    for (i, l) in lines[..240].iter().enumerate() {
        good.extend_from_slice(l);
        good.push(b'\n');
        if (100..107).contains(&i) {
            good.extend_from_slice(b"EXEC #140661336887528:c=oops,e=1,dep=0,tim=x\n");
        }
    }
    let good_lines = good.iter().filter(|&&b| b == b'\n').count() as u64;
    let mut whole = good.clone();
    whole.extend_from_slice(
        &text[text
            .len()
            .min(lines[..240].iter().map(|l| l.len() + 1).sum::<usize>())..],
    );
    // Paths of one length, one basename: the reports' widths and names
    // are the same.
    let gz = write(&dir, "dmg.trc.gz", &gzip_broken_after(&whole, good.len()));
    std::fs::create_dir_all(dir.join("pp")).unwrap();
    let plain = write(&dir.join("pp"), "dmg.trc", &good);
    let first = |err: &str| {
        err.lines()
            .find(|l| l.contains("warning"))
            .unwrap_or("")
            .to_string()
    };
    let csv = |tag: &str| {
        dir.join(format!("{tag}.csv"))
            .to_string_lossy()
            .into_owned()
    };
    let (gz_csv, plain_csv) = (csv("gz"), csv("plain"));
    for args in [
        vec!["skew", "--csv", "--top=0"],
        vec!["skew", "--group=$sqlid", "--jobs=1"],
        vec!["prof"],
        vec!["calls", "-o", "CSV"],
        vec!["nl"],
    ] {
        let run = |file: &str, out: &str| {
            let mut a: Vec<&str> = args
                .iter()
                .map(|a| if *a == "CSV" { out } else { a })
                .collect();
            a.push(file);
            let (stdout, err, code) = tracelab(&a);
            let written = std::fs::read_to_string(out).unwrap_or_default();
            (stdout + &written, err, code)
        };
        let (out, err, code) = run(&gz, &gz_csv);
        let (want, want_err, want_code) = run(&plain, &plain_csv);
        // What the good prefix gives, line for line (with the file's name
        // replaced: reports name their file; prof's lists its warnings).
        let same = |s: &str, f: &str| {
            s.replace(f, "F")
                .lines()
                .filter(|l| !l.starts_with("warning: ") && !l.contains("more damaged lines"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(same(&out, &gz), same(&want, &plain), "{args:?}: {err}");
        assert!(want.lines().count() > 5, "{args:?}: {want}");
        let line = first(&err);
        assert!(
            line.contains(&format!("{gz}:{}: read error: ", good_lines + 1))
                && line.contains("the gzip stream is damaged near compressed byte"),
            "{args:?}: the damage is the first warning: {err}"
        );
        assert!(want_err.contains("warning"), "{args:?}: {want_err}");
        // Exit status as for the other damage in the file.
        assert_eq!(code, want_code, "{args:?}: {err}");
    }
    // ls counts the good lines and says why it stopped.
    let (out, err, _) = tracelab(&["ls", "--json", &gz]);
    assert!(out.contains(&format!("\"lines\": {good_lines},")), "{out}");
    assert!(
        first(&err).contains("read error: the gzip stream is damaged"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_gzip_checksum_error_comes_before_the_damaged_lines() {
    let dir = tempdir("gzcrc");
    let mut text = crc(30561);
    for _ in 0..8 {
        text.extend_from_slice(b"EXEC #1:c=oops,e=1,dep=0,tim=x\n");
    }
    let mut gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text).unwrap();
        e.finish().unwrap()
    };
    let n = gz.len();
    gz[n - 8] ^= 0xff;
    let gz = write(&dir, "crc.trc.gz", &gz);
    let (_, err, code) = tracelab(&["skew", &gz]);
    assert_eq!(code, 1, "{err}");
    let first = err.lines().find(|l| l.contains("warning")).unwrap_or("");
    assert!(
        first.contains("the gzip checksum does not match"),
        "the checksum error is the first warning: {err}"
    );
    assert!(err.contains("4 more warnings not shown"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn oracle_traces_of_other_kinds_are_not_sql_traces() {
    let dir = tempdir("kinds");
    let header = |process: &str| {
        format!(
            "Trace file /u01/app/oracle/diag/rdbms/orcl/orcl/trace/orcl_{p}_4242.trc\n\
             Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\n\
             Version 19.12.0.0.0\n\
             Instance name: orcl\n\
             Oracle process number: 20\n\
             Unix process pid: 4242, image: oracle@db1 ({P})\n\n\n\
             *** 2023-08-30T16:05:41.123456-04:00\n",
            p = process.to_lowercase(),
            P = process
        )
    };
    let lgwr = format!(
        "{}\
         *** SESSION ID:(2.1) 2023-08-30T16:05:41.123500-04:00\n\
         Warning: log write elapsed time 612ms, size 4KB\n\n\
         *** 2023-08-30T16:07:02.000100-04:00\n\
         kcrfw_update_adaptive_sync_mode: post->poll long#=2 sync#=10 sync=30 poll=1064 rw=253 ack=0 min_sleep=1064\n",
        header("LGWR")
    );
    let optimizer = format!(
        "{}\
         Registered qb: SEL$1 0x7f5a1c8 (PARSER)\n\
         ---------------------\n\
         QUERY BLOCK SIGNATURE\n\
         ---------------------\n\
           signature (): qb_name=SEL$1 nbfros=1 flg=0\n\
             fro(0): flg=4 objn=73181 hint_alias=\"T\"@\"SEL$1\"\n\n\
         ***************************************\n\
         PARAMETERS USED BY THE OPTIMIZER\n\
         ********************************\n\
           optimizer_features_enable           = 19.1.0\n",
        header("TNS V1-V3")
    );
    let lgwr = write(&dir, "orcl_lgwr_4242.trc", lgwr.as_bytes());
    let optimizer = write(&dir, "orcl_ora_4242_10053.trc", optimizer.as_bytes());
    let (out, err, code) = tracelab(&["skew", &lgwr, &optimizer, &db_ping()]);
    assert_eq!(code, 1, "{err}");
    for f in [&lgwr, &optimizer] {
        assert!(
            err.contains(&format!(
                "tracelab: skipped {f}: not an Oracle extended SQL trace file: it is not a SQL trace (event 10046)"
            )),
            "{err}"
        );
    }
    assert!(
        err.contains("it is not a SQL trace (event 10046) but the trace of Oracle process LGWR: none of its 14 lines is a PARSE, EXEC, FETCH, WAIT or other SQL trace line"),
        "{err}"
    );
    assert!(!err.contains("no calls match"), "{err}");
    assert!(
        out.ends_with(
            "TOTAL (11)                   10.668190  100.0%     89  0.119867  0.000000  2.062658\n"
        ),
        "{out}"
    );
    // Alone: skipped, no table, and no "no calls match" either.
    let (out, err, code) = tracelab(&["skew", &lgwr]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(!err.contains("no calls match"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

const HEADER: &str = "Trace file /u01/app/oracle/diag/rdbms/orcl/orcl/trace/orcl_ora_100.trc\n\
Oracle Database 11g Enterprise Edition Release 11.1.0.7.0 - 64bit Production\n\
Unix process pid: 100, image: oracle@db1\n\n";

fn csv_total(out: &str) -> String {
    out.lines()
        .last()
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .to_string()
}

#[test]
fn unaccounted_never_counts_a_moment_twice() {
    // The PARSE starts at 960, before the EXEC before it ends at 1000,
    // as in real 11.1 traces. The session's span is 1170 - 900 = 270 µs.
    let dir = tempdir("overlap");
    let t = format!(
        "{HEADER}*** 2023-08-30 16:05:41.000\n\
PARSING IN CURSOR #1 len=8 dep=0 uid=7 oct=3 lid=7 tim=1000 hv=1 ad='1' sqlid='a'\n\
select 1\n\
END OF STMT\n\
EXEC #1:c=50,e=100,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1000\n\
PARSE #1:c=10,e=50,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1010\n\
WAIT #1: nam='SQL*Net message to client' ela= 5 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1020\n\
WAIT #1: nam='SQL*Net message from client' ela= 100 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1130\n\
FETCH #1:c=20,e=30,p=0,cr=0,cu=0,mis=0,r=1,dep=0,og=1,plh=0,tim=1170\n"
    );
    let f = write(&dir, "overlap.trc", t.as_bytes());
    let (out, err, code) = tracelab(&["skew", "--unaccounted", "--csv", &f]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(csv_total(&out), "0.000270", "{out}");
    assert!(
        err.contains("1 calls or waits start before the one before them ended (0.000040 s of overlap in all)"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shared_server_sessions_are_not_each_others_gaps() {
    // A shared server (S000) serves session 10.1, then 20.2, then 10.1
    // again; within each stretch the gaps are 10 µs.
    let dir = tempdir("shared");
    let t = format!(
        "{HEADER}*** 2023-08-30 16:05:41.000\n\
*** SESSION ID:(10.1) 2023-08-30 16:05:41.000\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1000\n\
WAIT #1: nam='SQL*Net message from client' ela= 20 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1030\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1050\n\
*** SESSION ID:(20.2) 2023-08-30 16:05:41.004\n\
EXEC #2:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=5000\n\
EXEC #2:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=5020\n\
*** SESSION ID:(10.1) 2023-08-30 16:05:41.008\n\
EXEC #1:c=10,e=10,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=9000\n"
    );
    let f = write(&dir, "orcl_s000_100.trc", t.as_bytes());
    let (out, err, code) = tracelab(&["skew", "--unaccounted", "--csv", &f]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\nunaccounted-for between calls,0.000030,"),
        "only the gaps inside each session's stretches: {out}"
    );
    assert!(
        err.contains("2 sessions take turns in this file (a shared server's): the 0.007910 s across its 2 changes of session belong to other sessions"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_missing_end_of_stmt_swallows_no_call() {
    let dir = tempdir("eos");
    let text = crc(30561);
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    // Every other END OF STMT lost.
    let mut seen = 0;
    let kept: Vec<&[u8]> = lines
        .iter()
        .copied()
        .filter(|l| {
            if *l != b"END OF STMT" {
                return true;
            }
            seen += 1;
            seen % 2 != 0
        })
        .collect();
    assert!(seen > 15, "{seen} statements");
    let good = write(&dir, "good.trc", &text);
    let bad = write(&dir, "bad.trc", &kept.join(&b'\n'));
    for args in [
        &["--alldepths", "--top=0", "--csv"][..],
        &["--group=$sqlid", "--alldepths", "--top=0", "--csv"][..],
    ] {
        let (want, _, code) = tracelab(&[&["skew"], args, &[&good]].concat());
        assert_eq!(code, 0);
        let (got, err, code) = tracelab(&[&["skew"], args, &[&bad]].concat());
        assert_eq!(code, 1);
        // (Cursors without text name their file.)
        let got = got.replace(&bad, &good);
        assert_eq!(got, want, "every call counted, with its statement");
        assert!(
            err.contains("expected END OF STMT after the SQL text: it ends at the next trace line, 2 lines down"),
            "{err}"
        );
        assert!(err.contains(&format!("tracelab: warning: {bad}:")), "{err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_big_damaged_file_gives_one_answer_whatever_the_jobs() {
    // Over 16 MB, so that --jobs=4 cuts it into pieces; a NUL byte in its
    // first 4 KiB but not in its first line; stray PARSING IN CURSOR lines,
    // lost END OF STMTs and a negative depth further on.
    let dir = tempdir("jobs");
    let mut text = Vec::new();
    for pid in [30537, 30539, 30541, 30543, 30545, 30547, 30549] {
        text.extend(crc(pid));
    }
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    lines[3].insert(2, 0);
    let n = lines.len();
    for k in 1..8 {
        let i = n * k / 8;
        match k % 3 {
            0 => lines.insert(
                i,
                b"PARSING IN CURSOR #140661336887528 len=9 dep=0 uid=0 oct=3 lid=0 tim=1 hv=1 ad='0' sqlid='stray'".to_vec(),
            ),
            1 => lines.insert(
                i,
                b"EXEC #9:c=5,e=5,p=0,cr=0,cu=0,mis=0,r=0,dep=-1,og=1,plh=0,tim=1".to_vec(),
            ),
            _ => {
                if let Some(j) = (i..n).find(|&j| lines[j] == b"END OF STMT") {
                    lines.remove(j);
                }
            }
        }
    }
    let text = lines.join(&b'\n');
    assert!(text.len() > 17 << 20);
    assert!(
        memchr_nul(&text[..4096])
            && !memchr_nul(&text[..text.iter().position(|&b| b == b'\n').unwrap()])
    );
    let f = write(&dir, "big.trc", &text);
    for args in [&[][..], &["--group=$sqlid", "--top=0"][..]] {
        let one = tracelab(&[&["skew", "--jobs=1"], args, &[&f]].concat());
        let four = tracelab(&[&["skew", "--jobs=4"], args, &[&f]].concat());
        assert_eq!(one.2, 1, "{}", one.1);
        assert!(one.0.contains("TOTAL ("), "{}", one.1);
        assert!(
            one.1
                .contains("expected a depth of 0 or more after 'dep=', found '-1'"),
            "{}",
            one.1
        );
        assert_eq!(one, four);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

fn memchr_nul(b: &[u8]) -> bool {
    b.contains(&0)
}

#[test]
fn a_runaway_line_is_cut_and_the_rest_read_in_bounded_memory() {
    let dir = tempdir("long");
    let text = std::fs::read(db_ping()).unwrap();
    let at = text.len() / 2
        + text[text.len() / 2..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap()
        + 1;
    let mut long = text[..at].to_vec();
    long.extend(std::iter::repeat_n(b'x', 40 << 20));
    long.push(b'\n');
    long.extend_from_slice(&text[at..]);
    let line_no = text[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let plain = write(&dir, "long.trc", &long);
    // The 40 MB line is never held in memory: the run fits in 32 MB.
    let (out, err, code) = tracelab_within(
        &["skew", "--max-line=1M", &plain],
        HEAP,
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{plain}:{line_no}: the line is longer than 1048576 bytes"
        )),
        "{err}"
    );
    let (want, _, _) = tracelab(&["skew", &db_ping()]);
    assert_eq!(out, want, "every other line read");
    // Compressed, and with the default limit raised: the same.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&long).unwrap();
    let gz = write(&dir, "long.trc.gz", &gz.finish().unwrap());
    let (out, err, code) = tracelab_within(
        &["skew", "--max-line=2M", &gz],
        HEAP,
        Duration::from_secs(120),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("longer than 2097152 bytes"), "{err}");
    assert_eq!(out, want);
    // An endless stream of NUL bytes is refused at once, the other file
    // still profiled.
    let (out, err, code) = tracelab_within(
        &["skew", "/dev/zero", &db_ping()],
        HEAP,
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "skipped /dev/zero: not an Oracle extended SQL trace file: it holds binary data"
        ),
        "{err}"
    );
    assert_eq!(out, want);
    assert_eq!(
        tracelab(&["skew", "--max-line=12", &db_ping()]).2,
        2,
        "a limit below 1K is refused"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn durations_near_the_64_bit_range_add_up_as_perl_adds_them() {
    let dir = tempdir("i64");
    let mut t = format!("{HEADER}*** 2023-08-30 16:05:41.000\n");
    for i in 0..20 {
        t.push_str(&format!(
            "WAIT #1: nam='db file sequential read' ela= 999999999999999999 file#=1 block#=2 blocks=1 obj#=-1 tim={}\n",
            999_999_999_999_999_000i64 + i
        ));
    }
    t.push_str("EXEC #1:c=999999999999999999,e=999999999999999999,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=999999999999999999\n");
    let f = write(&dir, "huge.trc", t.as_bytes());
    let (out, err, code) = tracelab(&["skew", &f]);
    assert_eq!(code, 0, "{err}");
    // mrskew's figures are Perl's doubles: 10^18 - 1 µs is 10^12 s as a
    // double, and so are the sums, as Perl prints them:
    //   perl -e '$s=0; $s += 999999999999999999*1e-6 for 1..20;
    //            printf "%.6f %.6f\n", $s, $s/20'
    //   20000000000000.000000 1000000000000.000000
    // (the exact decimal sums, 19,999,999,999,999.999980, are not what
    // mrskew prints).
    assert!(
        out.contains("db file sequential read  20,000,000,000,000.000000   95.2%     20  1,000,000,000,000.000000"),
        "{out}"
    );
    assert!(
        out.contains("TOTAL (2)                21,000,000,000,000.000000  100.0%     21"),
        "{out}"
    );
    // The waits overlap one another by almost 10^18 µs each: the sums run
    // past 64 bits, which is said, not wrapped.
    let (out, err, code) = tracelab(&["skew", "--unaccounted", "--csv", &f]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("does not fit in 64 bits: left out"), "{err}");
    assert!(
        err.contains(": 20 calls or waits start before the one before them ended"),
        "{err}"
    );
    assert!(out.contains("\nTOTAL ("), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_fifo_with_no_writer_does_not_hold_back_the_report() {
    let dir = tempdir("fifo");
    let fifo = dir.join("nobody.trc");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let fifo = fifo.to_string_lossy().into_owned();
    let (out, err, code) = tracelab_within(
        &["skew", &fifo, &db_ping()],
        1 << 30,
        Duration::from_secs(60),
    );
    assert_eq!(
        code,
        Some(1),
        "finished, and said a file was skipped: {err}"
    );
    assert!(
        err.contains(&format!("tracelab: skipped {fifo}: a FIFO with no writer")),
        "{err}"
    );
    let (want, _, _) = tracelab(&["skew", &db_ping()]);
    assert_eq!(out, want);
    // With a writer the FIFO is read like the file.
    let path = fifo.clone();
    let writer = std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.write_all(&std::fs::read(db_ping()).unwrap()).unwrap();
    });
    let (out, err, code) = tracelab_within(&["skew", &fifo], 1 << 30, Duration::from_secs(60));
    writer.join().unwrap();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, want);
    std::fs::remove_dir_all(dir).unwrap();
}
