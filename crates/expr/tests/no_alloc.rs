//! The numeric and boolean evaluation paths do not allocate: filters run
//! once per trace call, millions of times per second.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;

/// Counts the allocations made by the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(|a| a.get());
    f();
    ALLOCATIONS.with(|a| a.get()) - before
}

#[test]
fn filters_evaluate_without_allocating() {
    let records = [snmfc(), fetch()];
    for src in [
        "$af >= 1 and $dur < 65",
        "$dur < 1",
        "$dep==$depmin",
        "$nam =~ /read/i",
        "((1) and ($dep==$depmin)) and ($nam=~/.+/i)",
        "($name =~ q{message from client} and $af < 1) or ! ( $name =~ q{message from client})",
        "$sqlid !~ /^#/",
        "length($sqlid)==13",
        "$line >= 55660 and $line <= 55660+230",
        "$nam eq 'FETCH' || $nam ne 'EXEC'",
        "$call =~ /EXEC|FETCH/",
        "$line =~ /^58/",
        "$island_id > 0",
        "$af < 1e-6 ? 1 : $af < 1e-5 ? 2 : 3",
        "$e // $ela",
        "not $af xor $dur",
        "1 < $af <= 100",
        "-$af * 1e6 % 7 + abs($dep) - int($line / 3)",
        "defined($e) && $c > 0",
        "$nam lt 'M'",
        "1",
    ] {
        let p = compile(src);
        for rec in &records {
            // Warm up: the regex engine builds its per-thread cache once.
            let _ = p.eval_bool(rec).unwrap();
            let _ = p.eval_num(rec).unwrap();
            let n = allocations_during(|| {
                for _ in 0..100 {
                    std::hint::black_box(p.eval_bool(rec).unwrap());
                    std::hint::black_box(p.eval_num(rec).unwrap());
                }
            });
            assert_eq!(n, 0, "{src} allocated {n} times in 200 evaluations");
        }
    }
}

#[test]
fn plain_variables_and_constants_are_returned_without_copying() {
    let rec = snmfc();
    for src in ["$nam", "$af", "\"FILE:LINE\"", "'x' . 'y'", "$e // $nam"] {
        let p = compile(src);
        let _ = p.eval(&rec).unwrap();
        let n = allocations_during(|| {
            for _ in 0..100 {
                std::hint::black_box(p.eval(&rec).unwrap());
            }
        });
        assert_eq!(n, 0, "{src} allocated {n} times");
    }
}

#[test]
fn the_counter_sees_allocations() {
    // The check above could pass vacuously if counting were broken.
    let p = compile("qq{$basename:$line}");
    let rec = snmfc();
    let n = allocations_during(|| {
        std::hint::black_box(p.eval(&rec).unwrap());
    });
    assert!(n > 0);
}
