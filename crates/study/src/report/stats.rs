//! Statistics per cell and between levels.
//!
//! - 95 % confidence interval of a mean. For a quantity whose values are
//!   all positive (times, rates, sizes) the interval is taken on the log
//!   scale, mean·exp(±t·(s/x̄)/√n) (the delta method for ln x̄), so that it
//!   never goes below zero and is wider above than below, as intervals of
//!   such quantities are; otherwise Student's t with n − 1 degrees of
//!   freedom, x̄ ± t·s/√n.
//! - A level against the baseline: ONE test decides the verdict, and the
//!   interval shown is that test's, so the two cannot disagree. For
//!   positive quantities, the log-ratio test: ℓ = ln(ā/b̄), its standard
//!   error by the delta method, se² = s²ₐ/(nₐā²) + s²_b/(n_b·b̄²), Welch–
//!   Satterthwaite degrees of freedom from those two terms, t = ℓ/se; the
//!   interval of the ratio is exp(ℓ ± q·se), and the difference is
//!   significant at 5 % exactly when that interval leaves out 1.
//!   Otherwise Welch's t-test on the difference of the means, with the
//!   difference's interval. The quantiles come from `statrs` (fractional
//!   degrees of freedom).
//! - Stability of a cell: the coefficient of variation (s/x̄) and
//!   outliers by the modified z-score (Iglewicz and Hoaglin: 0.6745·|x −
//!   median| / MAD above 3.5), so that a run ten times off the others is
//!   flagged rather than averaged in silently.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// A cell's description.
#[derive(Debug, Clone, PartialEq)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n − 1); 0 for one value.
    pub sd: f64,
    /// 95 % interval of the mean; `None` for fewer than 2 values.
    pub ci: Option<(f64, f64)>,
    /// Whether `ci` was taken on the log scale (every value positive).
    pub log_scale: bool,
    /// Coefficient of variation, s / |x̄|; `None` when x̄ is 0.
    pub cv: Option<f64>,
    /// Positions (in the order given) of the values that are outliers.
    pub outliers: Vec<usize>,
}

/// A coefficient of variation above this makes a cell unstable.
pub const UNSTABLE_CV: f64 = 0.25;
/// The modified z-score above which a value is an outlier.
const OUTLIER_Z: f64 = 3.5;

fn t975(df: f64) -> Option<f64> {
    StudentsT::new(0.0, 1.0, df)
        .ok()
        .map(|t| t.inverse_cdf(0.975))
}

fn median_of(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub fn describe(xs: &[f64]) -> Option<Describe> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let median = median_of(xs);
    let sd = if n > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let log_scale = xs.iter().all(|&x| x > 0.0);
    let ci = if n > 1 {
        t975((n - 1) as f64).map(|t| {
            if log_scale {
                let h = t * (sd / mean) / (n as f64).sqrt();
                (mean * (-h).exp(), mean * h.exp())
            } else {
                let h = t * sd / (n as f64).sqrt();
                (mean - h, mean + h)
            }
        })
    } else {
        None
    };
    let cv = (mean != 0.0).then(|| sd / mean.abs());
    let outliers = if n >= 3 {
        let deviations: Vec<f64> = xs.iter().map(|x| (x - median).abs()).collect();
        // A floor of 1 % of the median: runs that agree to the last digit
        // (MAD 0) must not make a tiny difference an outlier.
        let mad = median_of(&deviations).max(median.abs() * 0.01);
        if mad > 0.0 {
            (0..n)
                .filter(|&i| 0.6745 * deviations[i] / mad > OUTLIER_Z)
                .collect()
        } else {
            Vec::new()
        }
    } else {
        Vec::new()
    };
    Some(Describe {
        n,
        mean,
        median,
        sd,
        ci,
        log_scale,
        cv,
        outliers,
    })
}

impl Describe {
    /// Whether the cell's runs disagree too much to trust its mean: a
    /// coefficient of variation above [`UNSTABLE_CV`] or an outlier.
    pub fn unstable(&self) -> bool {
        !self.outliers.is_empty() || self.cv.is_some_and(|cv| cv > UNSTABLE_CV)
    }

    /// Repetitions that would bring the 95 % interval of the mean within
    /// ±10 % of it at this spread (n ≈ (2·CV/0.1)²).
    pub fn reps_for_ten_percent(&self) -> Option<usize> {
        self.cv
            .map(|cv| ((2.0 * cv / 0.10).powi(2)).ceil().max(3.0) as usize)
    }
}

/// A number with four significant digits, for words ("lower by 0.1234").
pub fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// Which test compared a level with the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The log-ratio t-test (all values positive): the interval is the
    /// ratio's.
    LogRatio,
    /// Welch's t-test on the difference: the interval is the difference's.
    Difference,
}

/// A level against the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compare {
    pub test: Test,
    /// mean(a) / mean(base) (`NaN` when the base mean is 0).
    pub ratio: f64,
    /// mean(a) − mean(base).
    pub diff: f64,
    /// The 95 % interval of the test's quantity: the ratio (LogRatio) or
    /// the difference (Difference).
    pub ci: Option<(f64, f64)>,
    /// The test's two-sided p-value; `None` when it cannot be computed
    /// (fewer than two values on a side).
    pub p: Option<f64>,
    /// The test's standard error and Welch degrees of freedom (`None`
    /// with fewer than two values on a side or no spread).
    pub se: Option<(f64, f64)>,
    /// CV²ₐ + CV²_b, the squared spreads of the two sides (log-ratio
    /// test): what the repetitions needed to tell are computed from.
    pub cv2: f64,
}

/// Above this smallest detectable ratio (at 80 % power) a comparison's
/// interval is too wide to tell a difference: "no difference" would claim
/// what the runs cannot show.
pub const TOO_WIDE: f64 = 2.0;
/// The power the detectable ratio is given at.
pub const POWER: f64 = 0.80;

/// The smallest ratio a two-sided log-ratio t-test at the 5 % level
/// detects with probability `power`, given the standard error `se` of
/// the log-ratio and `df` degrees of freedom:
/// exp((t_{0.975,df} + t_{power,df})·se).
pub fn detectable_ratio(se: f64, df: f64, power: f64) -> Option<f64> {
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(((t.inverse_cdf(0.975) + t.inverse_cdf(power)) * se).exp())
}

/// Runs per side (2 to 1000) at which the detectable ratio (80 % power)
/// reaches `ratio`, for sides of squared CVs adding to `cv2`: se =
/// √(cv2/n), df = 2n − 2. A ratio within 10 % of 1 is taken as ±10 %.
pub fn runs_to_tell(ratio: f64, cv2: f64) -> Option<usize> {
    let effect = ratio.ln().abs().max(1.1f64.ln());
    (2..=1000).find(|&n| {
        let se = (cv2 / n as f64).sqrt();
        detectable_ratio(se, (2 * n - 2) as f64, POWER).is_some_and(|d| d.ln() <= effect)
    })
}

impl Compare {
    /// "higher by 23% (95% CI 12..35%)", "lower by 0.12 (95% CI
    /// 0.05..0.19)", or "no detectable difference": the verdict of the
    /// test whose interval `ci` is.
    pub fn verdict(&self) -> String {
        match self.p {
            None => "too few runs to test".into(),
            Some(p) if p >= 0.05 => match (self.test, self.detectable()) {
                (Test::LogRatio, Some(d)) if d > TOO_WIDE => {
                    let more = runs_to_tell(self.ratio, self.cv2)
                        .map_or("more runs".to_string(), |n| {
                            format!("about {n} runs a side")
                        });
                    format!(
                        "too few runs to tell: only a ratio beyond ×{d:.2} could be detected; {more} would tell ×{:.2}",
                        if (self.ratio.ln()).abs() < 1.1f64.ln() { 1.1 } else { self.ratio }
                    )
                }
                (Test::LogRatio, Some(d)) => {
                    format!(
                        "no detectable difference (could detect ×{d:.2} or beyond at 80 % power{})",
                        self.at_95()
                            .map_or(String::new(), |h| format!(", ×{h:.2} at 95 %"))
                    )
                }
                _ => "no detectable difference".into(),
            },
            Some(_) => match self.test {
                Test::LogRatio => {
                    // Issue 34: every comparison says what its runs
                    // could detect.
                    let could = self.detectable().map_or(String::new(), |d| {
                        format!(
                            "; could detect ×{d:.2} at 80 % power{}",
                            self.at_95()
                                .map_or(String::new(), |h| format!(", ×{h:.2} at 95 %"))
                        )
                    });
                    let pct = (self.ratio - 1.0) * 100.0;
                    let word = if pct >= 0.0 { "higher" } else { "lower" };
                    // Small differences keep a decimal: "higher by 0.2%".
                    let d = if pct.abs() < 10.0 { 1 } else { 0 };
                    match self.ci {
                        Some((lo, hi)) => {
                            let (a, b) = ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0);
                            let (a, b) = if pct >= 0.0 { (a, b) } else { (-b, -a) };
                            format!(
                                "{word} by {:.d$}% (95% CI {a:.d$}..{b:.d$}%){could}",
                                pct.abs()
                            )
                        }
                        None => format!("{word} by {:.d$}%{could}", pct.abs()),
                    }
                }
                Test::Difference => {
                    let word = if self.diff >= 0.0 { "higher" } else { "lower" };
                    let g = sig;
                    match self.ci {
                        Some((lo, hi)) => {
                            let (a, b) = if self.diff >= 0.0 {
                                (lo, hi)
                            } else {
                                (-hi, -lo)
                            };
                            format!(
                                "{word} by {} (95% CI {}..{})",
                                g(self.diff.abs()),
                                g(a),
                                g(b)
                            )
                        }
                        None => format!("{word} by {}", g(self.diff.abs())),
                    }
                }
            },
        }
    }

    /// The smallest ratio (or its inverse, either way) these runs could
    /// have detected at the 5 % level with 80 % power, from the observed
    /// spread (log-ratio test only).
    pub fn detectable(&self) -> Option<f64> {
        let (se, df) = self.se?;
        (self.test == Test::LogRatio)
            .then(|| detectable_ratio(se, df, POWER))
            .flatten()
    }

    /// As [`Compare::detectable`], with 95 % power: the ratio these runs
    /// would have missed only once in twenty.
    pub fn at_95(&self) -> Option<f64> {
        let (se, df) = self.se?;
        (self.test == Test::LogRatio)
            .then(|| detectable_ratio(se, df, 0.95))
            .flatten()
    }

    /// The quantity and its interval as the statistics table shows them:
    /// "×5.026 (1.737 .. 14.546)", or a difference with `digits`
    /// decimals, "-0.120 (-0.300 .. +0.050)".
    pub fn shown(&self, digits: usize) -> String {
        let d = |x: f64| format!("{x:+.digits$}");
        match (self.test, self.ci) {
            (Test::LogRatio, Some((lo, hi))) => {
                format!("×{:.3} ({:.3} .. {:.3})", self.ratio, lo, hi)
            }
            (Test::LogRatio, None) => format!("×{:.3}", self.ratio),
            (Test::Difference, Some((lo, hi))) => {
                format!("{} ({} .. {})", d(self.diff), d(lo), d(hi))
            }
            (Test::Difference, None) => d(self.diff),
        }
    }
}

/// Welch–Satterthwaite degrees of freedom of two variance terms (each a
/// variance over its n), with their sample sizes.
fn welch_df(ua: f64, na: f64, ub: f64, nb: f64) -> f64 {
    (ua + ub).powi(2) / (ua * ua / (na - 1.0) + ub * ub / (nb - 1.0))
}

pub fn compare(a: &[f64], base: &[f64]) -> Option<Compare> {
    let da = describe(a)?;
    let db = describe(base)?;
    let ratio = if db.mean != 0.0 {
        da.mean / db.mean
    } else {
        f64::NAN
    };
    let diff = da.mean - db.mean;
    let test = if da.log_scale && db.log_scale {
        Test::LogRatio
    } else {
        Test::Difference
    };
    let mut c = Compare {
        test,
        ratio,
        diff,
        ci: None,
        p: None,
        se: None,
        cv2: da.cv.unwrap_or(0.0).powi(2) + db.cv.unwrap_or(0.0).powi(2),
    };
    if da.n < 2 || db.n < 2 {
        return Some(c);
    }
    let (na, nb) = (da.n as f64, db.n as f64);
    // The test's estimate and the two terms of its variance.
    let (est, ua, ub) = match test {
        Test::LogRatio => (
            ratio.ln(),
            da.sd * da.sd / (na * da.mean * da.mean),
            db.sd * db.sd / (nb * db.mean * db.mean),
        ),
        Test::Difference => (diff, da.sd * da.sd / na, db.sd * db.sd / nb),
    };
    let back = |x: f64| match test {
        Test::LogRatio => x.exp(),
        Test::Difference => x,
    };
    let se = (ua + ub).sqrt();
    if se == 0.0 {
        // Identical values on each side: equal or different for certain.
        c.ci = Some((back(est), back(est)));
        c.p = Some(if da.mean == db.mean { 1.0 } else { 0.0 });
        return Some(c);
    }
    let df = welch_df(ua, na, ub, nb);
    c.se = Some((se, df));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = dist.inverse_cdf(0.975);
    c.ci = Some((back(est - q * se), back(est + q * se)));
    c.p = Some(2.0 * (1.0 - dist.cdf((est / se).abs())));
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed: df = 2, t_{0.975,2} = 4.302653, t_{0.80,2} =
    /// 1.060660; se = 0.2 gives exp(5.363313 × 0.2) = exp(1.0726626) =
    /// 2.923. df = 10: 2.228139 + 0.879058 = 3.107197; se = 0.05 gives
    /// exp(0.15536) = 1.1681.
    #[test]
    fn the_detectable_ratio_is_the_two_quantiles_times_the_error() {
        let d = detectable_ratio(0.2, 2.0, 0.80).unwrap();
        assert!((d - 2.9231).abs() < 1e-3, "{d}");
        let d = detectable_ratio(0.05, 10.0, 0.80).unwrap();
        assert!((d - 1.1681).abs() < 1e-3, "{d}");
    }

    /// CVs of 10 % a side (cv2 = 0.02), a ratio of 1.2 (ln 0.18232): n =
    /// 6 gives se 0.05774, df 10, detectable exp(3.1072 × 0.05774) =
    /// 1.1964 ≤ 1.2; n = 5 gives se 0.06325, df 8, (2.3060 + 0.8889) ×
    /// 0.06325 = 0.2021 > 0.18232.
    #[test]
    fn the_runs_to_tell_reach_the_observed_ratio() {
        assert_eq!(runs_to_tell(1.2, 0.02), Some(6));
        // A ratio near 1 is taken as a 10 % effect: more runs.
        assert!(runs_to_tell(1.01, 0.02).unwrap() > 6);
    }

    /// Issue 35: two runs a side, a ×13.9 gain with a wide spread was
    /// "no detectable difference"; it says the runs cannot tell.
    #[test]
    fn two_runs_of_wide_spread_are_too_few_to_tell_not_no_difference() {
        let c = compare(&[10.0, 268.0], &[10.0, 11.0]).unwrap();
        assert!(c.p.unwrap() >= 0.05, "{c:?}");
        let v = c.verdict();
        assert!(v.starts_with("too few runs to tell"), "{v}");
        assert!(!v.contains("no detectable difference"), "{v}");
        // A tight comparison still says no difference, beside its figure.
        let c = compare(&[100.0, 101.0, 99.0], &[100.0, 100.5, 99.5]).unwrap();
        assert!(
            c.verdict()
                .starts_with("no detectable difference (could detect ×1.0"),
            "{}",
            c.verdict()
        );
    }

    #[test]
    fn describes_a_sample() {
        let d = describe(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(d.n, 4);
        assert_eq!(d.mean, 2.5);
        assert_eq!(d.median, 2.5);
        assert!((d.sd - 1.2909944).abs() < 1e-6);
        // All positive: the log-scale interval, 2.5·exp(±t(0.975, 3)·
        // (s/x̄)/√4) with t = 3.182446.
        assert!(d.log_scale);
        let h: f64 = 3.182446 * (1.2909944 / 2.5) / 2.0;
        let (lo, hi) = d.ci.unwrap();
        assert!((lo - 2.5 * (-h).exp()).abs() < 1e-5, "{lo}");
        assert!((hi - 2.5 * h.exp()).abs() < 1e-5, "{hi}");
        // With a value at or below zero: Student's t, symmetric.
        let d = describe(&[-1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!(!d.log_scale);
        let (lo, hi) = d.ci.unwrap();
        assert!(((lo + hi) / 2.0 - d.mean).abs() < 1e-9);
    }

    /// The arrival rate: a t interval of a positive quantity went
    /// below zero (-0.48 .. 30.82); the log-scale one cannot.
    #[test]
    fn an_interval_of_a_positive_quantity_stays_positive() {
        let rates = [1.8, 25.0, 12.0];
        let d = describe(&rates).unwrap();
        let (lo, hi) = d.ci.unwrap();
        assert!(lo > 0.0 && lo < d.mean && d.mean < hi, "{lo} {hi}");
        // Student's t would have gone negative here.
        let t = 4.302653 * d.sd / 3f64.sqrt();
        assert!(d.mean - t < 0.0);
    }

    #[test]
    fn welch_finds_a_clear_difference_and_not_a_vague_one() {
        let base = [10.0, 10.2, 9.9, 10.1, 9.8];
        let fast = [5.0, 5.1, 4.9, 5.2, 5.0];
        let c = compare(&fast, &base).unwrap();
        assert_eq!(c.test, Test::LogRatio);
        assert!(c.p.unwrap() < 0.001);
        assert!((c.ratio - 0.50).abs() < 0.01);
        let (lo, hi) = c.ci.unwrap();
        assert!(lo < c.ratio && c.ratio < hi && hi < 0.6);
        assert!(
            c.verdict().starts_with("lower by 50% (95% CI")
                && c.verdict().contains("; could detect ×"),
            "{}",
            c.verdict()
        );
        let noisy = [8.0, 12.0, 9.0, 11.5, 10.0];
        let c = compare(&noisy, &base).unwrap();
        assert_eq!(
            c.verdict(),
            "no detectable difference (could detect ×1.32 or beyond at 80 % power, ×1.44 at 95 %)"
        );
    }

    /// The case: a ratio of 5.0 whose interval (1.7..14.5) left
    /// out 1 beside a Welch verdict of "no detectable difference". One
    /// test now decides both: the verdict is significant exactly when the
    /// interval shown leaves out 1, over many samples.
    #[test]
    fn the_verdict_and_the_interval_shown_never_disagree() {
        let base = [1.0, 1.1, 0.9];
        let wild = [2.0, 9.0, 4.1];
        let c = compare(&wild, &base).unwrap();
        let (lo, hi) = c.ci.unwrap();
        assert_eq!(
            c.p.unwrap() < 0.05,
            !(lo..=hi).contains(&1.0),
            "{c:?} {}",
            c.verdict()
        );
        let mut rng = 12345u64;
        let mut next = || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..2000 {
            let a: Vec<f64> = (0..3).map(|_| 0.1 + 10.0 * next()).collect();
            let b: Vec<f64> = (0..4).map(|_| 0.1 + 3.0 * next()).collect();
            let c = compare(&a, &b).unwrap();
            let (lo, hi) = c.ci.unwrap();
            let significant = c.p.unwrap() < 0.05;
            assert_eq!(significant, !(lo..=hi).contains(&1.0), "{a:?} {b:?} {c:?}");
            let v = c.verdict();
            let none =
                v.starts_with("no detectable difference") || v.starts_with("too few runs to tell");
            assert_eq!(significant, !none, "{v}");
        }
        // A difference test when a value is not positive: its interval is
        // the difference's, and it agrees with its verdict too.
        let c = compare(&[-0.2, 0.1, 0.0], &[0.5, 0.6, 0.55]).unwrap();
        assert_eq!(c.test, Test::Difference);
        let (lo, hi) = c.ci.unwrap();
        assert_eq!(c.p.unwrap() < 0.05, !(lo..=hi).contains(&0.0));
        assert!(c.verdict().starts_with("lower by 0.5"), "{}", c.verdict());
    }

    #[test]
    fn a_run_ten_times_off_the_others_is_an_outlier() {
        let d = describe(&[11.2, 10.6, 1.1]).unwrap();
        assert_eq!(d.outliers, vec![2]);
        assert!(d.unstable());
        let d = describe(&[10.0, 10.4, 9.8]).unwrap();
        assert!(d.outliers.is_empty() && !d.unstable(), "{d:?}");
        // Runs that agree exactly but for one tiny step are not flagged.
        let d = describe(&[5.0, 5.0, 5.01]).unwrap();
        assert!(d.outliers.is_empty(), "{d:?}");
        // Spread alone makes a cell unstable.
        let d = describe(&[4.0, 10.0, 7.0, 13.0]).unwrap();
        assert!(d.unstable() && d.outliers.is_empty(), "{d:?}");
        assert!(d.reps_for_ten_percent().unwrap() > 10);
    }

    #[test]
    fn welch_p_matches_a_known_value() {
        // Welch's test on differences (a zero keeps it off the log scale):
        // means 2.8 and 6, sds 1.923538 and 3.162278, n = 5 each;
        // t = 1.93319, Welch df = 6.60357; the two-sided tail integrated
        // numerically from the t density: 0.0969712.
        let c = compare(&[0.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert_eq!(c.test, Test::Difference);
        assert!((c.p.unwrap() - 0.0969712).abs() < 1e-5, "{:?}", c.p);
    }
}
