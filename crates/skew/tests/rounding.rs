//! skew rounds as mrskew, which is Perl: each figure is a double (a
//! running sum of the values in read order, a mean, a percentage) printed
//! by printf, which rounds the binary value. Where the exact decimal value
//! is a tie, the double decides, either way. The expected figures come
//! from Perl itself: tests/perl/mrskew_figures.pl runs the same
//! operations on the same hand-made traces (perl is on the machine, as
//! PostgreSQL is for the other tests); a few are also written out, with
//! the Perl one-liner that printed them.

use std::path::{Path, PathBuf};
use std::process::Command;

use tracelab_skew::{profile, Format, SkewOptions};

const HEADER: &str = "Trace file /u01/app/oracle/diag/rdbms/orcl/orcl/trace/orcl_ora_100.trc\n\
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production\n\
Unix process pid: 100, image: oracle@db1\n\n\
*** 2023-08-30T16:05:41.000000-04:00\n";

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("tracelab-rounding-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A trace of WAIT lines: (name, ela) in this order.
fn trace(name: &str, waits: &[(&str, i64)]) -> String {
    let mut t = HEADER.to_string();
    let mut tim = 1_000_000i64;
    for (nam, ela) in waits {
        tim += ela.abs() + 1;
        t.push_str(&format!(
            "WAIT #0: nam='{nam}' ela= {ela} driver id=1 #bytes=1 p3=0 obj#=-1 tim={tim}\n"
        ));
    }
    let path = dir().join(name);
    std::fs::write(&path, t).unwrap();
    path.to_string_lossy().into_owned()
}

/// skew's CSV table of `files`, read on `jobs` threads, every file cut
/// into pieces however small.
fn skew_csv(files: &[String], jobs: usize, top: usize) -> String {
    let opts = SkewOptions {
        jobs,
        min_split: 1,
        top,
        format: Format::Csv,
        ..SkewOptions::default()
    };
    let out = profile(&opts, files, None).unwrap();
    // Later pieces log their values and the merge replays them: the
    // files are read once, however they were cut.
    assert_eq!(out.reads, 1, "--jobs={jobs}: read twice");
    out.report.render(&opts.layout())
}

/// The same table, computed by Perl.
fn perl_csv(files: &[String], top: usize) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/perl/mrskew_figures.pl");
    let out = Command::new("perl")
        .arg(script)
        .arg(format!("--top={top}"))
        .args(files)
        .output()
        .expect("perl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn row<'a>(csv: &'a str, label: &str) -> &'a str {
    csv.lines()
        .find(|l| l.starts_with(&format!("{label},")))
        .unwrap_or_else(|| panic!("no row {label} in\n{csv}"))
}

#[test]
fn the_two_means_of_the_issue() {
    // perl -e 'printf "%.6f %.6f\n", (100*1e-6+201*1e-6)/2, (100*1e-6+213*1e-6)/2'
    // 0.000150 0.000157
    // Both are exact ties (150.5 µs and 156.5 µs): decimal half up would
    // print 0.000151 and 0.000157.
    let f = trace(
        "issue.trc",
        &[("a", 100), ("a", 201), ("b", 100), ("b", 213)],
    );
    let csv = skew_csv(std::slice::from_ref(&f), 1, 10);
    assert_eq!(
        row(&csv, "a"),
        "a,0.000301,49.0,2,0.000150,0.000100,0.000201"
    );
    assert_eq!(
        row(&csv, "b"),
        "b,0.000313,51.0,2,0.000157,0.000100,0.000213"
    );
    // perl -e 'printf "%.6f\n", (100*1e-6+201*1e-6+100*1e-6+213*1e-6)/4'
    // 0.000153 (153.5 µs)
    assert_eq!(
        row(&csv, "TOTAL (2)"),
        "TOTAL (2),0.000614,100.0,4,0.000153,0.000100,0.000213"
    );
    assert_eq!(csv, perl_csv(&[f], 10));
}

#[test]
fn the_order_of_the_additions_decides_a_tie() {
    // An exact mean of 2684.5 µs, read in two orders:
    // perl -e '$s=0; $s+=$_*1e-6 for 4050,1227,3091,2370; printf "%.6f\n", $s/4'
    // 0.002685
    // perl -e '$s=0; $s+=$_*1e-6 for 2370,3091,1227,4050; printf "%.6f\n", $s/4'
    // 0.002684
    let values = [4050, 1227, 3091, 2370];
    let fwd: Vec<(&str, i64)> = values.iter().map(|&v| ("x", v)).collect();
    let back: Vec<(&str, i64)> = values.iter().rev().map(|&v| ("x", v)).collect();
    let f = trace("forward.trc", &fwd);
    let b = trace("backward.trc", &back);
    for jobs in [1, 4] {
        let csv = skew_csv(std::slice::from_ref(&f), jobs, 10);
        assert_eq!(
            row(&csv, "x"),
            "x,0.010738,100.0,4,0.002685,0.001227,0.004050"
        );
        let csv = skew_csv(std::slice::from_ref(&b), jobs, 10);
        assert_eq!(
            row(&csv, "x"),
            "x,0.010738,100.0,4,0.002684,0.001227,0.004050"
        );
    }
    // Split across two files, in both orders: the running sum goes on
    // from the first file into the second.
    let f1 = trace("first-half.trc", &fwd[..2]);
    let f2 = trace("second-half.trc", &fwd[2..]);
    let csv = skew_csv(&[f1.clone(), f2.clone()], 2, 10);
    assert_eq!(
        row(&csv, "x"),
        "x,0.010738,100.0,4,0.002685,0.001227,0.004050"
    );
    assert_eq!(csv, perl_csv(&[f1.clone(), f2.clone()], 10));
    let csv = skew_csv(&[f2.clone(), f1.clone()], 2, 10);
    assert_eq!(csv, perl_csv(&[f2, f1], 10));
}

/// A deterministic stream of pseudo-random numbers (a 64-bit LCG): the
/// traces are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

#[test]
fn tie_groups_match_perl_however_the_files_are_cut() {
    // Hundreds of groups of small values: a group's mean is a tie one
    // time in two when it has two calls, and often otherwise; groups of
    // many calls span every piece, whose logs the merge replays.
    let mut rng = Lcg(37);
    let mut files = Vec::new();
    for f in 0..3 {
        let waits: Vec<(String, i64)> = (0..4000)
            .map(|_| {
                let g = rng.below(300);
                // A few big groups and many small ones.
                let name = if g < 6 {
                    format!("big {g}")
                } else {
                    format!("w{}", rng.below(900))
                };
                (name, rng.below(3000) as i64)
            })
            .collect();
        let refs: Vec<(&str, i64)> = waits.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        files.push(trace(&format!("ties-{f}.trc"), &refs));
    }
    for top in [0, 10] {
        let perl = perl_csv(&files, top);
        for jobs in [1, 2, 3, 4] {
            let ours = skew_csv(&files, jobs, top);
            if ours != perl {
                let diff: Vec<String> = ours
                    .lines()
                    .zip(perl.lines())
                    .filter(|(a, b)| a != b)
                    .take(5)
                    .map(|(a, b)| format!("skew {a}\nperl {b}"))
                    .collect();
                panic!("--jobs={jobs} --top={top}:\n{}", diff.join("\n"));
            }
        }
        // One file alone, cut into pieces.
        let perl = perl_csv(&files[..1], top);
        for jobs in [1, 4] {
            assert_eq!(skew_csv(&files[..1], jobs, top), perl, "--jobs={jobs}");
        }
    }
    // The exact decimal rule would differ: at least one mean here is an
    // exact tie that Perl's double rounds down.
    let perl = perl_csv(&files, 0);
    let down = perl.lines().skip(1).any(|l| {
        let c: Vec<&str> = l.split(',').collect();
        let (sum, n): (f64, f64) = (c[1].parse().unwrap(), c[3].parse().unwrap());
        let us = (sum * 1e6).round() as i64;
        let n = n as i64;
        // An exact tie of the mean at the sixth decimal printed rounded down.
        2 * us % n == 0
            && (2 * us / n) % 2 == 1
            && c[4] == format!("{:.6}", ((us - n / 2) / n) as f64 * 1e-6)
    });
    assert!(down, "no tie rounded down in\n{perl}");
}

#[test]
fn real_traces_are_read_once_on_any_number_of_threads() {
    // The 20 traces of one 19c workload: its biggest groups (60,000
    // waits for the client, 26,861 s) span every file, and their running
    // sums could not be settled from the files' sums alone.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/crc-local-force");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".trc.gz"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 20);
    let one = skew_csv(&files, 1, 0);
    for jobs in [2, 3] {
        assert_eq!(skew_csv(&files, jobs, 0), one, "--jobs={jobs}");
    }
}
