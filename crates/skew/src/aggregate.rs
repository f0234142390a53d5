//! Per-group sums, counts, minima and maxima; mergeable, so that each
//! worker thread keeps its own and they are added up at the end.

use rustc_hash::FxHashMap;

/// The statistics of one group. A group with no calls (a pre-created
/// histogram bucket, a non-call line under `--name=:all`) has `calls == 0`
/// and prints blank cells.
#[derive(Debug, Clone, Copy)]
pub struct Agg {
    /// Exact sum in microseconds while every value was a whole number of
    /// microseconds (the default `$af`); it avoids float drift on billions
    /// of calls.
    pub sum_us: i64,
    /// Sum of values that were not whole microseconds (`--select`).
    pub sum_other: f64,
    pub calls: u64,
    pub min: f64,
    pub max: f64,
    /// (file index, byte offset) of the group's first record, for
    /// `--sort=no`.
    pub first: (u32, u64),
}

impl Agg {
    fn empty(first: (u32, u64)) -> Agg {
        Agg {
            sum_us: 0,
            sum_other: 0.0,
            calls: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            first,
        }
    }

    pub fn sum(&self) -> f64 {
        self.sum_us as f64 * 1e-6 + self.sum_other
    }

    #[inline]
    fn add(&mut self, value: f64, us: Option<i64>) {
        match us {
            Some(us) => self.sum_us += us,
            None => self.sum_other += value,
        }
        self.calls += 1;
        if value < self.min {
            self.min = value;
        }
        if value > self.max {
            self.max = value;
        }
    }

    pub fn merge(&mut self, o: &Agg) {
        self.sum_us += o.sum_us;
        self.sum_other += o.sum_other;
        self.calls += o.calls;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.first = self.first.min(o.first);
    }
}

/// Groups keyed by their label.
#[derive(Debug, Default)]
pub struct Groups {
    pub map: FxHashMap<Box<str>, Agg>,
}

impl Groups {
    /// Adds a value to a group; `us` is the value in whole microseconds when
    /// it is one (exact summing), `None` otherwise.
    #[inline]
    pub fn add(&mut self, group: &str, value: f64, us: Option<i64>, at: (u32, u64)) {
        match self.map.get_mut(group) {
            Some(a) => a.add(value, us),
            None => {
                let mut a = Agg::empty(at);
                a.add(value, us);
                self.map.insert(group.into(), a);
            }
        }
    }

    /// Makes a group exist without a call in it.
    pub fn touch(&mut self, group: &str, at: (u32, u64)) {
        if !self.map.contains_key(group) {
            self.map.insert(group.into(), Agg::empty(at));
        }
    }

    pub fn merge(&mut self, other: Groups) {
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
        a.add("EXEC", 0.000030, Some(30), (0, 5));
        a.add("EXEC", 0.000010, Some(10), (0, 9));
        a.touch("bucket", (0, 0));
        let mut b = Groups::default();
        b.add("EXEC", 0.5, None, (1, 1));
        a.merge(b);
        let e = a.map["EXEC"];
        assert_eq!(e.calls, 3);
        assert!((e.sum() - 0.50004).abs() < 1e-12);
        assert_eq!((e.min, e.max), (0.000010, 0.5));
        assert_eq!(e.first, (0, 5));
        assert_eq!(a.map["bucket"].calls, 0);
    }
}
