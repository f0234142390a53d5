//! Duration histograms: the built-in p10, disk and ssd bucket sets of
//! mrskew's rc files, without their Perl `--init`.

use crate::number::{fixed, Num};

/// Half-open ranges `[edge[i-1], edge[i])` of seconds, the first from 0 and
/// the last open-ended, each with its label.
#[derive(Debug, Clone)]
pub struct Buckets {
    edges: Vec<f64>,
    labels: Vec<String>,
}

impl Buckets {
    /// `p10`, `disk`, `ssd`, or a comma-separated list of increasing edges
    /// in seconds.
    pub fn parse(spec: &str) -> Result<Buckets, String> {
        let edges: Vec<f64> = match spec.trim() {
            // Literals, not computed powers, so that comparisons match
            // p10.rc's `$af < 1e-6 ? … : $af < 1e-5 ? …` chain exactly.
            "p10" => vec![1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3],
            "disk" => vec![0.005, 0.010, 0.015, 0.020, 0.025, 0.050, 0.100, 1.000],
            "ssd" => vec![
                0.000015, 0.000025, 0.000050, 0.000100, 0.000500, 0.001, 0.010,
            ],
            list => {
                let mut v = Vec::new();
                for part in list.split(',') {
                    let x: f64 = part.trim().parse().map_err(|_| {
                        format!("--buckets={spec}: expected p10, disk, ssd or increasing numbers of seconds separated by commas, found '{part}'")
                    })?;
                    if v.last().is_some_and(|&l| x <= l) || !x.is_finite() || x < 0.0 {
                        return Err(format!(
                            "--buckets={spec}: edges must be finite, non-negative and increasing"
                        ));
                    }
                    v.push(x);
                }
                v
            }
        };
        let mut labels = Vec::with_capacity(edges.len() + 1);
        let mut lo = 0.0;
        for (i, &hi) in edges.iter().enumerate() {
            labels.push(label(i + 1, &fmt(lo), &fmt(hi)));
            lo = hi;
        }
        labels.push(label(edges.len() + 1, &fmt(lo), "+∞"));
        Ok(Buckets { edges, labels })
    }

    /// The label of the bucket `secs` falls in.
    #[inline]
    pub fn label_of(&self, secs: f64) -> &str {
        &self.labels[self.index_of(secs)]
    }

    /// The index (0-based, into [`Buckets::labels`]) of the bucket `secs`
    /// falls in: for counting histograms without a label per value.
    #[inline]
    pub fn index_of(&self, secs: f64) -> usize {
        self.edges
            .iter()
            .position(|&e| secs < e)
            .unwrap_or(self.edges.len())
    }

    pub fn labels(&self) -> &[String] {
        &self.labels
    }
}

/// An edge as mrskew's sprintf prints it (the double, correctly rounded).
fn fmt(x: f64) -> String {
    fixed(Num::Float(x), 6, true)
}

/// p10.rc's label shape: `" 1.     0.000000     0.000001"`.
fn label(n: usize, lo: &str, hi: &str) -> String {
    format!("{n:>2}. {lo:>12} {hi:>12}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p10_labels_match_mrskew() {
        let b = Buckets::parse("p10").unwrap();
        assert_eq!(b.labels()[0], " 1.     0.000000     0.000001");
        assert_eq!(b.labels()[9], "10.   100.000000 1,000.000000");
        assert_eq!(b.labels()[10], "11. 1,000.000000           +∞");
        // 100 µs × 1e-6 is just below 1e-4, so it lands in the
        // 0.000010–0.000100 bucket, as in mrskew.
        assert_eq!(b.label_of(100.0 * 1e-6), b.labels()[2].as_str());
        assert_eq!(b.label_of(0.0), b.labels()[0].as_str());
        assert_eq!(b.label_of(5000.0), b.labels()[10].as_str());
    }

    #[test]
    fn custom_edges_and_errors() {
        let b = Buckets::parse("0.001, 0.01").unwrap();
        assert_eq!(b.labels().len(), 3);
        // Labels are printed as sprintf prints the double: 5e-7 is a
        // little below a half of the last digit.
        // perl -e 'printf "%.6f\n", 0.0000005'  prints 0.000000
        let b = Buckets::parse("0.0000005,2.5").unwrap();
        assert_eq!(b.labels()[0], " 1.     0.000000     0.000000");
        assert_eq!(b.labels()[2], " 3.     2.500000           +∞");
        assert!(Buckets::parse("0.01,0.001").is_err());
        assert!(Buckets::parse("fast").is_err());
    }
}
