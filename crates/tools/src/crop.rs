//! `crop`: a stretch of a trace (a time window, a line range, one
//! statement or one session) as a trace of its own, which skew and prof
//! read as they read the whole file (Method R's mrcrop).

use std::io::Write;

use tracelab_trace::{ReadOptions, Reader, Source};

use crate::error::ToolsError;
use crate::scan::Field;
use crate::select::{Item, Policy, Selector};
use crate::sink::Sink;

pub use crate::select::Bound;

/// What to keep.
#[derive(Debug, Clone)]
pub enum Selection {
    Window {
        from: Option<Bound>,
        to: Option<Bound>,
    },
    SqlId(String),
    Session(String),
}

/// What a crop did.
#[derive(Debug, Clone, Default)]
pub struct CropOutcome {
    /// Lines written (carried PARSING IN CURSOR blocks and repeated
    /// context included; the header and added timestamps not).
    pub lines: u64,
    /// `***` timestamps written so that kept calls keep their wall clock.
    pub stamps_added: u64,
    /// The reader's warnings about damaged lines.
    pub warnings: Vec<String>,
}

/// Reads a bound: `line:N` a line number, `tim:N` or a bare integer a
/// `tim`, anything else a wall-clock time as the trace writes it
/// (`2022-09-01T17:39:34.556684`, `2018-04-05 18:18:44.341`; a zone
/// after it is ignored: the trace's own times are local).
pub fn parse_bound(s: &str) -> Result<Bound, ToolsError> {
    let bad = |why: &str| ToolsError::Usage(format!("{s:?}: {why}"));
    if let Some(n) = s.strip_prefix("line:") {
        return n
            .parse()
            .map(Bound::Line)
            .map_err(|_| bad("expected a line number after line:"));
    }
    let tim = s.strip_prefix("tim:").unwrap_or(s);
    if !tim.is_empty() && tim.bytes().all(|c| c.is_ascii_digit()) {
        return tim
            .parse()
            .map(Bound::Tim)
            .map_err(|_| bad("the tim does not fit in 64 bits"));
    }
    if s.starts_with("tim:") {
        return Err(bad("expected an integer after tim:"));
    }
    tracelab_trace::parse_wall_clock(s.as_bytes())
        .map(Bound::Wall)
        .ok_or_else(|| bad("expected a tim (an integer), line:N, or a wall-clock time such as 2022-09-01T17:39:34.556684"))
}

/// Writes the chosen part of `file` to `out` (named `what` in errors).
pub fn crop(
    file: &str,
    sel: &Selection,
    out: impl Write,
    what: &str,
) -> Result<CropOutcome, ToolsError> {
    let policy = match sel {
        Selection::Window { from, to } => Policy::Window {
            from: *from,
            to: *to,
        },
        Selection::SqlId(id) => Policy::SqlId(id.as_bytes().to_vec()),
        Selection::Session(s) => Policy::Field(Field::Session, s.clone()),
    };
    let trace = tracelab_trace::open(&Source::from_arg(file))?;
    let mut sink = Sink::new(out, what, false);
    let mut failed: Option<ToolsError> = None;
    let mut lines = 0u64;
    let summary = {
        let mut sel = Selector::new(policy, |item: Item<'_>| {
            if failed.is_some() {
                return;
            }
            if !item.header {
                lines += 1;
            }
            if let Err(e) = sink.write(&item, 0) {
                failed = Some(e);
            }
        });
        let mut reader = Reader::new(ReadOptions {
            all_lines: true,
            chained: true,
            ..ReadOptions::default()
        });
        // Past the window nothing more is chosen: the rest is not read.
        let summary = reader.read_until(trace, |c| {
            sel.feed(c);
            if sel.done() {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })?;
        sel.finish();
        summary
    };
    if let Some(e) = failed {
        return Err(e);
    }
    sink.flush()?;
    Ok(CropOutcome {
        lines,
        stamps_added: sink.stamps_added,
        warnings: summary
            .diagnostics
            .kept
            .iter()
            .map(ToString::to_string)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_told_apart_by_their_form() {
        assert_eq!(parse_bound("line:12").unwrap(), Bound::Line(12));
        assert_eq!(
            parse_bound("9578274564137").unwrap(),
            Bound::Tim(9578274564137)
        );
        assert_eq!(parse_bound("tim:5").unwrap(), Bound::Tim(5));
        assert!(matches!(
            parse_bound("2022-09-01T17:39:34.5").unwrap(),
            Bound::Wall(_)
        ));
        let e = parse_bound("yesterday").unwrap_err().to_string();
        assert!(e.contains("expected a tim"), "{e}");
        assert!(parse_bound("line:x").is_err());
    }
}
