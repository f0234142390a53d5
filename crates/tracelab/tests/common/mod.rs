//! Running the built binary, for the CLI tests.

use std::process::Command;

/// Runs `tracelab ARGS` and returns (stdout, stderr, exit code).
#[allow(dead_code)]
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
