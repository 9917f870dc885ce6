//! The inference policy for a paired lift: which interval and which test a lift gets (the
//! switch points, measured by `scripts/check-coverage`), and the verdict rule that makes a
//! verdict agree with its own test. Shared by the headline pass-rate lift and every metric lift.
//! The mechanics (intervals, tests) live in `crate::analysis::stats`; this module only chooses and
//! combines them. It reads no records and prints nothing.
//!
//! Default interval (statistics.md §5, §6.4; switch points from the simulation in
//! docs/statistics.md):
//! - K = 1 binary, no clusters: Newcombe's hybrid score interval (method 10) + McNemar mid-p;
//! - clustered, fewer than [`CLUSTER_BOOTSTRAP_MIN_CLUSTERS`] clusters: cluster-robust t
//!   (clustered SE, C − 1 df), tested by the same cluster t;
//! - clustered, at least that many: cluster bootstrap BCa, tested by the cluster t;
//! - otherwise, fewer than [`BOOTSTRAP_MIN_CASES`] paired cases: paired t (n − 1 df), tested by
//!   the same paired t;
//! - otherwise: case bootstrap BCa (percentile when BCa is undefined), tested by the sign-flip
//!   permutation test for n ≤ 20 and the paired t beyond;
//! - unclustered pass rates with fewer than [`MIN_NONZERO_DIFFERENCES`] non-zero case
//!   differences (heavy ties): the wider of the interval above and the t interval with two
//!   pseudo-cases of difference ±1/K̄ added, tested by the exact sign-flip permutation test;
//! - pass rates whose interval above came out with zero width (every case difference equal,
//!   e.g. every case 0/K without and K/K with the skill): the square-and-add combination
//!   (Newcombe's method 10 with φ = 0) of the arms' effective-count Wilson intervals, tested by
//!   the sign-flip permutation test (the cluster t with clusters) — never a zero-width interval.
//!
//! Verdict: `improved` / `regressed` only when the interval excludes 0 in that direction **and**
//! the test's two-sided p is below [`VERDICT_ALPHA`]; inconclusive with typed reasons otherwise
//! (no paired case, fewer than [`MIN_VERDICT_CASES`] cases, fewer than
//! [`MIN_VERDICT_CLUSTERS`] clusters, no interval, a zero-width interval, an interval spanning
//! 0, or a test that disagrees).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::analysis::stats::{self, BootstrapConfig, BootstrapMethod, Clusters, Interval};

use super::{CONFIDENCE, MDE_ALPHA, MDE_POWER};
use crate::record::LiftMethod;

/// Fewest paired cases for an `improved` / `regressed` verdict; below it no interval is
/// reported either.
pub(crate) const MIN_VERDICT_CASES: usize = 5;
/// Fewest clusters for an `improved` / `regressed` verdict on clustered cases.
pub(crate) const MIN_VERDICT_CLUSTERS: usize = 4;
/// Significance level the primary test must reach for a verdict.
pub(crate) const VERDICT_ALPHA: f64 = 0.05;
/// From this many paired (unclustered) cases on, the lift's default interval is the case
/// bootstrap (BCa); below it the paired t interval, whose coverage holds where the bootstrap's
/// does not (measured: docs/statistics.md).
pub(crate) const BOOTSTRAP_MIN_CASES: usize = 50;
/// From this many clusters on, the cluster bootstrap (BCa); below it the cluster-robust t.
pub(crate) const CLUSTER_BOOTSTRAP_MIN_CLUSTERS: usize = 50;
/// Unclustered pass rates with fewer non-zero case differences than this (heavy ties) get the
/// wider of their interval and the padded t interval, tested by the exact sign-flip test: with
/// m non-zero differences its smallest two-sided p is 2/2^m, so below 6 no exact test reaches
/// 0.05, and the t interval, resting on a few values, under-covers (measured:
/// docs/statistics.md).
pub(super) const MIN_NONZERO_DIFFERENCES: usize = 6;
/// Largest n for which the sign-flip permutation test is the bootstrap's test.
const PERMUTATION_MAX_CASES: usize = 20;

/// The interval behind a lift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum IntervalMethod {
    /// Newcombe's hybrid score interval, method 10 (K = 1 binary).
    Newcombe,
    /// Paired t interval on case differences, n − 1 df.
    PairedT,
    /// Cluster-robust t interval (clustered SE, C − 1 df).
    ClusterT,
    /// Square-and-add of the arms' effective-count Wilson intervals (pass rates whose t or
    /// bootstrap interval had zero width).
    WilsonSquareAndAdd,
    /// The wider (the union) of the t (or bootstrap) interval and the padded t interval (two
    /// pseudo-cases of difference ±1/K̄): unclustered pass rates with fewer than
    /// [`MIN_NONZERO_DIFFERENCES`] non-zero case differences.
    WiderOfTAndPaddedT,
    /// Case bootstrap, BCa.
    CaseBootstrapBca,
    /// Case bootstrap, percentile.
    CaseBootstrapPercentile,
    /// Cluster bootstrap, BCa.
    ClusterBootstrapBca,
    /// Cluster bootstrap, percentile.
    ClusterBootstrapPercentile,
}

impl IntervalMethod {
    /// The name used in every output (`method`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IntervalMethod::Newcombe => "newcombe",
            IntervalMethod::PairedT => "paired-t",
            IntervalMethod::ClusterT => "cluster-t",
            IntervalMethod::WilsonSquareAndAdd => "wilson-square-and-add",
            IntervalMethod::WiderOfTAndPaddedT => "wider-of-t-and-padded-t",
            IntervalMethod::CaseBootstrapBca => "case-bootstrap-bca",
            IntervalMethod::CaseBootstrapPercentile => "case-bootstrap-percentile",
            IntervalMethod::ClusterBootstrapBca => "cluster-bootstrap-bca",
            IntervalMethod::ClusterBootstrapPercentile => "cluster-bootstrap-percentile",
        }
    }
}

/// The test behind a lift's p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LiftTest {
    /// McNemar's mid-p test on the discordant cases (K = 1 binary).
    McnemarMidP,
    /// Sign-flip permutation test on case differences.
    SignFlipPermutation,
    /// Paired t test on case differences.
    PairedT,
    /// Cluster-robust t test (C − 1 df).
    ClusterT,
}

impl LiftTest {
    /// The name used in every output (`test`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LiftTest::McnemarMidP => "mcnemar-mid-p",
            LiftTest::SignFlipPermutation => "sign-flip-permutation",
            LiftTest::PairedT => "paired-t",
            LiftTest::ClusterT => "cluster-t",
        }
    }
}

/// Why a verdict is inconclusive (typed; `message` in [`VerdictReason`] says it in words).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub(crate) enum InconclusiveReason {
    /// No case was scored in both arms.
    NoPairedCases,
    /// Fewer paired cases than [`MIN_VERDICT_CASES`]: no interval is reported.
    TooFewCases {
        /// Paired cases.
        n_cases: usize,
        /// The minimum.
        minimum: usize,
    },
    /// Fewer clusters than [`MIN_VERDICT_CLUSTERS`].
    TooFewClusters {
        /// Clusters among the paired cases.
        n_clusters: usize,
        /// The minimum.
        minimum: usize,
    },
    /// The interval could not be computed.
    NoInterval,
    /// The interval has zero width: every case difference is the same (and not 0), so the data
    /// show no variance to size an interval or an MDE by; the metric tables then show no
    /// interval either, only this statement.
    ZeroWidthInterval,
    /// Every paired difference is 0: no case scored differently in the two arms, so the data
    /// show neither an effect nor any variance to size one by (no MDE is reported). Every
    /// table (the headline, the metrics) says this one thing.
    NoVariance,
    /// The 95% interval contains 0.
    IntervalSpansZero,
    /// The interval excludes 0 but the primary test does not reject at α = 0.05.
    TestDisagrees {
        /// The test.
        test: LiftTest,
        /// Its two-sided p-value (`None`: not computable).
        p_value: Option<f64>,
    },
    /// The minimum detectable effect exceeds the observed lift (more cases needed).
    MdeExceedsLift {
        /// MDE, a fraction.
        mde: f64,
        /// Observed lift, a fraction.
        lift: f64,
    },
    /// The anytime-valid confidence sequence of `run --sequential` lies inside ±`margin`
    /// (`--equivalence`): no meaningful effect.
    Equivalent {
        /// The equivalence margin, a fraction.
        margin: f64,
    },
    /// A fixed-n run with `--equivalence` (no previous version): the lift's 90 % interval lies
    /// inside ±`margin` — two one-sided tests at α = 0.05 each reject an effect as large as the
    /// margin (`super::evolution::no_effect`): no meaningful effect.
    EquivalentWithinMargin {
        /// The equivalence margin, a fraction.
        margin: f64,
    },
    /// `run --sequential` ended without a decision of its confidence sequence (every round
    /// run, or a budget): the fixed-n analysis of the cases measured would give a direction,
    /// but after a look at every round that verdict would spend a second α, so it is not
    /// called (the sequence alone keeps false verdicts ≤ α).
    SequenceUndecided {
        /// The fixed-n verdict that was not called (`improved` or `regressed`).
        fixed_n_verdict: String,
        /// The fixed-n test's two-sided p-value.
        p_value: Option<f64>,
    },
    /// `--method newcombe` on data that is not K = 1 binary and unclustered.
    MethodNotApplicable {
        /// The requested method.
        method: LiftMethod,
    },
}

impl std::fmt::Display for InconclusiveReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InconclusiveReason::NoPairedCases => write!(f, "no case was scored in both arms"),
            InconclusiveReason::TooFewCases { n_cases, minimum } => write!(
                f,
                "too few scored cases ({n_cases} < {minimum}) for an interval or a verdict"
            ),
            InconclusiveReason::TooFewClusters {
                n_clusters,
                minimum,
            } => write!(
                f,
                "too few clusters ({n_clusters} < {minimum}) for a verdict"
            ),
            InconclusiveReason::NoInterval => write!(f, "the interval could not be computed"),
            InconclusiveReason::ZeroWidthInterval => write!(
                f,
                "no variance: every case difference is the same, so the data show no spread to size an interval by"
            ),
            InconclusiveReason::NoVariance => write!(
                f,
                "no variance: every case scored the same in both arms (every paired difference is 0), so the data show no effect and no spread to size one by"
            ),
            InconclusiveReason::IntervalSpansZero => {
                write!(f, "the 95% interval of the lift spans 0")
            }
            InconclusiveReason::TestDisagrees { test, p_value } => match p_value {
                Some(p) => write!(
                    f,
                    "the interval excludes 0 but the {} test does not agree (p {} ≥ {VERDICT_ALPHA})",
                    test.as_str(),
                    crate::analysis::text::format_p_value(*p)
                ),
                None => write!(
                    f,
                    "the interval excludes 0 but the {} test has no p-value",
                    test.as_str()
                ),
            },
            InconclusiveReason::MdeExceedsLift { mde, lift } => write!(
                f,
                "the minimum detectable effect ({:.1} pp at 80% power) is larger than the observed lift ({:+.1} pp): more cases are needed",
                mde * 100.0,
                lift * 100.0
            ),
            InconclusiveReason::Equivalent { margin } => write!(
                f,
                "the anytime-valid confidence sequence lies inside ±{:.1} pp: no meaningful effect",
                margin * 100.0
            ),
            InconclusiveReason::EquivalentWithinMargin { margin } => write!(
                f,
                "the lift's 90% interval lies inside ±{:.1} pp (two one-sided tests): no meaningful effect",
                margin * 100.0
            ),
            InconclusiveReason::SequenceUndecided {
                fixed_n_verdict,
                p_value,
            } => write!(
                f,
                "the anytime-valid confidence sequence did not decide; the fixed-n analysis of the cases measured says {fixed_n_verdict}{}, but after a look at every round it is not a verdict (false verdicts would exceed 5%): run more cases, or without --sequential",
                p_value
                    .map(|p| format!(" (p {})", crate::analysis::text::format_p_value(p)))
                    .unwrap_or_default()
            ),
            InconclusiveReason::MethodNotApplicable { method } => write!(
                f,
                "--method {} needs K = 1 binary, unclustered data",
                serde_json::to_value(method)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            ),
        }
    }
}

/// One reason of an inconclusive verdict: the typed reason (`code` and its fields) and the
/// sentence every report prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VerdictReason {
    /// The typed reason.
    #[serde(flatten)]
    pub reason: InconclusiveReason,
    /// The same in words.
    pub message: String,
}

impl From<InconclusiveReason> for VerdictReason {
    fn from(reason: InconclusiveReason) -> Self {
        let message = reason.to_string();
        Self { reason, message }
    }
}

/// The paired cases of one lift.
pub(crate) struct PairedData<'a> {
    /// With-skill case values in `[0, 1]`.
    pub with: &'a [f64],
    /// Baseline case values, same order.
    pub without: &'a [f64],
    /// Cluster membership of the paired cases, when cases carry `cluster`.
    pub clusters: Option<&'a Clusters>,
    /// The 2×2 table (both, only with, only without, neither) when every paired case has
    /// exactly one binary scored attempt per arm.
    pub binary_table: Option<[u64; 4]>,
    /// Scored attempts behind each arm's case values (with, without) when the values are pass
    /// rates: enables the Wilson fallback for a zero-width interval.
    pub arm_trials: Option<[u64; 2]>,
}

/// The paired t cross-check (clustered when the cases are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairedTCheck {
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: Option<f64>,
}

/// The inference on one paired lift.
pub(crate) struct LiftInference {
    pub estimate: Option<f64>,
    pub interval: Option<Interval>,
    pub method: IntervalMethod,
    pub test: Option<LiftTest>,
    pub p_value: Option<f64>,
    pub paired_t: PairedTCheck,
    /// `(t_{df,0.975} + t_{df,0.8})·SE` with the SE and df of the t analysis the interval's
    /// family uses (clustered SE and C − 1 df for clustered cases).
    pub mde: Option<f64>,
    pub n_clusters: Option<usize>,
    pub differences: Vec<f64>,
    /// Set when the requested method does not apply to the data.
    pub not_applicable: Option<LiftMethod>,
}

/// The default interval for `n` paired cases (and `clusters` clusters when clustered).
pub(crate) fn default_method(n: usize, clusters: Option<usize>, binary_k1: bool) -> IntervalMethod {
    match clusters {
        Some(c) if c < CLUSTER_BOOTSTRAP_MIN_CLUSTERS => IntervalMethod::ClusterT,
        Some(_) => IntervalMethod::ClusterBootstrapBca,
        None if binary_k1 => IntervalMethod::Newcombe,
        None if n < BOOTSTRAP_MIN_CASES => IntervalMethod::PairedT,
        None => IntervalMethod::CaseBootstrapBca,
    }
}

fn clamp_lift(interval: Interval) -> Interval {
    Interval {
        low: interval.low.clamp(-1.0, 1.0),
        high: interval.high.clamp(-1.0, 1.0),
    }
}

/// Interval, test, cross-check and MDE of one paired lift. `requested` is `--method` (the
/// headline only); `resamples` and `seed` drive the bootstrap and the permutation test.
pub(crate) fn infer(
    data: &PairedData<'_>,
    requested: Option<LiftMethod>,
    resamples: usize,
    seed: u64,
) -> LiftInference {
    infer_at(data, requested, resamples, seed, CONFIDENCE)
}

/// [`infer`] with the interval (and the paired t cross-check) at two-sided `confidence`
/// instead of the reports' 95 %: the same method choice and fallbacks. The evolution contract
/// reads the 90 % interval (two one-sided tests at α = 0.05, `super::evolution`).
pub(crate) fn infer_at(
    data: &PairedData<'_>,
    requested: Option<LiftMethod>,
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> LiftInference {
    let n = data.with.len();
    let differences: Vec<f64> = data
        .with
        .iter()
        .zip(data.without)
        .map(|(a, b)| a - b)
        .collect();
    let estimate = (n > 0).then(|| differences.iter().sum::<f64>() / n as f64);
    let n_clusters = data.clusters.map(Clusters::cluster_count);
    let t_check = (n >= 2)
        .then(|| stats::paired_t(&differences, data.clusters, confidence).ok())
        .flatten();
    let paired_t = PairedTCheck {
        ci_low: t_check
            .as_ref()
            .and_then(|t| t.interval.map(|i| clamp_lift(i).low)),
        ci_high: t_check
            .as_ref()
            .and_then(|t| t.interval.map(|i| clamp_lift(i).high)),
        p_value: t_check.as_ref().and_then(|t| t.p_value),
    };
    let clustered = data.clusters.is_some();
    let binary_k1 = data.binary_table.is_some() && !clustered;
    let mut not_applicable = None;
    let method = match requested {
        None => default_method(n, n_clusters, binary_k1),
        Some(LiftMethod::Newcombe) if binary_k1 => IntervalMethod::Newcombe,
        Some(LiftMethod::Newcombe) => {
            not_applicable = Some(LiftMethod::Newcombe);
            default_method(n, n_clusters, binary_k1)
        }
        Some(LiftMethod::T) if clustered => IntervalMethod::ClusterT,
        Some(LiftMethod::T) => IntervalMethod::PairedT,
        Some(LiftMethod::Bca) if clustered => IntervalMethod::ClusterBootstrapBca,
        Some(LiftMethod::Bca) => IntervalMethod::CaseBootstrapBca,
        Some(LiftMethod::Percentile) if clustered => IntervalMethod::ClusterBootstrapPercentile,
        Some(LiftMethod::Percentile) => IntervalMethod::CaseBootstrapPercentile,
    };
    let t_test = if clustered {
        LiftTest::ClusterT
    } else {
        LiftTest::PairedT
    };
    let (interval, method, test, p_value) = match method {
        IntervalMethod::Newcombe => {
            let [both, only_with, only_without, neither] = data
                .binary_table
                .expect("Newcombe is chosen only with a table");
            let interval =
                stats::newcombe_paired_interval(both, only_with, only_without, neither, confidence);
            let mcnemar = stats::mcnemar(only_with, only_without);
            (
                interval,
                method,
                Some(LiftTest::McnemarMidP),
                Some(mcnemar.mid_p),
            )
        }
        IntervalMethod::PairedT
        | IntervalMethod::ClusterT
        | IntervalMethod::WilsonSquareAndAdd
        | IntervalMethod::WiderOfTAndPaddedT => (
            t_check.as_ref().and_then(|t| t.interval).map(clamp_lift),
            method,
            Some(t_test),
            paired_t.p_value,
        ),
        _ => {
            let bca = matches!(
                method,
                IntervalMethod::CaseBootstrapBca | IntervalMethod::ClusterBootstrapBca
            );
            let config = BootstrapConfig {
                resamples,
                seed,
                method: if bca {
                    BootstrapMethod::Bca
                } else {
                    BootstrapMethod::Percentile
                },
                confidence,
            };
            let result = (n >= 1)
                .then(|| {
                    stats::bootstrap_paired_difference(
                        data.with,
                        data.without,
                        data.clusters,
                        &config,
                    )
                    .ok()
                })
                .flatten();
            let percentile = if clustered {
                IntervalMethod::ClusterBootstrapPercentile
            } else {
                IntervalMethod::CaseBootstrapPercentile
            };
            let (interval, method) = match &result {
                Some(r) if bca && r.bca.is_some() => (r.bca, method),
                Some(r) => (Some(r.percentile), percentile),
                None => (None, method),
            };
            let (test, p_value) = if !clustered && n <= PERMUTATION_MAX_CASES {
                let permutation = stats::sign_flip_test(&differences, resamples, seed).ok();
                (
                    LiftTest::SignFlipPermutation,
                    permutation.map(|p| p.two_sided_p),
                )
            } else {
                (t_test, paired_t.p_value)
            };
            (interval, method, Some(test), p_value)
        }
    };
    // Pass rates with few non-zero case differences (heavy ties: most cases 0/K or K/K in both
    // arms, unclustered): the t interval rests on one or two values and collapses; it is
    // widened to the t interval with two pseudo-cases of difference ±1/K̄ (one attempt's worth
    // each way; an Agresti–Caffo-type adjustment), and the test is the exact sign-flip test,
    // which cannot reach p < 0.05 below MIN_NONZERO_DIFFERENCES. Otherwise a zero-width
    // interval falls back to the square-and-add Wilson interval.
    let nonzero = differences.iter().filter(|d| d.abs() > 1e-12).count();
    let sign_flip = || {
        let permutation = stats::sign_flip_test(&differences, resamples, seed).ok();
        (
            LiftTest::SignFlipPermutation,
            permutation.map(|p| p.two_sided_p),
        )
    };
    let (interval, method, test, p_value) = match (interval, data.arm_trials) {
        (Some(i), Some(trials))
            if n >= 2
                && !clustered
                && method != IntervalMethod::Newcombe
                && nonzero < MIN_NONZERO_DIFFERENCES =>
        {
            let (test, p_value) = sign_flip();
            match padded_t(&differences, trials, confidence) {
                Some(padded) => (
                    Some(Interval {
                        low: i.low.min(padded.low),
                        high: i.high.max(padded.high),
                    }),
                    IntervalMethod::WiderOfTAndPaddedT,
                    Some(test),
                    p_value,
                ),
                None => (Some(i), method, Some(test), p_value),
            }
        }
        (Some(i), Some(trials)) if i.width() <= 0.0 && n >= 2 => {
            let fallback = square_and_add(data, trials, confidence);
            let (test, p_value) = if clustered {
                (t_test, paired_t.p_value)
            } else {
                sign_flip()
            };
            (
                fallback.or(Some(i)),
                IntervalMethod::WilsonSquareAndAdd,
                Some(test),
                p_value,
            )
        }
        _ => (interval, method, test, p_value),
    };
    let mde = t_check.as_ref().and_then(|t| {
        let se = t.standard_error.filter(|se| *se > 0.0)?;
        if t.df == 0 {
            return None;
        }
        let dist = StudentsT::new(0.0, 1.0, t.df as f64).ok()?;
        Some((dist.inverse_cdf(1.0 - MDE_ALPHA / 2.0) + dist.inverse_cdf(MDE_POWER)) * se)
    });
    LiftInference {
        estimate,
        interval,
        method,
        test,
        p_value: (n > 0).then_some(p_value).flatten(),
        paired_t,
        mde,
        n_clusters,
        differences,
        not_applicable,
    }
}

/// The paired t interval of `differences` with two pseudo-cases of difference `+1/K̄` and
/// `−1/K̄` added, `K̄` the mean scored attempts per case and arm (`trials` over both arms / 2n):
/// one attempt's worth of disagreement each way, so that a run with few non-zero differences
/// keeps a width the attempt noise can explain (an Agresti–Caffo-type adjustment; n + 1 df).
fn padded_t(
    differences: &[f64],
    [with_trials, without_trials]: [u64; 2],
    confidence: f64,
) -> Option<Interval> {
    let n = differences.len();
    let total = (with_trials + without_trials) as f64;
    if n == 0 || total <= 0.0 {
        return None;
    }
    let step = 2.0 * n as f64 / total;
    let mut padded = differences.to_vec();
    padded.extend([step, -step]);
    stats::paired_t(&padded, None, confidence)
        .ok()?
        .interval
        .map(clamp_lift)
}

/// `d̄ ∓ √((p̂ − l)² + (u' − p̂')²)`: the arms' effective-count Wilson intervals combined by
/// square-and-add (Newcombe 1998 method 10 with φ = 0; conservative for positively correlated
/// arms).
fn square_and_add(
    data: &PairedData<'_>,
    [with_trials, without_trials]: [u64; 2],
    confidence: f64,
) -> Option<Interval> {
    let with =
        stats::effective_count_wilson_interval(data.with, with_trials, data.clusters, confidence)
            .ok()?;
    let without = stats::effective_count_wilson_interval(
        data.without,
        without_trials,
        data.clusters,
        confidence,
    )
    .ok()?;
    let delta = with.rate - without.rate;
    let low = delta
        - ((with.rate - with.interval.low).powi(2)
            + (without.interval.high - without.rate).powi(2))
        .sqrt();
    let high = delta
        + ((with.interval.high - with.rate).powi(2)
            + (without.rate - without.interval.low).powi(2))
        .sqrt();
    Some(clamp_lift(Interval { low, high }))
}

/// The direction a verdict may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Up,
    Down,
    None,
}

/// The verdict rule (statistics.md §5, §6.4): a direction only when the interval excludes 0
/// and the test agrees at [`VERDICT_ALPHA`]; otherwise the reasons. Also drops the interval
/// (and p-value) of a lift with fewer than [`MIN_VERDICT_CASES`] cases, so that no report
/// prints an interval beside "too few scored cases".
pub(crate) fn decide(inference: &mut LiftInference) -> (Direction, Vec<VerdictReason>) {
    let n = inference.differences.len();
    let mut reasons: Vec<InconclusiveReason> = Vec::new();
    if let Some(method) = inference.not_applicable {
        reasons.push(InconclusiveReason::MethodNotApplicable { method });
    }
    if n == 0 {
        reasons.push(InconclusiveReason::NoPairedCases);
    } else if n < MIN_VERDICT_CASES {
        inference.interval = None;
        inference.p_value = None;
        inference.mde = None;
        inference.paired_t = PairedTCheck {
            ci_low: None,
            ci_high: None,
            p_value: None,
        };
        reasons.push(InconclusiveReason::TooFewCases {
            n_cases: n,
            minimum: MIN_VERDICT_CASES,
        });
    }
    if let Some(c) = inference.n_clusters
        && n > 0
        && c < MIN_VERDICT_CLUSTERS
    {
        reasons.push(InconclusiveReason::TooFewClusters {
            n_clusters: c,
            minimum: MIN_VERDICT_CLUSTERS,
        });
    }
    let no_variance = n >= MIN_VERDICT_CASES && inference.differences.iter().all(|d| *d == 0.0);
    if no_variance {
        // One statement for data without variance: no MDE, no "interval spans 0".
        inference.mde = None;
    }
    let direction = match inference.interval {
        _ if n == 0 || n < MIN_VERDICT_CASES => Direction::None,
        _ if no_variance => {
            reasons.push(InconclusiveReason::NoVariance);
            Direction::None
        }
        None => {
            reasons.push(InconclusiveReason::NoInterval);
            Direction::None
        }
        Some(i) if i.width() <= 0.0 => {
            inference.mde = None;
            reasons.push(InconclusiveReason::ZeroWidthInterval);
            Direction::None
        }
        Some(i) if i.low > 0.0 || i.high < 0.0 => {
            let agrees = inference.p_value.is_some_and(|p| p < VERDICT_ALPHA);
            if !agrees {
                reasons.push(InconclusiveReason::TestDisagrees {
                    test: inference.test.unwrap_or(LiftTest::PairedT),
                    p_value: inference.p_value,
                });
            }
            if i.low > 0.0 {
                Direction::Up
            } else {
                Direction::Down
            }
        }
        Some(_) => {
            reasons.push(InconclusiveReason::IntervalSpansZero);
            if let (Some(mde), Some(lift)) = (inference.mde, inference.estimate)
                && mde > lift.abs()
            {
                reasons.push(InconclusiveReason::MdeExceedsLift { mde, lift });
            }
            Direction::None
        }
    };
    let direction = if reasons.is_empty() {
        direction
    } else {
        Direction::None
    };
    (
        direction,
        reasons.into_iter().map(VerdictReason::from).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inference_for(with: &[f64], without: &[f64], table: Option<[u64; 4]>) -> LiftInference {
        infer(
            &PairedData {
                with,
                without,
                clusters: None,
                binary_table: table,
                arm_trials: None,
            },
            None,
            2000,
            7,
        )
    }

    #[test]
    fn default_methods_follow_the_switch_points() {
        assert_eq!(default_method(20, None, true), IntervalMethod::Newcombe);
        assert_eq!(
            default_method(BOOTSTRAP_MIN_CASES - 1, None, false),
            IntervalMethod::PairedT
        );
        assert_eq!(
            default_method(BOOTSTRAP_MIN_CASES, None, false),
            IntervalMethod::CaseBootstrapBca
        );
        assert_eq!(default_method(30, Some(5), true), IntervalMethod::ClusterT);
        assert_eq!(
            default_method(300, Some(CLUSTER_BOOTSTRAP_MIN_CLUSTERS), false),
            IntervalMethod::ClusterBootstrapBca
        );
    }

    /// §5 worked example (K = 1): Newcombe spans 0 and McNemar mid-p 0.065 — inconclusive.
    #[test]
    fn newcombe_worked_example_is_inconclusive() {
        let mut with = Vec::new();
        let mut without = Vec::new();
        for (count, a, b) in [(10, 1.0, 1.0), (8, 1.0, 0.0), (2, 0.0, 1.0), (10, 0.0, 0.0)] {
            for _ in 0..count {
                with.push(a);
                without.push(b);
            }
        }
        let mut inference = inference_for(&with, &without, Some([10, 8, 2, 10]));
        assert_eq!(inference.method, IntervalMethod::Newcombe);
        assert!((inference.p_value.unwrap() - 0.065430).abs() < 1e-6);
        let (direction, reasons) = decide(&mut inference);
        assert_eq!(direction, Direction::None);
        assert_eq!(reasons[0].reason, InconclusiveReason::IntervalSpansZero);
    }

    #[test]
    fn interval_and_test_must_agree() {
        let mut inference = inference_for(&[1.0; 10], &[0.0; 10], None);
        inference.interval = Some(Interval {
            low: 0.1,
            high: 0.9,
        });
        inference.p_value = Some(0.06);
        let (direction, reasons) = decide(&mut inference);
        assert_eq!(direction, Direction::None);
        assert!(matches!(
            reasons[0].reason,
            InconclusiveReason::TestDisagrees { .. }
        ));
        assert!(reasons[0].message.contains("does not agree"));
        inference.p_value = Some(0.01);
        assert_eq!(decide(&mut inference).0, Direction::Up);
    }

    #[test]
    fn zero_width_few_cases_and_few_clusters_are_inconclusive() {
        // Every case +1: the t interval is [1, 1].
        let mut same = inference_for(&[1.0; 8], &[0.0; 8], None);
        let (direction, reasons) = decide(&mut same);
        assert_eq!(direction, Direction::None);
        assert_eq!(reasons[0].reason, InconclusiveReason::ZeroWidthInterval);
        assert!(reasons[0].message.starts_with("no variance:"));
        assert!(same.mde.is_none());
        // Four cases: no interval at all.
        let mut few = inference_for(&[1.0, 1.0, 0.0, 1.0], &[0.0, 0.0, 0.0, 1.0], None);
        let (direction, reasons) = decide(&mut few);
        assert_eq!(direction, Direction::None);
        assert!(few.interval.is_none() && few.p_value.is_none());
        assert!(
            reasons[0]
                .message
                .starts_with("too few scored cases (4 < 5)")
        );
        // Three clusters.
        let clusters = Clusters::from_labels(&["a", "a", "b", "b", "c", "c"]);
        let with = [1.0, 0.9, 1.0, 0.8, 1.0, 0.9];
        let without = [0.0, 0.1, 0.2, 0.1, 0.0, 0.1];
        let mut clustered = infer(
            &PairedData {
                with: &with,
                without: &without,
                clusters: Some(&clusters),
                binary_table: None,
                arm_trials: None,
            },
            None,
            2000,
            7,
        );
        assert_eq!(clustered.method, IntervalMethod::ClusterT);
        let (direction, reasons) = decide(&mut clustered);
        assert_eq!(direction, Direction::None);
        assert_eq!(
            reasons[0].reason,
            InconclusiveReason::TooFewClusters {
                n_clusters: 3,
                minimum: 4
            }
        );
    }

    /// Every case 0/2 → 2/2 (six cases): the t interval would be [1, 1]; the pass rate falls
    /// back to the Wilson square-and-add interval and the exact sign-flip test (p = 2/64).
    #[test]
    fn equal_differences_fall_back_to_wilson_square_and_add() {
        let mut inference = infer(
            &PairedData {
                with: &[1.0; 6],
                without: &[0.0; 6],
                clusters: None,
                binary_table: None,
                arm_trials: Some([12, 12]),
            },
            None,
            2000,
            7,
        );
        assert_eq!(inference.method, IntervalMethod::WilsonSquareAndAdd);
        assert_eq!(inference.test, Some(LiftTest::SignFlipPermutation));
        assert!((inference.p_value.unwrap() - 2.0 / 64.0).abs() < 1e-12);
        let interval = inference.interval.unwrap();
        assert!(interval.width() > 0.0 && interval.low > 0.3 && interval.high == 1.0);
        assert_eq!(decide(&mut inference).0, Direction::Up);
        // No difference at all: a real interval around 0, not [0, 0].
        let mut none = infer(
            &PairedData {
                with: &[1.0; 6],
                without: &[1.0; 6],
                clusters: None,
                binary_table: None,
                arm_trials: Some([12, 12]),
            },
            None,
            2000,
            7,
        );
        let interval = none.interval.unwrap();
        assert!(interval.low < 0.0 && interval.high > 0.0);
        let (direction, reasons) = decide(&mut none);
        assert_eq!(direction, Direction::None);
        // One statement for data without variance, and no MDE beside it.
        assert_eq!(reasons.len(), 1);
        assert_eq!(reasons[0].reason, InconclusiveReason::NoVariance);
        assert_eq!(none.mde, None);
    }

    /// K = 3, 30 cases, most 3/3 in both arms: with one non-zero difference (+1/3) the t
    /// interval is d/n ± t·|d|/n; the pass rate takes the wider padded t interval (pseudo-cases
    /// ±1/3: mean 1/96, SS = 1/9 + 2/9 − 32/96², 31 df) and the exact sign-flip test. From six
    /// non-zero differences on, the paired t stands.
    #[test]
    fn few_non_zero_differences_widen_the_t_interval() {
        let heavy_ties = |nonzero: usize| {
            let mut with = vec![1.0; 30];
            let mut without = vec![1.0; 30];
            for case in 0..nonzero {
                with[case] = 1.0;
                without[case] = 2.0 / 3.0;
            }
            with[29] = 0.0;
            without[29] = 0.0;
            infer(
                &PairedData {
                    with: &with,
                    without: &without,
                    clusters: None,
                    binary_table: None,
                    arm_trials: Some([90, 90]),
                },
                None,
                2000,
                7,
            )
        };
        let mut one = heavy_ties(1);
        assert_eq!(one.method, IntervalMethod::WiderOfTAndPaddedT);
        assert_eq!(one.test, Some(LiftTest::SignFlipPermutation));
        let t_low = one.paired_t.ci_low.unwrap();
        let t_high = one.paired_t.ci_high.unwrap();
        // d/n ± t_{29}·|d|/n with d = 1/3, n = 30.
        assert!((t_high - (1.0 + 2.045230) / 90.0).abs() < 1e-5, "{t_high}");
        let interval = one.interval.unwrap();
        assert!(interval.low <= t_low && interval.high >= t_high);
        let mean: f64 = 1.0 / 96.0;
        let se = ((1.0 / 3.0 - 32.0 * mean * mean) / 31.0 / 32.0).sqrt();
        assert!(
            (interval.high - (mean + 2.039513 * se)).abs() < 1e-5,
            "{interval:?}"
        );
        assert!(
            (interval.low - (mean - 2.039513 * se)).abs() < 1e-5,
            "{interval:?}"
        );
        assert_eq!(one.p_value, Some(1.0));
        assert_eq!(decide(&mut one).0, Direction::None);
        // Five: the exact test's smallest p is 2/32 — still no verdict, still widened.
        let mut five = heavy_ties(5);
        assert_eq!(five.method, IntervalMethod::WiderOfTAndPaddedT);
        assert!((five.p_value.unwrap() - 2.0 / 32.0).abs() < 1e-12);
        assert_eq!(decide(&mut five).0, Direction::None);
        // Six: the paired t as before.
        let six = heavy_ties(6);
        assert_eq!(six.method, IntervalMethod::PairedT);
        assert_eq!(six.test, Some(LiftTest::PairedT));
        assert_eq!(six.interval.unwrap().low, six.paired_t.ci_low.unwrap());
    }

    #[test]
    fn a_lower_level_gives_a_nested_interval_by_the_same_method() {
        // The evolution contract's 90 % interval: the same method, inside the 95 % one.
        let with = [1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.5, 1.0, 1.0, 0.5];
        let without = [0.5, 1.0, 0.0, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5, 0.0];
        let data = PairedData {
            with: &with,
            without: &without,
            clusters: None,
            binary_table: None,
            arm_trials: Some([20, 20]),
        };
        let wide = infer(&data, None, 2000, 1);
        let narrow = infer_at(&data, None, 2000, 1, 0.90);
        assert_eq!(wide.method, narrow.method);
        let (w, n) = (wide.interval.unwrap(), narrow.interval.unwrap());
        assert!(w.low < n.low && n.high < w.high, "{w:?} {n:?}");
        assert_eq!(wide.estimate, narrow.estimate);
    }

    #[test]
    fn reasons_serialize_with_a_code() {
        let reason = VerdictReason::from(InconclusiveReason::TooFewCases {
            n_cases: 3,
            minimum: 5,
        });
        let json = serde_json::to_value(&reason).unwrap();
        assert_eq!(json["code"], "too_few_cases");
        assert_eq!(json["n_cases"], 3);
        assert!(json["message"].as_str().unwrap().contains("3 < 5"));
        let back: VerdictReason = serde_json::from_value(json).unwrap();
        assert_eq!(back, reason);
    }
}
