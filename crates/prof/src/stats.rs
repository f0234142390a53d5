//! The sums a profile keeps: tkprof's call statistics, wait statistics,
//! duration histograms. All mergeable, so that pieces of a file read on
//! several threads add up to the whole.

use serde::Serialize;
use tracelab_trace::DbFields;

/// tkprof's columns for one kind of call (Parse, Execute, Fetch, ...):
/// count, cpu, elapsed, disk, query, current, rows, in raw units
/// (microseconds, blocks, rows), plus the library-cache misses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallSums {
    pub count: u64,
    pub cpu_us: i64,
    pub elapsed_us: i64,
    /// `p`: physical reads.
    pub disk: i64,
    /// `cr`: consistent-read gets.
    pub query: i64,
    /// `cu`: current-mode gets.
    pub current: i64,
    pub rows: i64,
    /// `mis`: misses in the library cache.
    pub misses: i64,
}

impl CallSums {
    #[inline]
    pub(crate) fn add_call(&mut self, f: &DbFields) {
        self.count += 1;
        self.cpu_us += f.c.unwrap_or(0);
        self.elapsed_us += f.e.unwrap_or(0);
        self.disk += f.p.unwrap_or(0);
        self.query += f.cr.unwrap_or(0);
        self.current += f.cu.unwrap_or(0);
        self.rows += f.r.unwrap_or(0);
        self.misses += f.mis.unwrap_or(0);
    }

    pub(crate) fn add(&mut self, o: &CallSums) {
        self.count += o.count;
        self.cpu_us += o.cpu_us;
        self.elapsed_us += o.elapsed_us;
        self.disk += o.disk;
        self.query += o.query;
        self.current += o.current;
        self.rows += o.rows;
        self.misses += o.misses;
    }

    /// These sums less what recursive calls made inside them (count, rows
    /// and misses are the statement's own and stay).
    pub(crate) fn net_of(&self, children: &ChildSums) -> CallSums {
        CallSums {
            cpu_us: self.cpu_us - children.cpu_us,
            elapsed_us: self.elapsed_us - children.elapsed_us,
            disk: self.disk - children.disk,
            query: self.query - children.query,
            current: self.current - children.current,
            ..*self
        }
    }
}

/// What the recursive calls inside a set of calls added to them: Oracle
/// writes a parent call's c, e, p, cr and cu including its children's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChildSums {
    pub cpu_us: i64,
    pub elapsed_us: i64,
    pub disk: i64,
    pub query: i64,
    pub current: i64,
}

impl ChildSums {
    #[inline]
    pub(crate) fn add_call(&mut self, f: &DbFields) {
        self.cpu_us += f.c.unwrap_or(0);
        self.elapsed_us += f.e.unwrap_or(0);
        self.disk += f.p.unwrap_or(0);
        self.query += f.cr.unwrap_or(0);
        self.current += f.cu.unwrap_or(0);
    }

    pub(crate) fn add(&mut self, o: &ChildSums) {
        self.cpu_us += o.cpu_us;
        self.elapsed_us += o.elapsed_us;
        self.disk += o.disk;
        self.query += o.query;
        self.current += o.current;
    }
}

/// tkprof's three rows and the other database calls of a statement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CallTable {
    pub parse: CallSums,
    /// EXEC, plus UNMAP and SORT UNMAP, which tkprof adds to Execute.
    pub execute: CallSums,
    pub fetch: CallSums,
    /// CLOSE, LOB calls and others, which tkprof does not show.
    pub other: CallSums,
}

impl CallTable {
    pub fn total(&self) -> CallSums {
        let mut t = self.parse;
        t.add(&self.execute);
        t.add(&self.fetch);
        t
    }

    pub(crate) fn add(&mut self, o: &CallTable) {
        self.parse.add(&o.parse);
        self.execute.add(&o.execute);
        self.fetch.add(&o.fetch);
        self.other.add(&o.other);
    }
}

/// What recursive calls added, by the kind of parent call they ran in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChildTable {
    pub parse: ChildSums,
    pub execute: ChildSums,
    pub fetch: ChildSums,
    pub other: ChildSums,
}

impl ChildTable {
    pub(crate) fn add(&mut self, o: &ChildTable) {
        self.parse.add(&o.parse);
        self.execute.add(&o.execute);
        self.fetch.add(&o.fetch);
        self.other.add(&o.other);
    }
}

/// Count, sum, minimum and maximum of durations in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dur {
    pub count: u64,
    pub total_us: i64,
    pub min_us: i64,
    pub max_us: i64,
}

impl Default for Dur {
    fn default() -> Self {
        Dur {
            count: 0,
            total_us: 0,
            min_us: i64::MAX,
            max_us: i64::MIN,
        }
    }
}

impl Dur {
    #[inline]
    pub(crate) fn add(&mut self, us: i64) {
        self.count += 1;
        self.total_us += us;
        self.min_us = self.min_us.min(us);
        self.max_us = self.max_us.max(us);
    }

    pub(crate) fn merge(&mut self, o: &Dur) {
        self.count += o.count;
        self.total_us += o.total_us;
        self.min_us = self.min_us.min(o.min_us);
        self.max_us = self.max_us.max(o.max_us);
    }
}

/// Buckets of the powers-of-ten histogram, mrskew's p10.rc: 0–1 µs,
/// 1–10 µs, ... 100–1000 s, 1000 s and more.
pub const P10_BUCKETS: usize = 11;

/// A p10 histogram of durations: counts and seconds per bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct P10 {
    pub counts: [u64; P10_BUCKETS],
    pub total_us: [i64; P10_BUCKETS],
}

impl P10 {
    /// The bucket of a duration, as mrskew's p10.rc puts it: seconds are
    /// µs × 1e-6 (so 100 µs, 100 × 1e-6 = 9.99...e-5 as a double, falls
    /// in 10–100 µs, as in mrskew's published p10 tables).
    #[inline]
    pub fn bucket(us: i64) -> usize {
        let s = us as f64 * 1e-6;
        const EDGES: [f64; 10] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3];
        EDGES.iter().position(|&e| s < e).unwrap_or(EDGES.len())
    }

    #[inline]
    pub(crate) fn add(&mut self, us: i64) {
        let b = P10::bucket(us);
        self.counts[b] += 1;
        self.total_us[b] += us;
    }

    pub(crate) fn merge(&mut self, o: &P10) {
        for i in 0..P10_BUCKETS {
            self.counts[i] += o.counts[i];
            self.total_us[i] += o.total_us[i];
        }
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p10_agrees_with_skews_buckets() {
        let b = tracelab_query::buckets::Buckets::parse("p10").unwrap();
        for us in [
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            123_456,
            60_002_586,
            5_000_000_000,
        ] {
            assert_eq!(P10::bucket(us), b.index_of(us as f64 * 1e-6), "{us} µs");
        }
    }

    #[test]
    fn net_of_children_keeps_counts_and_rows() {
        let mut s = CallSums::default();
        s.add_call(&DbFields {
            c: Some(100),
            e: Some(300),
            p: Some(5),
            cr: Some(10),
            cu: Some(2),
            r: Some(7),
            mis: Some(1),
            ..DbFields::default()
        });
        let kids = ChildSums {
            cpu_us: 40,
            elapsed_us: 120,
            disk: 5,
            query: 4,
            current: 0,
        };
        let n = s.net_of(&kids);
        assert_eq!(
            (
                n.count,
                n.cpu_us,
                n.elapsed_us,
                n.disk,
                n.query,
                n.rows,
                n.misses
            ),
            (1, 60, 180, 0, 6, 7, 1)
        );
    }
}
