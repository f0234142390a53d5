//! Ctrl-C, SIGTERM and SIGHUP, handled one way by `run`, `study` and `db`:
//! the first of them sets one flag that every wait watches (sessions stop
//! after their current call, a study after its run in flight, a private
//! server being made stops and is removed), the summary is still printed,
//! the private server is still removed, and the exit status is 128 + the
//! signal's number (130, 143, 129), as shells report a command a signal
//! ended.
//!
//! Written with `sigaction` rather than the ctrlc crate, which cannot say
//! which signal arrived; the handler only stores two atomics.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The first signal caught; 0 before any.
static CAUGHT: AtomicI32 = AtomicI32::new(0);
/// The flag the process's waits watch.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomics here: async-signal-safe.
    let _ = CAUGHT.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    if let Some(f) = FLAG.get() {
        f.store(true, Ordering::SeqCst);
    }
}

/// Installs the handlers (once) and returns the flag they set; server
/// starts watch it too.
pub fn install() -> Arc<AtomicBool> {
    let flag = FLAG
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only touches atomics and a OnceLock that is
        // set before the handler is installed.
        unsafe {
            let _ = sigaction(sig, &action);
        }
    }
    tracelab_db::set_interrupt(flag.clone());
    flag
}

/// The exit status for a command a signal stopped: 128 + its number (130
/// for Ctrl-C when none is recorded).
pub fn status() -> i32 {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => 130,
        s => 128 + s,
    }
}
