//! Running the built binary, for the CLI tests.

use std::process::Command;

/// Runs `tracelab ARGS` and returns (stdout, stderr, exit code).
#[allow(dead_code)]
pub fn tracelab(args: &[&str]) -> (String, String, i32) {
    tracelab_env(args, &[])
}

/// The binary under test: this build's, or `$TRACELAB_TEST_BIN` when set
/// (to show that a test fails on an older build).
#[allow(dead_code)]
pub fn bin() -> String {
    std::env::var("TRACELAB_TEST_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_tracelab").to_string())
}

/// As [`tracelab`], with environment variables set.
#[allow(dead_code)]
pub fn tracelab_env(args: &[&str], env: &[(&str, &str)]) -> (String, String, i32) {
    let out = Command::new(bin())
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

/// A fresh directory for one test's files (`tracelab-TAG-` and a random
/// suffix in the temporary directory), removed when it goes out of scope,
/// also when the test fails: a name of the test's own (or its process
/// id) would be shared with other runs, and stay behind after a panic.
#[allow(dead_code)]
pub fn tempdir(tag: &str) -> Scratch {
    Scratch(
        tempfile::Builder::new()
            .prefix(&format!("tracelab-{tag}-"))
            .tempdir()
            .unwrap(),
    )
}

/// A test's directory from [`tempdir`]: a path, removed on drop.
pub struct Scratch(tempfile::TempDir);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        self.0.path()
    }
}

/// A small study file in `dir`: `reps` repetitions of two levels of a
/// factor `n`, each run two executions of `sql`, a report of elapsed ms.
#[allow(dead_code)]
pub fn small_study(dir: &std::path::Path, sql: &str, reps: u32) -> std::path::PathBuf {
    let file = dir.join("small.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "small"
reps = {reps}
[workload]
sql = "{sql}"
statements = 2
[[factors]]
name = "n"
values = [1, 2]
[report]
rows = "n"
columns = [{{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }}]
"#
        ),
    )
    .unwrap();
    file
}

/// The server builds of other major versions than the machine's own,
/// from `TRACELAB_TEST_PG_BINDIRS` (bin directories joined by ':', as
/// scripts/fetch_servers.sh prints them; scripts/test.sh sets it), each
/// with its major version.
#[allow(dead_code)]
pub fn postgres_builds() -> Vec<(u32, String)> {
    let Ok(dirs) = std::env::var("TRACELAB_TEST_PG_BINDIRS") else {
        return Vec::new();
    };
    dirs.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| {
            let out = Command::new(std::path::Path::new(d).join("postgres"))
                .arg("--version")
                .output()
                .unwrap_or_else(|e| panic!("{d}/postgres: {e}"));
            let line = String::from_utf8_lossy(&out.stdout).to_string();
            let major = line
                .split("(PostgreSQL) ")
                .nth(1)
                .and_then(|v| v.split(['.', ' ', '\n']).next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{d}/postgres --version: {line}"));
            (major, d.to_string())
        })
        .collect()
}
