//! The waits MariaDB does not announce with `thd_wait_begin`: a
//! connection's thread that sleeps on a lock or a condition variable
//! outside the server's own waits. Measured on 10.11 (an autocommit
//! INSERT at 4 sessions): without these, a third of the sessions' time
//! was "unaccounted-for within calls"; it was the OK packet's wait for
//! the commit's redo flush, which MariaDB 10.6 and later leave to the
//! group commit's leader and wait for in `net_real_write` (a
//! `pthread_cond_wait`), and the time a woken thread waits for a CPU.
//!
//! The wrapped calls: `pthread_cond_wait`, `pthread_cond_timedwait`,
//! `pthread_cond_clockwait`, `pthread_mutex_lock`,
//! `pthread_rwlock_rdlock`, `pthread_rwlock_wrlock`, and `syscall`'s
//! futex sleeps.
//!
//! Each wait is named by the call and, where the server's symbols tell,
//! the function that called it: `pthread_cond_wait net_real_write`,
//! `pthread_mutex_lock MDL_map::find_or_insert` (and the read-write
//! locks' `pthread_rwlock_rdlock`/`wrlock`), as a file wait is named
//! by the call and the file. InnoDB's own mutexes and rw-locks sleep in
//! futex(2) through syscall(2), from functions the executable does not
//! export: named from its symbol table where it keeps one (`futex_wait
//! ssux_lock_impl::rd_wait`, see `symtab`), else `futex_wait`. Every other
//! process (PostgreSQL) and every thread that traces no connection passes
//! straight through.

use std::collections::HashMap;
use std::ffi::{c_int, c_long, c_void, CStr};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use crate::mariadb;

/// futex(2)'s number.
#[cfg(target_arch = "x86_64")]
const SYS_FUTEX: c_long = 202;
#[cfg(target_arch = "aarch64")]
const SYS_FUTEX: c_long = 98;

/// The futex operations that sleep (the command is the operation without
/// its PRIVATE and CLOCK_REALTIME flags): WAIT, LOCK_PI, WAIT_BITSET,
/// WAIT_REQUEUE_PI, LOCK_PI2.
fn futex_sleeps(op: c_long) -> bool {
    matches!(op & 0x7f, 0 | 6 | 9 | 11 | 13)
}

/// syscall(2), for InnoDB's futex waits, which are named by the function
/// that made the call (`futex_wait ssux_lock_impl::wr_wait`, where the
/// server's symbol table names it: see `symtab`).
///
/// syscall(2) is variadic, and stable Rust cannot define a variadic
/// function, nor read its own return address: this trampoline passes the
/// six arguments a system call can take, then its caller's return address
/// as one more, to `syscall_from`. On x86-64 the seventh argument is
/// on the stack: the trampoline makes a frame with it and the address
/// above, and calls; on aarch64 all eight go in registers. A variadic
/// call passes its integer arguments where a call of this signature reads
/// them, and glibc's `syscall` reads all six whatever its caller passed,
/// as they are passed on here.
///
/// # Safety
/// As libc's `syscall`.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn syscall(
    n: c_long,
    a: c_long,
    b: c_long,
    c: c_long,
    d: c_long,
    e: c_long,
    f: c_long,
) -> c_long {
    // x86-64: at entry [rsp] is the return address and [rsp+8] the
    // seventh argument; after `push rbp` they are at [rbp+8] and
    // [rbp+16], and the two pushes below keep the stack 16-byte aligned
    // at the call.
    #[cfg(target_arch = "x86_64")]
    core::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push qword ptr [rbp + 8]",
        "push qword ptr [rbp + 16]",
        "call {inner}",
        "leave",
        "ret",
        inner = sym syscall_from,
    );
    #[cfg(target_arch = "aarch64")]
    core::arch::naked_asm!("mov x7, x30", "b {inner}", inner = sym syscall_from);
}

/// `syscall`'s body; `caller` is the address it was called from.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn syscall_from(
    n: c_long,
    a: c_long,
    b: c_long,
    c: c_long,
    d: c_long,
    e: c_long,
    f: c_long,
    caller: usize,
) -> c_long {
    let call = real!(
        SC,
        c"syscall",
        unsafe extern "C" fn(c_long, c_long, c_long, c_long, c_long, c_long, c_long) -> c_long
    );
    if n == SYS_FUTEX && futex_sleeps(b) && mariadb::on() {
        return mariadb::lock_wait("futex_wait", caller, a as usize, || {
            call(n, a, b, c, d, e, f)
        });
    }
    call(n, a, b, c, d, e, f)
}

/// The version of glibc's condition variables: the unversioned lookup may
/// find the compatibility version of 2.2.5, whose `pthread_cond_t` has
/// another layout.
#[cfg(target_arch = "x86_64")]
const COND_VERSION: &CStr = c"GLIBC_2.3.2";
#[cfg(target_arch = "aarch64")]
const COND_VERSION: &CStr = c"GLIBC_2.17";

const EBUSY: c_int = 16;

/// Defines the exported `$name`, a trampoline that passes its caller's
/// return address to `$inner` as one more argument, in the register of
/// the first argument `$name` does not take (`$x86` on x86-64, `$arm` on
/// aarch64). Rust has no
/// `__builtin_return_address`; at a naked function's first instruction
/// the return address is at the top of the stack (x86-64) or in the link
/// register (aarch64), and a jump leaves the stack as the caller made it.
macro_rules! with_caller {
    ($(#[$doc:meta])* $name:ident ($($arg:ident: $ty:ty),*) => $inner:ident, $x86:literal, $arm:literal) => {
        $(#[$doc])*
        /// # Safety
        /// As libc's function of this name.
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            #[cfg(target_arch = "x86_64")]
            core::arch::naked_asm!(concat!("mov ", $x86, ", [rsp]"), "jmp {inner}", inner = sym $inner);
            #[cfg(target_arch = "aarch64")]
            core::arch::naked_asm!(concat!("mov ", $arm, ", x30"), "b {inner}", inner = sym $inner);
        }
    };
}

/// Defines the exported lock function `$name` (through `with_caller`) and
/// its body `$inner`: in a traced connection's thread the lock is tried
/// first with `$try`, so a free lock costs what it did, and a lock another
/// thread holds is waited for as `NAME CALLER`. EBUSY from the try: held
/// by another thread (or, for an error-checking mutex, by this one: the
/// lock then returns EDEADLK at once, as it would have); any other answer
/// is the lock's own.
macro_rules! tried_first {
    ($(#[$doc:meta])* $name:ident => $inner:ident, $sym:literal, $try:literal, $x86:literal, $arm:literal) => {
        with_caller!($(#[$doc])* $name(l: *mut c_void) => $inner, $x86, $arm);

        unsafe extern "C" fn $inner(l: *mut c_void, caller: usize) -> c_int {
            let lock = real!(LOCK, $sym, unsafe extern "C" fn(*mut c_void) -> c_int);
            if !mariadb::on() || !mariadb::tracing_thread() {
                return lock(l);
            }
            let r = real!(TRY, $try, unsafe extern "C" fn(*mut c_void) -> c_int)(l);
            if r != EBUSY {
                return r;
            }
            mariadb::lock_wait(stringify!($name), caller, l as usize, || lock(l))
        }
    };
}

tried_first!(
    /// The server's mutexes (`mysql_mutex_lock`).
    pthread_mutex_lock => mutex_lock, c"pthread_mutex_lock", c"pthread_mutex_trylock", "rsi", "x1"
);
tried_first!(
    /// The server's read-write locks (`mysql_rwlock_rdlock`).
    pthread_rwlock_rdlock => rwlock_rdlock, c"pthread_rwlock_rdlock", c"pthread_rwlock_tryrdlock", "rsi", "x1"
);
tried_first!(
    /// The server's read-write locks (`mysql_rwlock_wrlock`).
    pthread_rwlock_wrlock => rwlock_wrlock, c"pthread_rwlock_wrlock", c"pthread_rwlock_trywrlock", "rsi", "x1"
);

with_caller!(
    /// The server's condition variables: a wait outside the server's
    /// announced waits is a `pthread_cond_wait CALLER`.
    pthread_cond_wait(cond: *mut c_void, m: *mut c_void) => cond_wait, "rdx", "x2"
);

unsafe extern "C" fn cond_wait(cond: *mut c_void, m: *mut c_void, caller: usize) -> c_int {
    let f = real!(
        CW,
        c"pthread_cond_wait" @ COND_VERSION,
        unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int
    );
    if !mariadb::on() {
        return f(cond, m);
    }
    mariadb::lock_wait("pthread_cond_wait", caller, cond as usize, || f(cond, m))
}

with_caller!(
    /// As `pthread_cond_wait`, with a timeout.
    pthread_cond_timedwait(cond: *mut c_void, m: *mut c_void, abstime: *const c_void) => cond_timedwait, "rcx", "x3"
);

unsafe extern "C" fn cond_timedwait(
    cond: *mut c_void,
    m: *mut c_void,
    abstime: *const c_void,
    caller: usize,
) -> c_int {
    let f = real!(
        CTW,
        c"pthread_cond_timedwait" @ COND_VERSION,
        unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_void) -> c_int
    );
    if !mariadb::on() {
        return f(cond, m, abstime);
    }
    mariadb::lock_wait("pthread_cond_timedwait", caller, cond as usize, || {
        f(cond, m, abstime)
    })
}

with_caller!(
    /// As `pthread_cond_timedwait`, on a chosen clock (glibc 2.30; what
    /// libstdc++'s `condition_variable::wait_for` calls).
    pthread_cond_clockwait(cond: *mut c_void, m: *mut c_void, clock: c_int, abstime: *const c_void) => cond_clockwait, "r8", "x4"
);

unsafe extern "C" fn cond_clockwait(
    cond: *mut c_void,
    m: *mut c_void,
    clock: c_int,
    abstime: *const c_void,
    caller: usize,
) -> c_int {
    let f = real!(
        CCW,
        c"pthread_cond_clockwait",
        unsafe extern "C" fn(*mut c_void, *mut c_void, c_int, *const c_void) -> c_int
    );
    if !mariadb::on() {
        return f(cond, m, clock, abstime);
    }
    mariadb::lock_wait("pthread_cond_clockwait", caller, cond as usize, || {
        f(cond, m, clock, abstime)
    })
}

/// `call` and the function at `caller` (0: none), named once per call
/// site for the process (the names are leaked: there are as many as call
/// sites that ever waited). Called inside the library, where a futex wait
/// of its own is not traced.
pub fn named(call: &'static str, caller: usize) -> &'static str {
    if caller == 0 {
        return call;
    }
    static NAMES: Mutex<Option<HashMap<(&'static str, usize), &'static str>>> = Mutex::new(None);
    let Ok(mut names) = NAMES.lock() else {
        return call;
    };
    names
        .get_or_insert_with(HashMap::new)
        .entry((call, caller))
        .or_insert_with(|| match function_at(caller) {
            Some(f) => Box::leak(format!("{call} {f}").into_boxed_str()),
            None => call,
        })
}

/// glibc's `Dl_info`.
#[repr(C)]
struct DlInfo {
    fname: *const std::ffi::c_char,
    fbase: *mut c_void,
    sname: *const std::ffi::c_char,
    saddr: *mut c_void,
}

/// ELF64's symbol: its size, at byte 16.
#[repr(C)]
struct Elf64Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

const RTLD_DL_SYMENT: c_int = 1;

extern "C" {
    fn dladdr1(
        addr: *const c_void,
        info: *mut DlInfo,
        extra: *mut *mut c_void,
        flags: c_int,
    ) -> c_int;
}

/// The name of the function whose code holds `addr`, without its
/// parameters: an exported one's, else one the object's symbol table
/// names (see `symtab`); `None` where neither covers it (dladdr alone
/// would name the nearest symbol below, another function).
fn function_at(addr: usize) -> Option<String> {
    let mut info = DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    let mut sym: *mut c_void = std::ptr::null_mut();
    // SAFETY: dladdr1 fills `info` and `sym` (a pointer to the symbol's
    // ELF entry, or null); the name is NUL-terminated and lives as long
    // as the object.
    unsafe {
        if dladdr1(addr as *const c_void, &mut info, &mut sym, RTLD_DL_SYMENT) == 0 {
            return None;
        }
        if !info.sname.is_null() && !sym.is_null() {
            let size = (*(sym as *const Elf64Sym)).size as usize;
            let start = info.saddr as usize;
            if addr >= start && addr < start + size {
                return Some(unmangled(&CStr::from_ptr(info.sname).to_string_lossy()));
            }
        }
        let file = if info.fname.is_null() {
            String::new()
        } else {
            CStr::from_ptr(info.fname).to_string_lossy().into_owned()
        };
        kept_to_itself(&file, info.fbase as u64, addr as u64)
    }
}

/// The name of the function at `addr` in the object `file` loaded at
/// `base`, from its symbol table (read once per object). The main
/// program's name may be relative (its argv[0]): it is read through
/// /proc/self/exe then.
fn kept_to_itself(file: &str, base: u64, addr: u64) -> Option<String> {
    static OBJECTS: Mutex<Option<HashMap<String, Option<crate::symtab::Functions>>>> =
        Mutex::new(None);
    let mut objects = OBJECTS.lock().ok()?;
    let functions = objects
        .get_or_insert_with(HashMap::new)
        .entry(file.to_string())
        .or_insert_with(|| {
            let path = if file.starts_with('/') {
                file
            } else {
                "/proc/self/exe"
            };
            crate::symtab::Functions::of(path, base)
        })
        .as_ref()?;
    Some(unmangled(functions.at(addr)?))
}

/// A C++ symbol's qualified name (`_ZN7MDL_map14find_or_insertEP3THD...`
/// is `MDL_map::find_or_insert`), a template's without its arguments
/// (`_ZN14ssux_lock_implILb1EE7wr_waitEj` is `ssux_lock_impl::wr_wait`);
/// a C name, or one this does not read (operators, constructors), as it
/// is. Written here rather than taken from a demangling crate: only the
/// qualified name is wanted, and the preloaded library keeps to no
/// dependencies.
pub fn unmangled(sym: &str) -> String {
    let Some(rest) = sym.strip_prefix("_Z") else {
        return sym.to_string();
    };
    let nested = rest.starts_with('N');
    let mut s = rest.strip_prefix('N').unwrap_or(rest).as_bytes();
    if nested {
        // CV-qualifiers of a member function.
        while let [b'K' | b'V' | b'r', tail @ ..] = s {
            s = tail;
        }
    }
    let mut parts = Vec::new();
    loop {
        let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(n) = std::str::from_utf8(&s[..digits])
            .ok()
            .and_then(|d| d.parse::<usize>().ok())
        else {
            break;
        };
        let Some(name) = digits.checked_add(n).and_then(|end| s.get(digits..end)) else {
            return sym.to_string();
        };
        parts.push(String::from_utf8_lossy(name).into_owned());
        s = &s[digits + n..];
        if s.first() == Some(&b'I') {
            match template_args(s) {
                Some(rest) => s = rest,
                None => return sym.to_string(),
            }
        }
        if !nested {
            break;
        }
    }
    let ended = !nested || s.first() == Some(&b'E');
    if parts.is_empty() || !ended {
        return sym.to_string();
    }
    parts.join("::")
}

/// What follows a template's arguments (`I...E`, which nest, and whose
/// names may hold any letter: each name is skipped by its length; a
/// literal, `L` type value `E`, holds a value, not a length).
fn template_args(mut s: &[u8]) -> Option<&[u8]> {
    let mut depth = 0usize;
    loop {
        let (&b, rest) = s.split_first()?;
        if b.is_ascii_digit() {
            let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
            let n: usize = std::str::from_utf8(&s[..digits]).ok()?.parse().ok()?;
            s = s.get(digits.checked_add(n)?..)?;
            continue;
        }
        s = rest;
        match b {
            b'L' => s = &s[s.iter().position(|&c| c == b'E')? + 1..],
            b'I' | b'N' | b'X' => depth += 1,
            b'E' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(s);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_of_the_servers_functions() {
        // From mariadbd 10.11's dynamic symbols.
        assert_eq!(
            unmangled("_ZN7MDL_map14find_or_insertEP3THDPK7MDL_key"),
            "MDL_map::find_or_insert"
        );
        assert_eq!(unmangled("net_real_write"), "net_real_write");
        assert_eq!(
            unmangled("_Z30wait_for_pending_deadlock_killP3THDP14rpl_group_info"),
            "wait_for_pending_deadlock_kill"
        );
        assert_eq!(unmangled("_ZNK3THD12is_read_onlyEv"), "THD::is_read_only");
        // Templates, without their arguments (InnoDB's locks, from the
        // symbol table of MariaDB 11.4.5's own build).
        assert_eq!(
            unmangled("_ZN14ssux_lock_implILb1EE7wr_waitEj"),
            "ssux_lock_impl::wr_wait"
        );
        assert_eq!(
            unmangled("_ZN14srw_mutex_implILb0EE4waitEj"),
            "srw_mutex_impl::wait"
        );
        assert_eq!(unmangled("_ZN3fooIiE3barEv"), "foo::bar");
        // A name inside the arguments that holds an E and an I.
        assert_eq!(unmangled("_ZN3fooI5EInfoE3barEv"), "foo::bar");
        assert_eq!(unmangled("_ZN3fooIN2ns1TEE3barEv"), "foo::bar");
        // Unbalanced: left as it is.
        assert_eq!(unmangled("_ZN3fooIiL"), "_ZN3fooIiL");
        assert_eq!(unmangled("_ZN3fooIiE"), "_ZN3fooIiE");
        // A constructor: left as it is.
        assert_eq!(
            unmangled("_ZN5tpool11thread_poolC2Ev"),
            "_ZN5tpool11thread_poolC2Ev"
        );
        assert_eq!(unmangled("_Z"), "_Z");
        assert_eq!(unmangled("_ZN99x"), "_ZN99x");
        // A length past the end of memory: no overflow, no panic (a panic
        // would abort the server the library is loaded into).
        let huge = format!("_ZN{}xE", usize::MAX);
        assert_eq!(unmangled(&huge), huge);
    }

    /// The trampolines pass every argument through to glibc, in a process
    /// that is not a MariaDB server (where they only pass through).
    #[test]
    fn the_wrappers_pass_their_arguments_through() {
        extern "C" {
            fn pthread_mutex_trylock(m: *mut c_void) -> c_int;
            fn pthread_mutex_unlock(m: *mut c_void) -> c_int;
            fn pthread_rwlock_trywrlock(l: *mut c_void) -> c_int;
            fn pthread_rwlock_unlock(l: *mut c_void) -> c_int;
            fn getpid() -> c_int;
        }
        const ETIMEDOUT: c_int = 110;
        const CLOCK_MONOTONIC: c_int = 1;
        #[cfg(target_arch = "x86_64")]
        const SYS_GETPID: c_long = 39;
        #[cfg(target_arch = "aarch64")]
        const SYS_GETPID: c_long = 172;
        // glibc's static initializers of a mutex, a read-write lock and a
        // condition variable are all zeros; 64 bytes hold each.
        let mut m = [0u64; 8];
        let mut rw = [0u64; 8];
        let mut c = [0u64; 8];
        let (m, rw, c) = (
            m.as_mut_ptr() as *mut c_void,
            rw.as_mut_ptr() as *mut c_void,
            c.as_mut_ptr() as *mut c_void,
        );
        let past = crate::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        let past = &past as *const crate::Timespec as *const c_void;
        // SAFETY: valid, initialized locks, used by this thread only.
        unsafe {
            assert_eq!(pthread_mutex_lock(m), 0);
            assert_eq!(pthread_mutex_trylock(m), EBUSY);
            // A deadline long past: the wait ends at once, the mutex held
            // again.
            assert_eq!(pthread_cond_timedwait(c, m, past), ETIMEDOUT);
            assert_eq!(
                pthread_cond_clockwait(c, m, CLOCK_MONOTONIC, past),
                ETIMEDOUT
            );
            assert_eq!(pthread_mutex_trylock(m), EBUSY);
            assert_eq!(pthread_mutex_unlock(m), 0);
            assert_eq!(pthread_mutex_trylock(m), 0);
            assert_eq!(pthread_mutex_unlock(m), 0);
            // Two readers at once; a writer alone.
            assert_eq!(pthread_rwlock_rdlock(rw), 0);
            assert_eq!(pthread_rwlock_rdlock(rw), 0);
            assert_eq!(pthread_rwlock_trywrlock(rw), EBUSY);
            assert_eq!(pthread_rwlock_unlock(rw), 0);
            assert_eq!(pthread_rwlock_unlock(rw), 0);
            assert_eq!(pthread_rwlock_wrlock(rw), 0);
            assert_eq!(pthread_rwlock_trywrlock(rw), EBUSY);
            assert_eq!(pthread_rwlock_unlock(rw), 0);
            assert_eq!(syscall(SYS_GETPID, 0, 0, 0, 0, 0, 0), getpid() as c_long);
            // All seven arguments reach the kernel: a futex wake of no
            // waiter (FUTEX_WAKE_BITSET_PRIVATE reads the seventh, the
            // bitset, and refuses 0 with EINVAL).
            let word = 0u32;
            let addr = &word as *const u32 as c_long;
            assert_eq!(syscall(SYS_FUTEX, addr, 0x8a, 1, 0, 0, 1), 0);
            assert_eq!(syscall(SYS_FUTEX, addr, 0x8a, 1, 0, 0, 0), -1);
        }
    }

    #[test]
    fn the_futex_operations_that_sleep() {
        // FUTEX_WAIT_PRIVATE, and a condition variable's
        // FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME.
        assert!(futex_sleeps(0x80) && futex_sleeps(0x189));
        // FUTEX_WAKE_PRIVATE, FUTEX_REQUEUE.
        assert!(!futex_sleeps(0x81) && !futex_sleeps(3));
    }

    #[test]
    fn a_call_site_is_named_by_the_function_that_holds_it() {
        extern "C" {
            fn getpid() -> c_int;
        }
        // An address inside libc's getpid (exported as `getpid` and
        // `__getpid`).
        let at = getpid as *const () as usize + 1;
        let name = function_at(at).expect("libc's getpid is exported");
        assert!(name.ends_with("getpid"), "{name}");
        assert!(named("pthread_cond_wait", at).starts_with("pthread_cond_wait "));
        assert!(named("pthread_cond_wait", at).ends_with("getpid"));
        assert_eq!(named("futex_wait", 0), "futex_wait");
        assert_eq!(function_at(0), None);
    }
}
