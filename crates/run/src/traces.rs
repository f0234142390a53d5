//! The trace directory of a run: one file per session,
//! `tracelab_run_N.trc`, and no traces of another run beside them unless
//! asked for, so that `tracelab skew DIR/*.trc` profiles one run.

use std::path::Path;

use crate::error::RunError;

/// The file name of trace number `n`.
pub(crate) fn name(n: usize) -> String {
    format!("tracelab_run_{n}.trc")
}

/// Whether a file name is a trace's, plain or compressed (`x.trc`,
/// `x.trc.gz`, ...).
fn is_trace(file: &str) -> bool {
    file.ends_with(".trc") || file.contains(".trc.")
}

/// The number of this run's first trace file in `dir`: 0, so that a run
/// replaces the files of an earlier run of as many sessions or more; after
/// the highest `tracelab_run_N` there with `append`. A directory holding
/// traces this run would not replace (an earlier run with more sessions,
/// other tools' traces) is refused without `append`: they would be
/// profiled with this run's.
pub(crate) fn first_number(dir: &Path, sessions: usize, append: bool) -> Result<usize, RunError> {
    let io = |source| RunError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut others: Vec<String> = Vec::new();
    let mut highest: Option<usize> = None;
    for e in std::fs::read_dir(dir).map_err(io)? {
        let file = e.map_err(io)?.file_name().to_string_lossy().into_owned();
        if !is_trace(&file) {
            continue;
        }
        let n = file
            .strip_prefix("tracelab_run_")
            .and_then(|r| r.strip_suffix(".trc"))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = n {
            highest = Some(highest.map_or(n, |h| h.max(n)));
        }
        if n.is_none_or(|n| n >= sessions) {
            others.push(file);
        }
    }
    if append {
        return Ok(highest.map_or(0, |h| h + 1));
    }
    if others.is_empty() {
        return Ok(0);
    }
    others.sort_by_key(|f| (f.len(), f.clone()));
    let shown = match others.len() {
        1..=3 => others.join(", "),
        n => format!(
            "{}, ... {} ({n} files)",
            others[..2].join(", "),
            others[n - 1]
        ),
    };
    Err(RunError::Usage(format!(
        "--trace {}: holds traces this run would not replace ({shown}), so `tracelab skew {}/*.trc` \
         would profile them with this run's; remove them, choose an empty directory, or add \
         --trace-append to keep them and number this run's traces after them",
        dir.display(),
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_of_an_earlier_bigger_run_is_refused_unless_appending() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(first_number(d.path(), 4, false).unwrap(), 0);
        for n in 0..6 {
            std::fs::write(d.path().join(name(n)), "x").unwrap();
        }
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        // Six files, six sessions: all replaced.
        assert_eq!(first_number(d.path(), 6, false).unwrap(), 0);
        let e = first_number(d.path(), 4, false).unwrap_err().to_string();
        assert!(e.contains("tracelab_run_4.trc, tracelab_run_5.trc"), "{e}");
        assert!(e.contains("--trace-append"), "{e}");
        assert_eq!(first_number(d.path(), 4, true).unwrap(), 6);
        std::fs::write(d.path().join("other.trc.gz"), "x").unwrap();
        let e = first_number(d.path(), 6, false).unwrap_err().to_string();
        assert!(e.contains("other.trc.gz"), "{e}");
    }
}
