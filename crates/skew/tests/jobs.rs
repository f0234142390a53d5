//! Splitting a file across cores must never change a result: real traces,
//! damaged in the ways real files are damaged (stray PARSING IN CURSOR
//! lines, a lost END OF STMT, a negative depth, separators inside SQL
//! text, NUL bytes, cut lines, interleaved sessions, LOB calls), profiled
//! with `--jobs=1` (one whole read) and `--jobs=4` (the file cut into
//! pieces read on several threads) give the same report and the same
//! warnings, byte for byte.

use std::io::Read;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tracelab_skew::{profile, Outcome, SkewOptions};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
}

/// The real traces the mutations start from.
fn bases() -> Vec<Vec<u8>> {
    let mut crc = Vec::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(fixture(
            "crc-local-force/orcl_ora_30561_RC-20230830160541-20230703160541.trc.gz",
        ))
        .unwrap(),
    )
    .read_to_end(&mut crc)
    .unwrap();
    // The first megabyte of it: statements, binds, recursive SQL.
    let cut = crc[..1 << 20]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap_or(0);
    crc.truncate(cut + 1);
    vec![
        std::fs::read(fixture("trace-combine/main.trc")).unwrap(),
        std::fs::read(fixture("oracle-samples/dokt_ora_26478.trc")).unwrap(),
        std::fs::read(fixture("db-ping/cdb1_ora_15440_PINGTEST.trc")).unwrap(),
        crc,
    ]
}

/// One kind of damage, at a position given as a fraction of the file.
#[derive(Debug, Clone)]
enum Damage {
    StrayParsingInCursor { cursor: u64, dep: u8 },
    DropEndOfStmt,
    NegativeDepth,
    Separator,
    Nul,
    CutLine,
    DropLine,
    DuplicateLine,
    ParseError,
    Session(u8),
    Lob,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0u64..4, 0u8..3).prop_map(|(cursor, dep)| Damage::StrayParsingInCursor { cursor, dep }),
        Just(Damage::DropEndOfStmt),
        Just(Damage::NegativeDepth),
        Just(Damage::Separator),
        Just(Damage::Nul),
        Just(Damage::CutLine),
        Just(Damage::DropLine),
        Just(Damage::DuplicateLine),
        Just(Damage::ParseError),
        (0u8..3).prop_map(Damage::Session),
        Just(Damage::Lob),
    ]
}

fn apply(text: &[u8], edits: &[(Damage, f64)]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    for (d, at) in edits {
        let n = lines.len();
        let i = ((at * n as f64) as usize).min(n - 1);
        match d {
            Damage::StrayParsingInCursor { cursor, dep } => {
                // A cursor number the trace uses, or one it does not.
                let id = if *cursor == 0 {
                    "1".to_string()
                } else {
                    lines
                        .iter()
                        .skip(i)
                        .find_map(|l| {
                            l.strip_prefix(b"EXEC #").map(|r| {
                                String::from_utf8_lossy(
                                    &r[..r.iter().position(|&b| b == b':').unwrap_or(0)],
                                )
                                .into_owned()
                            })
                        })
                        .unwrap_or_else(|| "2".into())
                };
                lines.insert(
                    i,
                    format!("PARSING IN CURSOR #{id} len=9 dep={dep} uid=0 oct=3 lid=0 tim=1 hv=1 ad='0' sqlid='stray{cursor}'")
                        .into_bytes(),
                );
                lines.insert(i + 1, b"select 1".to_vec());
            }
            Damage::DropEndOfStmt => {
                if let Some(k) = (i..n).find(|&k| lines[k] == b"END OF STMT") {
                    lines.remove(k);
                }
            }
            Damage::NegativeDepth => lines.insert(
                i,
                b"EXEC #9:c=5,e=5,p=0,cr=0,cu=0,mis=0,r=0,dep=-1,og=1,plh=0,tim=1".to_vec(),
            ),
            Damage::Separator => lines.insert(i, b"=====================".to_vec()),
            Damage::Nul => {
                let l = &mut lines[i];
                let at = l.len() / 2;
                l.insert(at, 0);
            }
            Damage::CutLine => {
                let l = &mut lines[i];
                l.truncate(l.len() / 2);
            }
            Damage::DropLine => {
                lines.remove(i);
            }
            Damage::DuplicateLine => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            Damage::ParseError => {
                lines.insert(
                    i,
                    b"PARSE ERROR #7:len=20 dep=0 uid=0 oct=3 lid=0 tim=1 err=942".to_vec(),
                );
                lines.insert(i + 1, b"select x from nowhere".to_vec());
            }
            Damage::Session(s) => lines.insert(
                i,
                format!("*** SESSION ID:(1{s}.2) 2023-08-30T16:05:4{s}.000000-04:00").into_bytes(),
            ),
            Damage::Lob => {
                // Two names of one length: a consumer caching verdicts by
                // the name's address must not mix them up.
                lines.insert(
                    i,
                    b"LOBREAD: type=PERSISTENT LOB,bytes=1,c=7,e=7,p=0,cr=0,cu=0,tim=1".to_vec(),
                );
                lines.insert(
                    i + 1,
                    b"LOBSEEK: type=PERSISTENT LOB,bytes=1,c=3,e=3,p=0,cr=0,cu=0,tim=2".to_vec(),
                );
            }
        }
    }
    lines.join(&b'\n')
}

/// Where two outputs part, for a readable failure.
fn first_difference(a: &str, b: &str) -> String {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    match (0..la.len().max(lb.len())).find(|&i| la.get(i) != lb.get(i)) {
        Some(i) => format!(
            "line {}:\n  --jobs=1: {:?}\n  --jobs=4: {:?}",
            i + 1,
            la.get(i),
            lb.get(i)
        ),
        None => "equal".into(),
    }
}

/// The report and every message, as the command line prints them.
fn run(path: &str, base: &SkewOptions, jobs: usize) -> String {
    let opts = SkewOptions {
        jobs,
        // Cut even small files into pieces.
        min_split: 1,
        ..base.clone()
    };
    let out: Outcome = match profile(&opts, &[path.to_string()], None) {
        Ok(o) => o,
        Err(e) => return format!("error: {e}"),
    };
    let mut s = out.report.render(&opts.layout());
    for f in &out.files {
        s.push_str(&format!(
            "skipped: {:?}\nlines {} calls {} matched {}\n",
            f.skipped, f.lines, f.calls, f.matched
        ));
        for d in &f.warnings.kept {
            s.push_str(&format!("warning: {d}\n"));
        }
        s.push_str(&format!("warnings: {}\n", f.warnings.total));
    }
    s
}

fn option_sets() -> Vec<SkewOptions> {
    let d = SkewOptions::default;
    vec![
        SkewOptions { top: 0, ..d() },
        SkewOptions {
            group: Some("$sqlid . q{ } . $dep".into()),
            where1: "1".into(),
            top: 0,
            ..d()
        },
        SkewOptions {
            group: Some("$sql".into()),
            where0: "$dep > $depmin".into(),
            top: 0,
            ..d()
        },
        SkewOptions {
            name: "LOBREAD|db file|EXEC".into(),
            group: Some("qq{$line:$nam}".into()),
            top: 0,
            ..d()
        },
        SkewOptions {
            name: ":all".into(),
            where1: "1".into(),
            group: Some("qq{$line:$text}".into()),
            sort: tracelab_skew::Sort::parse("1na").unwrap(),
            top: 0,
            ..d()
        },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn jobs_never_change_the_result(
        which in 0usize..4,
        edits in proptest::collection::vec((damage(), 0.0f64..1.0), 1..8),
        opts in 0usize..5,
    ) {
        let base = &bases()[which];
        let dir = std::env::temp_dir().join(format!("tracelab-jobs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("mutated-{which}.trc"));
        std::fs::write(&path, apply(base, &edits)).unwrap();
        let path = path.to_string_lossy().into_owned();
        let o = &option_sets()[opts];
        let one = run(&path, o, 1);
        let four = run(&path, o, 4);
        prop_assert!(one == four, "edits {:?}, options {}: {}", edits, opts, first_difference(&one, &four));
    }
}

/// Each kind of damage once, under every option set: the cases a random
/// draw might miss.
#[test]
fn every_damage_under_every_option_set() {
    let dir = std::env::temp_dir().join(format!("tracelab-jobs-all-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = &bases()[0];
    let edits: Vec<(Damage, f64)> = vec![
        (Damage::StrayParsingInCursor { cursor: 1, dep: 0 }, 0.12),
        (Damage::DropEndOfStmt, 0.2),
        (Damage::NegativeDepth, 0.3),
        (Damage::Separator, 0.35),
        (Damage::Nul, 0.02),
        (Damage::CutLine, 0.45),
        (Damage::DropLine, 0.5),
        (Damage::DuplicateLine, 0.55),
        (Damage::ParseError, 0.6),
        (Damage::Session(1), 0.65),
        (Damage::Session(2), 0.7),
        (Damage::Lob, 0.8),
        (Damage::StrayParsingInCursor { cursor: 0, dep: 2 }, 0.9),
    ];
    let path = dir.join("all.trc");
    std::fs::write(&path, apply(base, &edits)).unwrap();
    let path = path.to_string_lossy().into_owned();
    for o in option_sets() {
        let one = run(&path, &o, 1);
        assert!(one.contains("TOTAL ("), "{one}");
        let four = run(&path, &o, 4);
        assert!(one == four, "{o:?}: {}", first_difference(&one, &four));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
