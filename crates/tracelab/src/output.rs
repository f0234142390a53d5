//! Standard output and standard error, the Unix way: a reader that goes
//! away (`tracelab study list | head -1`) ends the output quietly instead
//! of a panic with exit 101 (`print!` panics on a closed pipe), and a
//! message that cannot be written to standard error is dropped, as there
//! is nowhere left to say it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::exit::Failure;

/// Set once standard output's reader has gone: later output is dropped.
static GONE: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output. A closed pipe is the reader's choice,
/// not an error: the rest is dropped and the command ends with its own
/// status. Any other failure (a full disk) is an output error naming
/// standard output.
pub fn out(text: &str) -> Result<(), Failure> {
    if GONE.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            GONE.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(source) => Err(Failure::Output {
            what: "standard output".into(),
            source,
        }),
        Ok(()) => Ok(()),
    }
}

/// A message on standard error; dropped if it cannot be written.
pub fn err(args: std::fmt::Arguments<'_>) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(args);
}

/// `eprintln!` that never panics: a line on standard error, dropped if it
/// cannot be written.
macro_rules! say {
    ($($t:tt)*) => {
        $crate::output::err(format_args!("{}\n", format_args!($($t)*)))
    };
}
pub(crate) use say;
