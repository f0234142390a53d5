//! Per-group sums, counts, minima and maxima; mergeable, so that each
//! worker thread keeps its own and they are added up at the end.
//!
//! mrskew is Perl: it adds each call's value, a double, to its group's
//! double sum in the order the calls are read, and prints what that sum
//! rounds to. Reading a file in pieces on several cores (`--jobs`) must
//! not change a digit, so each group keeps two sums:
//!
//! - the exact one: whole microseconds summed as 128-bit integers (no
//!   wraparound, however large the values); it decides every printed
//!   figure that is not at or next to a rounding tie (see
//!   [`crate::report`]);
//! - Perl's running double sum ([`SeqSum`]). The piece read first begins
//!   the sums; every later piece logs each whole-microsecond value with its
//!   group, 8 bytes a call ([`Anchor::Logged`]), and merging in read order
//!   replays the log onto the sums read before it, so the sums come out as
//!   one reader in read order leaves them, at one double addition a call.
//!   The logs of one reading share a budget ([`LOG_BUDGET`] entries); past
//!   it a piece keeps only its sum and its first [`LOG`] values per group.
//!
//! Where a figure is at or next to a tie and the running sum is not known
//! exactly (a log given up), the report names the group, and the files are
//! read again keeping every value of those groups (see
//! [`Groups::resolving`]).
//! Values that are not whole microseconds (`--select`) are summed in
//! 128-bit fixed point, independent of the order.

use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use indexmap::IndexMap;
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::number::Num;

/// 2^64: the fixed-point scale of non-integer sums (a resolution of
/// 5.4e-20, a range of ±9.2e18).
const FIXED_ONE: f64 = 18_446_744_073_709_551_616.0;

/// Values a piece keeps of each group, so that a later piece's few calls
/// can continue an earlier piece's running sum exactly. Eight covers the
/// groups of a handful of calls, where ties are most frequent (a mean of
/// two values is a tie one time in two); a bigger group that is at a tie
/// and spans pieces is resolved by reading again.
pub const LOG: usize = 8;

/// Log entries all the pieces of one reading may hold at once: 16 Mi
/// entries, 128 MiB, the calls of about 1.5 GB of trace. Past it, a
/// figure at a rounding tie costs a second read instead of memory.
pub const LOG_BUDGET: usize = 1 << 24;

/// Entries a log takes from the budget at a time (one atomic operation per
/// 64 Ki calls).
const LOG_GRANT: usize = 1 << 16;

/// A log entry holds the group's index in its top 24 bits and the value
/// in whole microseconds in the low 40 (12.7 days).
const LOG_US_BITS: u32 = 40;

/// The log budget of one reading, shared by its pieces.
#[derive(Debug)]
pub struct LogBudget(AtomicUsize);

impl LogBudget {
    pub fn new(entries: usize) -> Arc<LogBudget> {
        Arc::new(LogBudget(AtomicUsize::new(entries)))
    }

    /// Takes up to `n` entries; how many it got.
    fn take(&self, n: usize) -> usize {
        let mut got = 0;
        let _ = self
            .0
            .fetch_update(AtomicOrdering::Relaxed, AtomicOrdering::Relaxed, |left| {
                got = left.min(n);
                Some(left - got)
            });
        got
    }
}

/// Where a [`Groups`]' running sums stand in the read order of the whole
/// input.
#[derive(Debug, Clone)]
pub enum Anchor {
    /// They began with the input's first value (or nothing was read
    /// before them): they are Perl's sums.
    Start,
    /// They began at zero after values read elsewhere: every
    /// whole-microsecond value is logged (group index, µs), to be replayed
    /// onto the sums read before these.
    Logged(Vec<u64>),
    /// They began after values read elsewhere and no log is kept (over the
    /// budget, a value the log cannot hold, or a second read, whose
    /// groups keep their values themselves): merged as sums.
    Unlogged,
}

/// Perl's running double sum of a run of values, in read order.
#[derive(Debug, Clone)]
pub struct SeqSum {
    /// The sum, as Perl's `+=` leaves it.
    pub sum: f64,
    /// Whether `sum` is exactly the running sum of every value in read
    /// order (false once two pieces of more than [`LOG`] values each were
    /// joined).
    pub exact: bool,
    pub n: u64,
    head: [f64; LOG],
    /// Values past [`LOG`], kept only when `keep_all`.
    rest: Vec<f64>,
    keep_all: bool,
    /// Whether `head` holds the values (false for a sum known only as a
    /// total, whose values were never seen).
    replayable: bool,
}

impl SeqSum {
    fn new(keep_all: bool) -> SeqSum {
        SeqSum {
            sum: 0.0,
            exact: true,
            n: 0,
            head: [0.0; LOG],
            rest: Vec::new(),
            keep_all,
            replayable: true,
        }
    }

    /// A sum known only as a total (prof's profile, built from integers):
    /// the one double Perl would hold for it.
    fn known(sum: f64, n: u64) -> SeqSum {
        SeqSum {
            sum,
            n,
            replayable: false,
            ..SeqSum::new(false)
        }
    }

    #[inline(always)]
    pub fn add(&mut self, v: f64) {
        self.sum += v;
        match self.head.get_mut(self.n as usize) {
            Some(h) => *h = v,
            None if self.keep_all => self.rest.push(v),
            None => {}
        }
        self.n += 1;
    }

    /// Whether every value is kept.
    fn complete(&self) -> bool {
        self.replayable && (self.n as usize <= LOG || self.keep_all)
    }

    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.head[..(self.n as usize).min(LOG)]
            .iter()
            .chain(self.rest.iter())
            .copied()
    }

    /// Appends `later`, the values read after these: replays them onto
    /// this sum when they are all kept.
    pub fn merge(&mut self, later: &SeqSum) {
        if later.n == 0 {
            return;
        }
        if self.n == 0 {
            let keep_all = self.keep_all || later.keep_all;
            *self = later.clone();
            self.keep_all = keep_all;
            return;
        }
        if later.complete() && self.exact {
            for v in later.values() {
                self.add(v);
            }
            return;
        }
        self.sum += later.sum;
        self.exact = false;
        if self.keep_all && later.complete() {
            for v in later.values() {
                self.rest.push(v);
            }
        }
        self.n += later.n;
    }
}

/// Labels whose every value is kept on a second read (see
/// [`Groups::resolving`]), and whether the whole profile's are.
#[derive(Debug, Clone, Default)]
pub struct Resolve {
    pub labels: FxHashSet<Box<str>>,
    pub total: bool,
}

/// Where a group first appeared: pre-created groups first (tier 0, in
/// their order), then (file index, byte offset) of the group's first
/// call. Ties in the sort column keep this order, as mrskew's stable sort
/// does.
pub type First = (u8, u32, u64);

/// The first-appearance key of a call at `offset` in input file `file`.
pub fn at(file: u32, offset: u64) -> First {
    (1, file, offset)
}

/// The statistics of one group. A group with no calls (a pre-created
/// histogram bucket, a non-call line under `--name=:all`) has `calls == 0`
/// and prints blank cells.
#[derive(Debug, Clone)]
pub struct Agg {
    /// Values that were whole microseconds (the default `$af`).
    pub sum_us: i128,
    pub min_us: i64,
    pub max_us: i64,
    /// Values that were not (a `--select` expression): their count, a
    /// fixed-point sum (valid while `fixed_ok`), a plain sum for when it
    /// is not, and their extremes.
    pub floats: u64,
    pub fixed: i128,
    pub fixed_ok: bool,
    pub sum_f: f64,
    pub min: f64,
    pub max: f64,
    pub calls: u64,
    pub first: First,
    /// Perl's running sum of the values.
    pub seq: SeqSum,
}

impl Agg {
    fn empty(first: First) -> Agg {
        Agg::new(first, false)
    }

    fn new(first: First, keep_all: bool) -> Agg {
        Agg {
            sum_us: 0,
            min_us: i64::MAX,
            max_us: i64::MIN,
            floats: 0,
            fixed: 0,
            fixed_ok: true,
            sum_f: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            calls: 0,
            first,
            seq: SeqSum::new(keep_all),
        }
    }

    /// A group built elsewhere from whole microseconds (prof's resource
    /// profile), printed by skew's renderer.
    pub fn micros(sum_us: i128, calls: u64, min_us: i64, max_us: i64, first: First) -> Agg {
        Agg {
            sum_us,
            min_us,
            max_us,
            calls,
            seq: SeqSum::known(sum_us as f64 * 1e-6, calls),
            ..Agg::empty(first)
        }
    }

    /// Whether every value was a whole number of microseconds.
    pub fn exact(&self) -> bool {
        self.floats == 0
    }

    /// The sum of the non-integer values, in their own units.
    fn float_sum(&self) -> f64 {
        if self.fixed_ok {
            self.fixed as f64 / FIXED_ONE
        } else {
            self.sum_f
        }
    }

    /// The sum, in seconds (or the `--select` expression's units).
    pub fn sum(&self) -> Num {
        if self.exact() {
            Num::micros(self.sum_us)
        } else {
            Num::Float(self.float_sum() + self.sum_us as f64 * 1e-6)
        }
    }

    pub fn mean(&self) -> Num {
        if self.exact() {
            Num::micros_over(self.sum_us, self.calls)
        } else {
            Num::Float(self.sum().to_f64() / self.calls as f64)
        }
    }

    pub fn min(&self) -> Num {
        if self.exact() {
            Num::micros(i128::from(self.min_us))
        } else {
            Num::Float(self.min.min(self.min_us as f64 * 1e-6))
        }
    }

    pub fn max(&self) -> Num {
        if self.exact() {
            Num::micros(i128::from(self.max_us))
        } else {
            Num::Float(self.max.max(self.max_us as f64 * 1e-6))
        }
    }

    #[inline]
    fn add(&mut self, value: f64, us: Option<i64>) {
        self.calls += 1;
        match us {
            Some(us) => {
                self.seq.add(value);
                // 2^64 values of 2^63 µs at most: no overflow.
                self.sum_us += i128::from(us);
                self.min_us = self.min_us.min(us);
                self.max_us = self.max_us.max(us);
            }
            None => self.add_float(value),
        }
    }

    #[cold]
    fn add_float(&mut self, value: f64) {
        self.floats += 1;
        self.sum_f += value;
        if value.abs() < FIXED_ONE / 2.0 {
            // Exact: scaling by a power of two, then truncation.
            let v = (value * FIXED_ONE) as i128;
            match self.fixed.checked_add(v) {
                Some(s) => self.fixed = s,
                None => self.fixed_ok = false,
            }
        } else {
            self.fixed_ok = false;
        }
        if value < self.min {
            self.min = value;
        }
        if value > self.max {
            self.max = value;
        }
    }

    /// Adds `o`, whose calls were read after this group's.
    pub fn merge(&mut self, o: &Agg) {
        self.seq.merge(&o.seq);
        self.merge_but_seq(o);
    }

    /// As [`Self::merge`], but the running sum, which the caller replays.
    fn merge_but_seq(&mut self, o: &Agg) {
        self.sum_us += o.sum_us;
        self.min_us = self.min_us.min(o.min_us);
        self.max_us = self.max_us.max(o.max_us);
        self.floats += o.floats;
        match self.fixed.checked_add(o.fixed) {
            Some(s) if o.fixed_ok => self.fixed = s,
            _ => self.fixed_ok = false,
        }
        self.sum_f += o.sum_f;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.calls += o.calls;
        self.first = self.first.min(o.first);
    }
}

/// Groups keyed by their label.
#[derive(Debug)]
pub struct Groups {
    pub map: IndexMap<Box<str>, Agg, FxBuildHasher>,
    /// Groups by the address and length of a label that stays put (see
    /// [`Self::add_stable`]): indices into `map`.
    by_addr: FxHashMap<(usize, usize), usize>,
    /// The group [`Self::add`] added to last: consecutive calls mostly
    /// share a group (a statement's EXEC, FETCHes and waits under
    /// `--group='$sqlid'`), and comparing the label with the last one's
    /// is cheaper than hashing it and looking it up (3 % of that profile's
    /// instructions saved). Groups are never removed, so an index stays
    /// valid.
    last: Option<usize>,
    /// Perl's running sum of every value, for the TOTAL row.
    pub total: SeqSum,
    /// On a second read: the groups whose every value is kept.
    resolve: Option<Arc<Resolve>>,
    /// Whether the running sums began the input, or what replays them.
    anchor: Anchor,
    /// The budget a log grows from, and the entries it was granted.
    budget: Option<Arc<LogBudget>>,
    granted: usize,
}

impl Default for Groups {
    fn default() -> Groups {
        Groups {
            map: IndexMap::default(),
            by_addr: FxHashMap::default(),
            last: None,
            total: SeqSum::new(false),
            resolve: None,
            anchor: Anchor::Start,
            budget: None,
            granted: 0,
        }
    }
}

impl Groups {
    /// Groups that keep every value of the groups `r` names (and of the
    /// whole profile, if it says so), so that their running sums come out
    /// exact however the files were cut: for a second read, when a figure
    /// at a rounding tie needs Perl's exact double.
    pub fn resolving(r: Arc<Resolve>) -> Groups {
        Groups {
            total: SeqSum::new(r.total),
            resolve: Some(r),
            anchor: Anchor::Unlogged,
            ..Groups::default()
        }
    }

    /// Empty groups of a first reading whose later pieces log their
    /// values, from `budget`.
    pub fn logging(budget: Arc<LogBudget>) -> Groups {
        Groups {
            budget: Some(budget),
            ..Groups::default()
        }
    }

    /// Empty groups gathered the same way as these, for what is read
    /// after them (another piece of the file, another file) unless these
    /// are empty and began the input.
    pub fn fresh(&self) -> Groups {
        let begins = matches!(self.anchor, Anchor::Start) && self.total.n == 0;
        self.fresh_at(begins)
    }

    /// As [`Self::fresh`], for a piece that begins the input when `first`
    /// and these begin it (the first piece of the first file).
    pub fn fresh_at(&self, first: bool) -> Groups {
        let anchor = match (&self.anchor, &self.budget) {
            (Anchor::Start, _) if first => Anchor::Start,
            (Anchor::Unlogged, _) | (_, None) => Anchor::Unlogged,
            _ => Anchor::Logged(Vec::new()),
        };
        match &self.resolve {
            Some(r) => Groups::resolving(r.clone()),
            None => Groups {
                anchor,
                budget: self.budget.clone(),
                ..Groups::default()
            },
        }
    }

    /// Logs a whole-microsecond value of group `i`, or gives the log up.
    #[inline(always)]
    fn log(&mut self, i: usize, value: f64, us: i64) {
        if let Anchor::Logged(log) = &mut self.anchor {
            let fits = (0..1 << LOG_US_BITS).contains(&us)
                && i < 1 << (64 - LOG_US_BITS)
                && (us as f64 * 1e-6).to_bits() == value.to_bits();
            if fits && log.len() < self.granted {
                log.push((i as u64) << LOG_US_BITS | us as u64);
            } else {
                self.log_slow(i, value, us, fits);
            }
        }
    }

    /// A log at its grant asks the budget for more; a value the log cannot
    /// hold (not µs / 1e6, out of range), or an empty budget, ends it.
    #[cold]
    fn log_slow(&mut self, i: usize, value: f64, us: i64, fits: bool) {
        let more = match (&self.budget, fits) {
            (Some(b), true) => b.take(LOG_GRANT),
            _ => 0,
        };
        if more == 0 {
            self.anchor = Anchor::Unlogged;
            return;
        }
        self.granted += more;
        self.log(i, value, us);
    }

    /// A new group's statistics.
    fn new_agg(&self, group: &str, first: First) -> Agg {
        let keep_all = self
            .resolve
            .as_ref()
            .is_some_and(|r| r.labels.contains(group));
        Agg::new(first, keep_all)
    }

    /// As [`Self::add`], for a label whose address stays put for as long
    /// as this `Groups` gathers: a name the trace reader interned or a
    /// constant (`Query::hit` says which). The group is found by the
    /// label's address, two words hashed, not by hashing and comparing
    /// its text: in the default profile, a tenth of skew's time went to
    /// that.
    #[inline(always)]
    pub fn add_stable(&mut self, group: &str, value: f64, us: Option<i64>, first: First) {
        let key = (group.as_ptr() as usize, group.len());
        let i = match self.by_addr.get(&key) {
            Some(&i) => i,
            None => {
                let i = match self.map.get_index_of(group) {
                    Some(i) => i,
                    None => {
                        let a = self.new_agg(group, first);
                        self.map.insert_full(group.into(), a).0
                    }
                };
                self.by_addr.insert(key, i);
                i
            }
        };
        self.add_at(i, value, us);
    }

    /// Adds a value to the group at index `i`, to TOTAL's running sum and
    /// to the log.
    #[inline(always)]
    fn add_at(&mut self, i: usize, value: f64, us: Option<i64>) {
        if let Some(us) = us {
            self.total.add(value);
            self.log(i, value, us);
        }
        if let Some((_, a)) = self.map.get_index_mut(i) {
            a.add(value, us);
        }
    }

    /// Adds a value to a group; `us` is the value in whole microseconds when
    /// it is one (exact summing), `None` otherwise. Once per call: inlined
    /// with the map's look-up.
    #[inline(always)]
    pub fn add(&mut self, group: &str, value: f64, us: Option<i64>, first: First) {
        if let Some(i) = self.last {
            if self.map.get_index(i).is_some_and(|(k, _)| **k == *group) {
                self.add_at(i, value, us);
                return;
            }
        }
        let i = match self.map.get_index_of(group) {
            Some(i) => i,
            None => {
                let a = self.new_agg(group, first);
                self.map.insert_full(group.into(), a).0
            }
        };
        self.last = Some(i);
        self.add_at(i, value, us);
    }

    /// Makes a group exist without a call in it.
    pub fn touch(&mut self, group: &str, first: First) {
        match self.map.get_mut(group) {
            Some(a) => a.first = a.first.min(first),
            None => {
                let a = self.new_agg(group, first);
                self.map.insert(group.into(), a);
            }
        }
    }

    /// Adds `other`, whose calls were read after these (running sums
    /// depend on the order).
    ///
    /// Sums that began the input take a later log by replaying it, value
    /// by value, as Perl's loop would have added them; a log is carried
    /// on, after this one's, by groups that did not begin the input.
    pub fn merge(&mut self, other: Groups) {
        // Merged groups come from other readers: their labels' addresses
        // mean nothing here.
        self.by_addr.clear();
        self.last = None;
        let Groups {
            map, total, anchor, ..
        } = other;
        let later_log = match anchor {
            Anchor::Logged(log) => Some(log),
            Anchor::Start | Anchor::Unlogged => None,
        };
        let replay = later_log.is_some() && matches!(self.anchor, Anchor::Start);
        if !replay {
            self.total.merge(&total);
        }
        // Each of the later groups' index here.
        let mut at = Vec::with_capacity(map.len());
        for (k, mut v) in map {
            if replay {
                v.seq = SeqSum::new(false);
            }
            let i = match self.map.get_full_mut(&k) {
                Some((i, _, a)) => {
                    if replay {
                        a.merge_but_seq(&v);
                    } else {
                        a.merge(&v);
                    }
                    i
                }
                None => self.map.insert_full(k, v).0,
            };
            at.push(i);
        }
        match (&mut self.anchor, later_log) {
            (Anchor::Start, Some(log)) => {
                let mask = (1u64 << LOG_US_BITS) - 1;
                for e in log {
                    let v = (e & mask) as f64 * 1e-6;
                    self.total.add(v);
                    if let Some((_, a)) = self.map.get_index_mut(at[(e >> LOG_US_BITS) as usize]) {
                        a.seq.add(v);
                    }
                }
            }
            (Anchor::Logged(mine), Some(log)) => {
                let mask = (1u64 << LOG_US_BITS) - 1;
                mine.extend(
                    log.into_iter().map(|e| {
                        (at[(e >> LOG_US_BITS) as usize] as u64) << LOG_US_BITS | (e & mask)
                    }),
                );
            }
            (Anchor::Logged(_), None) => self.anchor = Anchor::Unlogged,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_merge_and_empty_groups() {
        let mut a = Groups::default();
        a.add("EXEC", 0.000030, Some(30), at(0, 5));
        a.add("EXEC", 0.000010, Some(10), at(0, 9));
        a.touch("bucket", (0, 0, 0));
        let mut b = Groups::default();
        b.add("EXEC", 0.000005, Some(5), at(1, 1));
        a.merge(b);
        let e = &a.map["EXEC"];
        assert_eq!(e.calls, 3);
        assert_eq!(e.sum(), Num::micros(45));
        assert_eq!((e.min(), e.max()), (Num::micros(5), Num::micros(30)));
        assert_eq!(e.first, at(0, 5));
        assert_eq!(a.map["bucket"].calls, 0);
    }

    #[test]
    fn stable_labels_are_found_by_address_and_by_text() {
        let mut g = Groups::default();
        // The same text at two addresses (a constant and a copy), and a
        // group made by text before it is seen by address.
        g.add("FETCH", 0.000002, Some(2), at(0, 1));
        let copy = String::from("FETCH");
        let other = String::from("EXEC");
        g.add_stable("FETCH", 0.000003, Some(3), at(0, 2));
        g.add_stable(&copy, 0.000005, Some(5), at(0, 3));
        g.add_stable("FETCH", 0.000007, Some(7), at(0, 4));
        g.add_stable(&other, 0.000011, Some(11), at(0, 5));
        g.add_stable(&other, 0.000013, Some(13), at(0, 6));
        assert_eq!(g.map.len(), 2);
        let f = &g.map["FETCH"];
        assert_eq!((f.calls, f.sum()), (4, Num::micros(17)));
        assert_eq!(f.first, at(0, 1));
        let e = &g.map["EXEC"];
        assert_eq!((e.calls, e.sum(), e.first), (2, Num::micros(24), at(0, 5)));
        // After a merge an address may name another label: looked up by
        // text again.
        let mut h = Groups::default();
        h.add("WAIT", 0.000001, Some(1), at(1, 0));
        g.merge(h);
        drop(other);
        let reused = String::from("WAIT");
        g.add_stable(&reused, 0.000001, Some(1), at(1, 1));
        assert_eq!(g.map["WAIT"].calls, 2);
        assert_eq!(g.map["EXEC"].calls, 2);
    }

    #[test]
    fn runs_of_one_label_and_labels_that_alternate() {
        let mut g = Groups::default();
        let labels = ["a", "a", "b", "a", "b", "b", "ab", "a"];
        for (i, l) in labels.iter().enumerate() {
            g.add(l, 0.0, Some(i as i64 + 1), at(0, i as u64));
        }
        let got: Vec<(&str, u64, Num, First)> = g
            .map
            .iter()
            .map(|(k, a)| (k.as_ref(), a.calls, a.sum(), a.first))
            .collect();
        assert_eq!(
            got,
            [
                ("a", 4, Num::micros(1 + 2 + 4 + 8), at(0, 0)),
                ("b", 3, Num::micros(3 + 5 + 6), at(0, 2)),
                ("ab", 1, Num::micros(7), at(0, 6)),
            ]
        );
    }

    #[test]
    fn sums_do_not_wrap_and_do_not_depend_on_order() {
        let mut g = Groups::default();
        for _ in 0..20 {
            g.add("x", 1e12, Some(999_999_999_999_999_999), at(0, 0));
        }
        assert_eq!(g.map["x"].sum().fixed(6), "19999999999999.999980");
        let values = [0.1, 1e-9, 3.3, 7e5, 0.25, 1e-15, 2.0 / 3.0];
        let mut fwd = Groups::default();
        let mut back = Groups::default();
        for (i, v) in values.iter().enumerate() {
            fwd.add("y", *v, None, at(0, i as u64));
        }
        for (i, v) in values.iter().enumerate().rev() {
            back.add("y", *v, None, at(0, i as u64));
        }
        let (f, b) = (&fwd.map["y"], &back.map["y"]);
        assert_eq!(f.sum().to_f64().to_bits(), b.sum().to_f64().to_bits());
    }

    /// Values cut into pieces, each piece's groups made as the reader
    /// makes them, merged in order: the running sums come out bit for bit
    /// as one pass in read order leaves them, while the log's budget
    /// lasts; past it they are marked inexact (a second read settles them).
    #[test]
    fn logged_pieces_replay_to_the_sequential_sums() {
        // Values whose running sum drifts from the exact one.
        let values: Vec<(usize, i64)> = (0..20_000u64)
            .map(|k| {
                (
                    (k * 7 % 5) as usize,
                    ((k * 2_654_435_761) % 1_000_003) as i64,
                )
            })
            .collect();
        let labels = ["a", "bb", "c", "dd", "e"];
        let mut one = Groups::default();
        for (k, &(g, us)) in values.iter().enumerate() {
            one.add(labels[g], us as f64 * 1e-6, Some(us), at(0, k as u64));
        }
        let cut = |budget: usize| -> Groups {
            let template = Groups::logging(LogBudget::new(budget));
            let mut files = Vec::new();
            for (f, file) in values.chunks(7_000).enumerate() {
                let mut acc = template.fresh_at(f == 0);
                for (p, piece) in file.chunks(2_000).enumerate() {
                    let mut g = acc.fresh_at(p == 0);
                    for &(l, us) in piece {
                        g.add_stable(labels[l], us as f64 * 1e-6, Some(us), at(f as u32, 0));
                    }
                    acc.merge(g);
                }
                files.push(acc);
            }
            let mut all = Groups::default();
            for f in files {
                all.merge(f);
            }
            all
        };
        let pieces = cut(LOG_BUDGET);
        assert!(one.total.exact && pieces.total.exact);
        assert_eq!(pieces.total.sum.to_bits(), one.total.sum.to_bits());
        assert_eq!(pieces.total.n, one.total.n);
        let mut drifted = 0;
        for l in labels {
            let (a, b) = (&one.map[l], &pieces.map[l]);
            assert!(b.seq.exact, "{l}");
            assert_eq!(
                (b.seq.sum.to_bits(), b.seq.n),
                (a.seq.sum.to_bits(), a.seq.n),
                "{l}"
            );
            assert_eq!((b.calls, b.sum()), (a.calls, a.sum()), "{l}");
            drifted += usize::from(a.seq.sum != a.sum_us as f64 * 1e-6);
        }
        // The case is one where order matters: summed any other way, the
        // doubles differ.
        assert!(drifted > 0);
        // A budget too small for the logs: the sums are known not exact.
        let short = cut(1_000);
        assert!(!short.total.exact);
        assert_eq!(short.total.n, one.total.n);
        assert_eq!(short.map["a"].sum(), one.map["a"].sum());
    }

    /// Sums known only as totals (a study's profile rows of several runs)
    /// add up: a total of a few calls is not mistaken for its values.
    #[test]
    fn totals_of_few_calls_add_up() {
        let mut a = Agg::micros(194_000, 1, 194_000, 194_000, (0, 0, 0));
        a.merge(&Agg::micros(210_000, 1, 210_000, 210_000, (0, 0, 1)));
        a.merge(&Agg::micros(1_000, 2, 400, 600, (0, 0, 2)));
        assert_eq!((a.calls, a.sum()), (4, Num::micros(405_000)));
        assert!((a.seq.sum - 0.405).abs() < 1e-12, "{}", a.seq.sum);
        assert_eq!(a.min(), Num::micros(400));
    }
}
