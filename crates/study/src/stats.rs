//! Statistics per cell and between levels.
//!
//! - 95 % confidence interval of a mean: Student's t with n − 1 degrees of
//!   freedom. The quantiles come from `statrs` rather than a table because
//!   Welch's test needs fractional degrees of freedom and a p-value.
//! - Ratio of two means (a level against the baseline): the log-ratio delta
//!   method, ln(ā/b̄) ± t·√(s²ₐ/(nₐā²) + s²_b/(n_b b̄²)), back-transformed;
//!   the interval is then always positive and symmetric on a log scale, as
//!   ratios of times are. Degrees of freedom: Welch–Satterthwaite.
//! - Difference of two means: Welch's t-test (unequal variances), two-sided,
//!   at 5 %. Its verdict is printed in words, with the ratio's interval.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// A cell's description.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub sd: f64,
    /// 95 % interval of the mean; `None` for fewer than 2 values.
    pub ci: Option<(f64, f64)>,
}

fn t975(df: f64) -> Option<f64> {
    StudentsT::new(0.0, 1.0, df)
        .ok()
        .map(|t| t.inverse_cdf(0.975))
}

pub fn describe(xs: &[f64]) -> Option<Describe> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let ci = if n > 1 {
        t975((n - 1) as f64).map(|t| {
            let h = t * sd / (n as f64).sqrt();
            (mean - h, mean + h)
        })
    } else {
        None
    };
    Some(Describe {
        n,
        mean,
        median,
        sd,
        ci,
    })
}

/// A level against the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compare {
    /// mean(a) / mean(base).
    pub ratio: f64,
    pub ratio_ci: Option<(f64, f64)>,
    /// Welch's two-sided p-value; `None` when it cannot be computed (fewer
    /// than two values on a side, or no variance at all).
    pub p: Option<f64>,
}

impl Compare {
    /// "higher by 23% (95% CI 12..35%)", "lower by ...", or "no
    /// detectable difference".
    pub fn verdict(&self) -> String {
        match self.p {
            None => "too few runs to test".into(),
            Some(p) if p >= 0.05 => "no detectable difference".into(),
            Some(_) => {
                let pct = (self.ratio - 1.0) * 100.0;
                let word = if pct >= 0.0 { "higher" } else { "lower" };
                // Small differences keep a decimal: "higher by 0.2%".
                let d = if pct.abs() < 10.0 { 1 } else { 0 };
                match self.ratio_ci {
                    Some((lo, hi)) => {
                        let (a, b) = ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0);
                        let (a, b) = if pct >= 0.0 { (a, b) } else { (-b, -a) };
                        format!("{word} by {:.d$}% (95% CI {a:.d$}..{b:.d$}%)", pct.abs())
                    }
                    None => format!("{word} by {:.d$}%", pct.abs()),
                }
            }
        }
    }
}

fn welch_df(va: f64, na: f64, vb: f64, nb: f64) -> f64 {
    let (a, b) = (va / na, vb / nb);
    (a + b).powi(2) / (a * a / (na - 1.0) + b * b / (nb - 1.0))
}

pub fn compare(a: &[f64], base: &[f64]) -> Option<Compare> {
    let da = describe(a)?;
    let db = describe(base)?;
    if db.mean == 0.0 {
        return None;
    }
    let ratio = da.mean / db.mean;
    let (na, nb) = (da.n as f64, db.n as f64);
    let (va, vb) = (da.sd * da.sd, db.sd * db.sd);
    if da.n < 2 || db.n < 2 {
        return Some(Compare {
            ratio,
            ratio_ci: None,
            p: None,
        });
    }
    let se = (va / na + vb / nb).sqrt();
    if se == 0.0 {
        // Identical values on both sides: equal or different for certain.
        return Some(Compare {
            ratio,
            ratio_ci: Some((ratio, ratio)),
            p: Some(if da.mean == db.mean { 1.0 } else { 0.0 }),
        });
    }
    let df = welch_df(va, na, vb, nb);
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let t = (da.mean - db.mean) / se;
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    let ratio_ci = if da.mean > 0.0 && db.mean > 0.0 {
        let sl = (va / (na * da.mean * da.mean) + vb / (nb * db.mean * db.mean)).sqrt();
        let q = dist.inverse_cdf(0.975);
        Some((ratio * (-q * sl).exp(), ratio * (q * sl).exp()))
    } else {
        None
    };
    Some(Compare {
        ratio,
        ratio_ci,
        p: Some(p),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_a_sample() {
        let d = describe(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(d.n, 4);
        assert_eq!(d.mean, 2.5);
        assert_eq!(d.median, 2.5);
        assert!((d.sd - 1.2909944).abs() < 1e-6);
        // t(0.975, 3) = 3.182446
        let (lo, hi) = d.ci.unwrap();
        assert!(
            (hi - 2.5 - 3.182446 * 1.2909944 / 2.0).abs() < 1e-5,
            "{lo} {hi}"
        );
    }

    #[test]
    fn welch_finds_a_clear_difference_and_not_a_vague_one() {
        let base = [10.0, 10.2, 9.9, 10.1, 9.8];
        let fast = [5.0, 5.1, 4.9, 5.2, 5.0];
        let c = compare(&fast, &base).unwrap();
        assert!(c.p.unwrap() < 0.001);
        assert!((c.ratio - 0.50).abs() < 0.01);
        let (lo, hi) = c.ratio_ci.unwrap();
        assert!(lo < c.ratio && c.ratio < hi && hi < 0.6);
        assert!(
            c.verdict().starts_with("lower by 50% (95% CI"),
            "{}",
            c.verdict()
        );
        let noisy = [8.0, 12.0, 9.0, 11.5, 10.0];
        let c = compare(&noisy, &base).unwrap();
        assert_eq!(c.verdict(), "no detectable difference");
    }

    #[test]
    fn welch_p_matches_a_known_value() {
        // t = 1.8974, Welch df = 5.8824; the two-sided tail integrated
        // numerically from the t density: 0.1075312.
        let c = compare(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!((c.p.unwrap() - 0.1075312).abs() < 1e-5, "{:?}", c.p);
    }
}
