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
//! - Perl's running double sum ([`SeqSum`]), exact while the group's calls
//!   came through one piece, or while each later piece had at most
//!   [`LOG`] of them (their values are kept and replayed onto the earlier
//!   pieces' sum). Pieces are merged in read order for that.
//!
//! Where a figure is at or next to a tie and the running sum is not known
//! exactly, the report names the group, and the files are read again
//! keeping every value of those groups (see [`Groups::resolving`]).
//! Values that are not whole microseconds (`--select`) are summed in
//! 128-bit fixed point, independent of the order.

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
        }
    }

    /// A sum known only as a total (prof's profile, built from integers):
    /// the one double Perl would hold for it.
    fn known(sum: f64, n: u64) -> SeqSum {
        SeqSum {
            sum,
            n,
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
        self.n as usize <= LOG || self.keep_all
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
}

impl Default for Groups {
    fn default() -> Groups {
        Groups {
            map: IndexMap::default(),
            by_addr: FxHashMap::default(),
            last: None,
            total: SeqSum::new(false),
            resolve: None,
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
            ..Groups::default()
        }
    }

    /// Empty groups gathered the same way as these.
    pub fn fresh(&self) -> Groups {
        match &self.resolve {
            Some(r) => Groups::resolving(r.clone()),
            None => Groups::default(),
        }
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
        if us.is_some() {
            self.total.add(value);
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
        if us.is_some() {
            self.total.add(value);
        }
        if let Some((k, a)) = self.last.and_then(|i| self.map.get_index_mut(i)) {
            if **k == *group {
                a.add(value, us);
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
        if let Some((_, a)) = self.map.get_index_mut(i) {
            a.add(value, us);
        }
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
    pub fn merge(&mut self, other: Groups) {
        // Merged groups come from other readers: their labels' addresses
        // mean nothing here.
        self.by_addr.clear();
        self.last = None;
        self.total.merge(&other.total);
        for (k, v) in other.map {
            match self.map.get_mut(&k) {
                Some(a) => a.merge(&v),
                None => {
                    self.map.insert(k, v);
                }
            }
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
}
