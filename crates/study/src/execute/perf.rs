//! `perf stat -e EVENT,... -p PID` of a server over a run: the process's
//! threads, and what they start while perf is attached (counters are
//! inherited). The server counters' context switches and a study's
//! `[measure.perf]` events both come from here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// perf counting, until [`Perf::finish`].
pub(crate) struct Perf {
    child: Child,
    out: PathBuf,
    stderr: PathBuf,
}

impl Perf {
    /// Attaches perf to `pid`, counting `events`, its CSV into `out`.
    pub(crate) fn start(pid: i32, events: &[String], out: &Path) -> Result<Perf, String> {
        let stderr = out.with_extension("err");
        let err =
            std::fs::File::create(&stderr).map_err(|e| format!("{}: {e}", stderr.display()))?;
        let child = Command::new("perf")
            .args(["stat", "-x,", "-e", &events.join(","), "-o"])
            .arg(out)
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    "perf not installed (apt-get install -y linux-perf)".to_string()
                }
                _ => format!("cannot start perf: {e}"),
            })?;
        // Attached before the run's first connection.
        std::thread::sleep(Duration::from_millis(200));
        Ok(Perf {
            child,
            out: out.to_path_buf(),
            stderr,
        })
    }

    /// Stops perf (SIGINT: it prints its counts) and reads them: the
    /// count of each event counted, or why none was (perf refused to
    /// attach, `perf_event_paranoid`, ...). An event this machine does
    /// not count (`<not supported>`) is left out of the map.
    pub(crate) fn finish(mut self) -> Result<BTreeMap<String, u64>, String> {
        crate::execute::measure::interrupt(&mut self.child);
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.stderr);
        let counts = parse_perf_csv(&text);
        if counts.is_empty() && !text.contains("<not supported>") {
            let why = err
                .lines()
                .chain(text.lines())
                .find(|l| !l.trim().is_empty() && !l.starts_with('#'));
            return Err(format!(
                "perf stat counted nothing ({})",
                why.unwrap_or("no output").trim()
            ));
        }
        Ok(counts)
    }
}

/// The counts in `perf stat -x,` output: `COUNT,UNIT,EVENT,...` per
/// line; an event with `<not supported>` or `<not counted>` is absent.
pub(crate) fn parse_perf_csv(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 3 {
                return None;
            }
            let n = f[0].trim().parse::<u64>().ok()?;
            // perf may add a modifier to the event's name (`cycles:u`).
            Some((f[2].trim().to_string(), n))
        })
        .collect()
}

/// The count of `event` in `counts` (under its name, or with a modifier
/// perf added).
pub(crate) fn count_of(counts: &BTreeMap<String, u64>, event: &str) -> Option<u64> {
    counts
        .iter()
        .find(|(k, _)| *k == event || k.starts_with(&format!("{event}:")))
        .map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_perf_csv_and_its_refusals() {
        let ok = "# started on Mon Nov 23 22:08:13 2026\n\n5950,,context-switches,3559339658,100.00,,\n<not supported>,,instructions,0,100.00,,\n";
        let c = parse_perf_csv(ok);
        assert_eq!(count_of(&c, "context-switches"), Some(5950));
        assert_eq!(count_of(&c, "instructions"), None);
        assert!(parse_perf_csv("").is_empty());
    }
}
