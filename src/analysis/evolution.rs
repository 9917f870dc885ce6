//! The evolution contract: what a release's version number promises about its behaviour
//! against the previous version (`run --previous` / `--previous-ref`), tested on the paired
//! lift `with_skill − previous_version`.
//!
//! The versions (`crate::record::VersionPolicy`, read by `crate::features::asset::version`) are parsed as
//! `MAJOR.MINOR[.PATCH][-PRE][+BUILD]` (Semantic Versioning 2.0.0, a leading `v` allowed, `1.2`
//! read as `1.2.0`); the first component that differs gives the bump and the policy:
//!
//! | bump | promise | test | holds when |
//! |---|---|---|---|
//! | patch (or the same version) | *equivalent* | two one-sided tests at α = 0.05 each (Schuirmann 1987) | the 90 % interval lies inside (−δ, +δ) |
//! | minor | *non-inferior* | one-sided test at α = 0.05 | the 90 % interval's lower end is above −δ |
//! | major | nothing | — | reported only |
//!
//! TOST at level α is the same decision as "the (1 − 2α) two-sided interval lies inside the
//! margin" (Schuirmann 1987, J. Pharmacokinet. Biopharm. 15:657; Walker & Nowacki 2011, J. Gen.
//! Intern. Med. 26:192 for non-inferiority with the same interval), so both policies read one
//! interval: the lift's, chosen and computed exactly as the reports' 95 % interval
//! (`super::inference`, docs/statistics.md) but at 90 %. δ is `--equivalence` (default
//! [`DEFAULT_MARGIN`]). A version that is missing, does not parse, or goes down gives no policy:
//! the report says so, and `--enforce-version-policy` refuses to start (the pipeline) or fails.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{LiftSummary, MIN_VERDICT_CASES};
use crate::record::{DeclaredVersion, VersionPolicy};

/// The default margin δ of the evolution contract: ±10 pp of pass rate. A patch that moves the
/// pass rate by 10 pp changed behaviour; a tighter margin needs more cases: two identical
/// versions whose case differences have a standard deviation of 0.25 (an assumed attempt noise
/// at K = 3, not a measurement) give at N = 50 a 90 % half-width of `1.68 · 0.25/√50 ≈ 6 pp`,
/// and 30 cases passing in both arms at K = 1 give Newcombe's ±8.3 pp. Set `--equivalence`
/// for another.
pub(crate) const DEFAULT_MARGIN: f64 = 0.10;

/// Significance level of each one-sided test: the contract reads the 90 % interval.
pub(crate) const ONE_SIDED_ALPHA: f64 = 0.05;

/// The two-sided level of the interval the contract reads (`1 − 2α`).
pub(crate) const CONTRACT_CONFIDENCE: f64 = 1.0 - 2.0 * ONE_SIDED_ALPHA;

/// A parsed version: `MAJOR.MINOR.PATCH` and an optional pre-release (build metadata is
/// ignored, as Semantic Versioning orders it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SemanticVersion {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Option<String>,
}

impl fmt::Display for SemanticVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if let Some(pre) = &self.pre {
            write!(f, "-{pre}")?;
        }
        Ok(())
    }
}

/// A version text that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a version MAJOR.MINOR[.PATCH] (Semantic Versioning, e.g. 1.4.2; a leading v is allowed)"
)]
pub(crate) struct VersionError {
    /// The text as written.
    pub text: String,
}

/// Parse `text` as `[v]MAJOR.MINOR[.PATCH][-PRE][+BUILD]`: numeric components without leading
/// zeros; a missing PATCH is 0.
pub(crate) fn parse_version(text: &str) -> Result<SemanticVersion, VersionError> {
    let error = || VersionError {
        text: text.to_string(),
    };
    let trimmed = text.trim();
    let core = trimmed
        .strip_prefix('v')
        .or_else(|| trimmed.strip_prefix('V'))
        .unwrap_or(trimmed);
    let core = core.split('+').next().unwrap_or("");
    let (core, pre) = match core.split_once('-') {
        Some((core, pre)) => {
            let valid = !pre.is_empty()
                && pre.split('.').all(|p| {
                    !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                });
            if !valid {
                return Err(error());
            }
            (core, Some(pre.to_string()))
        }
        None => (core, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(error());
    }
    let number = |part: &str| -> Result<u64, VersionError> {
        let plain = !part.is_empty()
            && part.chars().all(|c| c.is_ascii_digit())
            && (part == "0" || !part.starts_with('0'));
        if !plain {
            return Err(error());
        }
        part.parse().map_err(|_| error())
    };
    Ok(SemanticVersion {
        major: number(parts[0])?,
        minor: number(parts[1])?,
        patch: parts.get(2).map(|p| number(p)).transpose()?.unwrap_or(0),
        pre,
    })
}

/// How the version moved from the previous to the current.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Bump {
    Major,
    Minor,
    Patch,
    /// The same MAJOR.MINOR.PATCH (a pre-release tag may differ): it promises what a patch does.
    Unchanged,
    /// The current version is lower than the previous one: no policy applies.
    Downgrade,
}

impl Bump {
    /// The bump from `previous` to `current`: the first of MAJOR, MINOR, PATCH that differs.
    pub(crate) fn between(previous: &SemanticVersion, current: &SemanticVersion) -> Self {
        use std::cmp::Ordering::*;
        let steps = [
            (current.major.cmp(&previous.major), Bump::Major),
            (current.minor.cmp(&previous.minor), Bump::Minor),
            (current.patch.cmp(&previous.patch), Bump::Patch),
        ];
        for (order, bump) in steps {
            match order {
                Greater => return bump,
                Less => return Bump::Downgrade,
                Equal => {}
            }
        }
        Bump::Unchanged
    }

    /// The policy the bump gives (`None` for a downgrade).
    pub(crate) fn policy(self) -> Option<Policy> {
        match self {
            Bump::Patch | Bump::Unchanged => Some(Policy::Equivalence),
            Bump::Minor => Some(Policy::NonInferiority),
            Bump::Major => Some(Policy::ReportOnly),
            Bump::Downgrade => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Bump::Major => "major release",
            Bump::Minor => "minor release",
            Bump::Patch => "patch release",
            Bump::Unchanged => "unchanged version",
            Bump::Downgrade => "version going down",
        }
    }
}

/// What the version bump promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Policy {
    /// Patch: the same behaviour within ±δ.
    Equivalence,
    /// Minor: not worse by δ or more.
    NonInferiority,
    /// Major: anything may change; the lift is reported only.
    ReportOnly,
}

/// The evolution contract's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ContractVerdict {
    /// Patch: the 90 % interval lies inside (−δ, +δ).
    Equivalent,
    /// Patch: it does not (a behaviour change, or too little data to show there is none).
    NotShownEquivalent,
    /// Minor: the 90 % interval's lower end is above −δ.
    NonInferior,
    /// Minor: the interval reaches below −δ but not wholly (not shown non-inferior).
    NotShownNonInferior,
    /// Minor: the whole interval lies below −δ.
    Inferior,
    /// Major: reported only.
    ReportedOnly,
    /// No policy applies: a version missing, unparseable, or going down.
    NoPolicy,
}

impl ContractVerdict {
    /// The verdict as reports print it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Equivalent => "equivalent",
            Self::NotShownEquivalent => "not shown equivalent",
            Self::NonInferior => "non-inferior",
            Self::NotShownNonInferior => "not shown non-inferior",
            Self::Inferior => "inferior",
            Self::ReportedOnly => "reported only",
            Self::NoPolicy => "no policy",
        }
    }

    /// Whether the release keeps its version's promise (`None`: nothing was promised or no
    /// policy applies).
    pub(crate) fn holds(self) -> Option<bool> {
        match self {
            Self::Equivalent | Self::NonInferior => Some(true),
            Self::NotShownEquivalent | Self::NotShownNonInferior | Self::Inferior => Some(false),
            Self::ReportedOnly | Self::NoPolicy => None,
        }
    }
}

/// The evolution contract checked against a run (`summary.json` `version_contract`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EvolutionReport {
    /// The skill's declared version (absent: none declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<DeclaredVersion>,
    /// The previous version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<DeclaredVersion>,
    /// The bump; absent when a version is missing or does not parse.
    pub bump: Option<Bump>,
    /// The policy the bump gives; absent when none applies.
    pub policy: Option<Policy>,
    /// The margin δ, a fraction.
    pub margin: f64,
    /// The two-sided level of the interval below (0.90: each one-sided test at α = 0.05).
    pub confidence: f64,
    /// `with_skill − previous_version`, mean over the cases scored in both.
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The interval's method (as the lift's `method`).
    pub method: String,
    /// Paired cases.
    pub n_cases: usize,
    pub verdict: ContractVerdict,
    /// `--enforce-version-policy`: a broken contract fails the run.
    pub enforced: bool,
    /// The contract in one sentence.
    pub message: String,
}

impl EvolutionReport {
    /// Why the contract fails the run (enforced, and broken or not applicable); `None` when it
    /// does not.
    pub(crate) fn failure(&self) -> Option<String> {
        if !self.enforced {
            return None;
        }
        match self.verdict.holds() {
            Some(false) => Some(format!("version policy: {}", self.message)),
            None if self.verdict == ContractVerdict::NoPolicy => Some(format!(
                "--enforce-version-policy cannot be honoured: {}",
                self.message
            )),
            _ => None,
        }
    }
}

/// Why the declared versions give no policy (missing, unparseable, going down).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NoPolicy(pub String);

/// Why no policy applies, or the bump (with both versions parsed).
fn bump_of(policy: &VersionPolicy) -> Result<(Bump, SemanticVersion, SemanticVersion), NoPolicy> {
    let read = |version: &Option<DeclaredVersion>, which: &str| match version {
        None => Err(NoPolicy(format!(
            "the {which} declares no version (SKILL.md `metadata.version`, or `version` in its plugin's .claude-plugin/plugin.json)"
        ))),
        Some(declared) => parse_version(&declared.text)
            .map_err(|e| NoPolicy(format!("the {which}'s version ({}): {e}", declared.source))),
    };
    let current = read(&policy.current, "skill")?;
    let previous = read(&policy.previous, "previous version")?;
    Ok((Bump::between(&previous, &current), previous, current))
}

/// Check that the versions give a policy before a run spends anything (for
/// `--enforce-version-policy`): the reason when they do not.
pub(crate) fn check_policy(policy: &VersionPolicy) -> Result<Bump, NoPolicy> {
    let (bump, previous, current) = bump_of(policy)?;
    if bump == Bump::Downgrade {
        return Err(NoPolicy(format!(
            "the version goes down from {previous} to {current}: no policy applies (is --previous the older version?)"
        )));
    }
    Ok(bump)
}

/// The contract of `policy` judged on `lift`, the paired `with_skill − previous_version` lift
/// with its interval at [`CONTRACT_CONFIDENCE`].
pub(crate) fn evaluate(
    policy: &VersionPolicy,
    lift: &LiftSummary,
    enforced: bool,
) -> EvolutionReport {
    let margin = policy.margin;
    let pp = |v: f64| format!("{:+.1} pp", v * 100.0);
    let interval = match (lift.ci_low, lift.ci_high) {
        (Some(low), Some(high)) => format!(
            "{:.0}% CI [{}, {}] ({})",
            CONTRACT_CONFIDENCE * 100.0,
            pp(low),
            pp(high),
            lift.method
        ),
        _ => "no interval".to_string(),
    };
    let measured = format!(
        "with_skill − previous_version {}, {interval}, N = {} cases, margin ±{:.1} pp",
        lift.estimate.map_or("—".to_string(), pp),
        lift.n_cases,
        margin * 100.0
    );
    let enough = lift.n_cases >= MIN_VERDICT_CASES;
    let (bump, verdict, promise) = match bump_of(policy) {
        Err(why) => (None, ContractVerdict::NoPolicy, why.0),
        Ok((bump, previous, current)) => {
            let versions = format!("{} {previous} → {current}", bump.as_str());
            let interval = lift.ci_low.zip(lift.ci_high).filter(|_| enough);
            let verdict = match (bump.policy(), interval) {
                (None, _) => ContractVerdict::NoPolicy,
                (Some(Policy::ReportOnly), _) => ContractVerdict::ReportedOnly,
                (Some(Policy::Equivalence), Some((low, high)))
                    if low > -margin && high < margin =>
                {
                    ContractVerdict::Equivalent
                }
                (Some(Policy::Equivalence), _) => ContractVerdict::NotShownEquivalent,
                (Some(Policy::NonInferiority), Some((low, _))) if low > -margin => {
                    ContractVerdict::NonInferior
                }
                (Some(Policy::NonInferiority), Some((_, high))) if high < -margin => {
                    ContractVerdict::Inferior
                }
                (Some(Policy::NonInferiority), _) => ContractVerdict::NotShownNonInferior,
            };
            let promise = match bump.policy() {
                None => format!("{versions}: no policy applies"),
                Some(Policy::Equivalence) => {
                    format!("{versions} must be equivalent to the previous version")
                }
                Some(Policy::NonInferiority) => {
                    format!("{versions} must be non-inferior to the previous version")
                }
                Some(Policy::ReportOnly) => format!("{versions}: reported only"),
            };
            (Some(bump), verdict, promise)
        }
    };
    let few = if !enough && verdict.holds() == Some(false) {
        format!(" (fewer than {MIN_VERDICT_CASES} cases scored in both arms)")
    } else {
        String::new()
    };
    EvolutionReport {
        current: policy.current.clone(),
        previous: policy.previous.clone(),
        bump,
        policy: bump.and_then(Bump::policy),
        margin,
        confidence: CONTRACT_CONFIDENCE,
        estimate: lift.estimate,
        ci_low: lift.ci_low,
        ci_high: lift.ci_high,
        method: lift.method.clone(),
        n_cases: lift.n_cases,
        verdict,
        enforced,
        message: format!("{promise}: {measured} — {}{few}", verdict.as_str()),
    }
}

/// The no-effect test of a fixed-n run with `--equivalence` and no previous version
/// (`summary.json` `equivalence`): the lift `with_skill − without_skill` with its 90 %
/// interval — chosen and computed as the reports' 95 % one — against ±δ. *Equivalent*
/// (two one-sided tests at α = 0.05 each, Schuirmann 1987) when the interval lies inside
/// (−δ, +δ): the skill is shown to make no difference as large as the margin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NoEffectReport {
    /// The margin δ, a fraction.
    pub margin: f64,
    /// The two-sided level of the interval (0.90).
    pub confidence: f64,
    /// `with_skill − without_skill`, mean over the cases scored in both.
    pub estimate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The interval's method (as the lift's `method`).
    pub method: String,
    /// Paired cases.
    pub n_cases: usize,
    /// `equivalent` or `not_shown_equivalent`.
    pub verdict: ContractVerdict,
    /// The test in one sentence.
    pub message: String,
}

/// The no-effect test of `lift` (computed at [`CONTRACT_CONFIDENCE`]) against ±`margin`:
/// equivalent only with at least [`MIN_VERDICT_CASES`] paired cases and the interval strictly
/// inside the margin.
pub(crate) fn no_effect(margin: f64, lift: &LiftSummary) -> NoEffectReport {
    let pp = |v: f64| format!("{:+.1} pp", v * 100.0);
    let enough = lift.n_cases >= MIN_VERDICT_CASES;
    let interval = lift.ci_low.zip(lift.ci_high).filter(|_| enough);
    let verdict = match interval {
        Some((low, high)) if low > -margin && high < margin => ContractVerdict::Equivalent,
        _ => ContractVerdict::NotShownEquivalent,
    };
    let measured = match interval {
        Some((low, high)) => format!(
            "with_skill − without_skill {}, {:.0}% CI [{}, {}] ({}), N = {} cases",
            lift.estimate.map_or("—".to_string(), pp),
            CONTRACT_CONFIDENCE * 100.0,
            pp(low),
            pp(high),
            lift.method,
            lift.n_cases
        ),
        None if !enough => format!(
            "N = {} cases scored in both arms (fewer than {MIN_VERDICT_CASES}: no interval)",
            lift.n_cases
        ),
        None => format!("N = {} cases, no interval", lift.n_cases),
    };
    let finding = match verdict {
        ContractVerdict::Equivalent => format!(
            "inside ±{:.1} pp: the skill makes no meaningful difference",
            margin * 100.0
        ),
        _ => format!(
            "not inside ±{:.1} pp: an effect of that size is not ruled out",
            margin * 100.0
        ),
    };
    NoEffectReport {
        margin,
        confidence: CONTRACT_CONFIDENCE,
        estimate: lift.estimate,
        ci_low: lift.ci_low,
        ci_high: lift.ci_high,
        method: lift.method.clone(),
        n_cases: lift.n_cases,
        verdict,
        message: format!("{measured}: {finding}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_effect_needs_the_whole_90_percent_interval_strictly_inside_the_margin() {
        let inside = no_effect(0.10, &lift(-0.05, 0.07, 20));
        assert_eq!(inside.verdict, ContractVerdict::Equivalent);
        assert!(
            inside.message.contains("[-5.0 pp, +7.0 pp]")
                && inside
                    .message
                    .contains("inside ±10.0 pp: the skill makes no meaningful difference"),
            "{}",
            inside.message
        );
        // Touching the margin is not inside; nor is an interval that reaches past it.
        assert_eq!(
            no_effect(0.10, &lift(-0.10, 0.05, 20)).verdict,
            ContractVerdict::NotShownEquivalent
        );
        assert_eq!(
            no_effect(0.10, &lift(0.02, 0.14, 20)).verdict,
            ContractVerdict::NotShownEquivalent
        );
        // Too few cases show nothing, however narrow.
        let few = no_effect(0.10, &lift(-0.01, 0.01, 4));
        assert_eq!(few.verdict, ContractVerdict::NotShownEquivalent);
        assert!(few.message.contains("fewer than 5"), "{}", few.message);
    }

    fn version(text: &str) -> SemanticVersion {
        parse_version(text).unwrap()
    }

    #[test]
    fn versions_parse_strictly() {
        assert_eq!(version("1.4.2").to_string(), "1.4.2");
        assert_eq!(version("v2.0").to_string(), "2.0.0");
        assert_eq!(version("1.0.0-rc.1+build.5").to_string(), "1.0.0-rc.1");
        for bad in [
            "", "1", "1.2.3.4", "01.2.3", "1.x", "latest", "1.2.3-", "1..2",
        ] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_first_component_that_differs_is_the_bump() {
        let bump = |from: &str, to: &str| Bump::between(&version(from), &version(to));
        assert_eq!(bump("1.2.3", "1.2.4"), Bump::Patch);
        assert_eq!(bump("1.2.3", "1.3.0"), Bump::Minor);
        assert_eq!(bump("1.9.9", "2.0.0"), Bump::Major);
        assert_eq!(bump("1.2", "1.2.0-rc.1"), Bump::Unchanged);
        assert_eq!(bump("1.3.0", "1.2.9"), Bump::Downgrade);
        assert_eq!(bump("1.10", "1.9"), Bump::Downgrade);
        assert_eq!(Bump::Unchanged.policy(), Some(Policy::Equivalence));
    }

    fn policy(previous: &str, current: &str) -> VersionPolicy {
        let declared = |text: &str| {
            (!text.is_empty()).then(|| DeclaredVersion {
                text: text.to_string(),
                source: "SKILL.md metadata.version".to_string(),
            })
        };
        VersionPolicy {
            current: declared(current),
            previous: declared(previous),
            margin: 0.1,
        }
    }

    fn lift(low: f64, high: f64, n: usize) -> LiftSummary {
        LiftSummary {
            metric: "pass_rate".to_string(),
            estimate: Some((low + high) / 2.0),
            ci_low: Some(low),
            ci_high: Some(high),
            method: "paired-t".to_string(),
            test: None,
            p_value: None,
            paired_t: super::super::PairedTCheck {
                ci_low: None,
                ci_high: None,
                p_value: None,
            },
            mde: None,
            n_cases: n,
            n_clusters: None,
            k: 1,
            verdict: super::super::Verdict::Inconclusive,
            verdict_reasons: Vec::new(),
            correlation: None,
            case_lifts: Default::default(),
            negative_lift: Default::default(),
            resamples: 0,
            seed: 0,
            gate: None,
        }
    }

    #[test]
    fn a_patch_must_be_equivalent_and_a_minor_non_inferior() {
        let patch = policy("1.0.0", "1.0.1");
        let verdict =
            |p: &VersionPolicy, low, high| evaluate(p, &lift(low, high, 20), true).verdict;
        assert_eq!(verdict(&patch, -0.05, 0.05), ContractVerdict::Equivalent);
        assert_eq!(
            verdict(&patch, -0.05, 0.12),
            ContractVerdict::NotShownEquivalent
        );
        // The margin itself is outside: equivalence needs the interval strictly inside.
        assert_eq!(
            verdict(&patch, -0.1, 0.0),
            ContractVerdict::NotShownEquivalent
        );
        let minor = policy("1.0.0", "1.1.0");
        assert_eq!(verdict(&minor, -0.05, 0.4), ContractVerdict::NonInferior);
        assert_eq!(
            verdict(&minor, -0.2, 0.0),
            ContractVerdict::NotShownNonInferior
        );
        assert_eq!(verdict(&minor, -0.5, -0.2), ContractVerdict::Inferior);
        let major = policy("1.0.0", "2.0.0");
        let report = evaluate(&major, &lift(-0.5, -0.2, 20), true);
        assert_eq!(report.verdict, ContractVerdict::ReportedOnly);
        assert_eq!(report.failure(), None);
        // Too few cases show nothing.
        assert_eq!(
            evaluate(&patch, &lift(-0.01, 0.01, 4), true).verdict,
            ContractVerdict::NotShownEquivalent
        );
    }

    #[test]
    fn a_broken_contract_fails_only_when_enforced() {
        let report = evaluate(&policy("1.0.0", "1.0.1"), &lift(0.2, 0.6, 20), true);
        let failure = report.failure().unwrap();
        assert!(
            failure.contains("patch release 1.0.0 → 1.0.1 must be equivalent")
                && failure.contains("+20.0 pp")
                && failure.contains("margin ±10.0 pp")
                && failure.contains("not shown equivalent"),
            "{failure}"
        );
        let report = evaluate(&policy("1.0.0", "1.0.1"), &lift(0.2, 0.6, 20), false);
        assert_eq!(report.failure(), None);
    }

    #[test]
    fn missing_or_unparseable_versions_give_no_policy_and_say_why() {
        let report = evaluate(&policy("", "1.0.1"), &lift(-0.01, 0.01, 20), false);
        assert_eq!(report.verdict, ContractVerdict::NoPolicy);
        assert!(
            report
                .message
                .contains("previous version declares no version"),
            "{}",
            report.message
        );
        let report = evaluate(&policy("1.0", "one"), &lift(-0.01, 0.01, 20), true);
        assert!(
            report.message.contains("`one` is not a version"),
            "{}",
            report.message
        );
        assert!(report.failure().unwrap().contains("cannot be honoured"));
        assert!(
            check_policy(&policy("1.2.0", "1.1.0"))
                .unwrap_err()
                .0
                .contains("goes down")
        );
        assert_eq!(check_policy(&policy("1.2.0", "1.2.1")), Ok(Bump::Patch));
    }
}
