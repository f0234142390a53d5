//! Running the built binary, for the CLI tests.

use std::process::Command;

/// Runs `tracelab ARGS` and returns (stdout, stderr, exit code).
pub fn tracelab(args: &[&str]) -> (String, String, i32) {
    tracelab_env(args, &[])
}

/// As [`tracelab`], with environment variables set.
#[allow(dead_code)]
pub fn tracelab_env(args: &[&str], env: &[(&str, &str)]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_tracelab"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run tracelab");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A file of tests/fixtures, as a path argument.
#[allow(dead_code)]
pub fn fixture(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// The db-ping trace, whose default profile mrskew published.
#[allow(dead_code)]
pub fn db_ping() -> String {
    fixture("db-ping/cdb1_ora_15440_PINGTEST.trc")
}

/// A fresh directory for one test's files.
#[allow(dead_code)]
pub fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tracelab-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
