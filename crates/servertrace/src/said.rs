//! Lines for the server's log said once per server, not once per
//! process: a PostgreSQL server is a process per connection, and a line
//! each connection repeats (its client took TLS, say) would fill the log
//! of a busy server. The flags live in one page mapped shared, and
//! anonymous, when the library is loaded: in the postmaster, before it
//! forks anything, so that every backend sees the same page. (MariaDB is
//! one process: the page is its own.) Where the page could not be
//! mapped, the line is said each time.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering::Relaxed};

extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
}

const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const MAP_SHARED: c_int = 1;
const MAP_ANONYMOUS: c_int = 0x20;
const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
const PAGE: usize = 4096;

/// What is said once per server: an index into the shared page.
#[derive(Clone, Copy)]
pub enum Once {
    /// A connection took TLS or GSS encryption.
    Encrypted,
}

/// The shared page (null: not mapped).
static PAGE_AT: AtomicPtr<AtomicU8> = AtomicPtr::new(std::ptr::null_mut());

/// Maps the page when the library is loaded (the dynamic loader runs
/// `.init_array`'s functions before the program's `main`).
#[used]
#[link_section = ".init_array"]
static MAP_AT_LOAD: extern "C" fn() = map_page;

extern "C" fn map_page() {
    // SAFETY: a new anonymous mapping; nothing else is touched.
    let p = unsafe {
        mmap(
            std::ptr::null_mut(),
            PAGE,
            PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p != MAP_FAILED && !p.is_null() {
        PAGE_AT.store(p.cast(), Relaxed);
    }
}

/// Says `what` in the server's log unless a process of this server said
/// it already.
pub fn once(flag: Once, what: &str) {
    let page = PAGE_AT.load(Relaxed);
    if !page.is_null() {
        // SAFETY: the page is PAGE bytes, mapped for the process's life,
        // and `flag` indexes its first bytes.
        let cell = unsafe { &*page.add(flag as usize) };
        if cell.swap(1, Relaxed) == 1 {
            return;
        }
    }
    crate::say(what);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page is mapped when the test binary (which links the library)
    /// is loaded, and a child forked after that shares it: what the child
    /// marks, the parent sees.
    #[test]
    fn the_page_is_shared_with_children_forked_after_the_load() {
        extern "C" {
            fn fork() -> c_int;
            fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
            fn _exit(code: c_int) -> !;
        }
        let page = PAGE_AT.load(Relaxed);
        assert!(!page.is_null());
        // SAFETY: the page is mapped; index 1 is no flag's (this test's).
        let cell = unsafe { &*page.add(1) };
        cell.store(0, Relaxed);
        // SAFETY: the child only stores to the page and exits.
        let pid = unsafe { fork() };
        if pid == 0 {
            cell.store(1, Relaxed);
            unsafe { _exit(0) };
        }
        assert!(pid > 0);
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        unsafe { waitpid(pid, &mut status, 0) };
        assert_eq!(cell.load(Relaxed), 1);
    }
}
