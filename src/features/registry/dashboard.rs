//! The recommend/remove dashboard (`status --dashboard`): per registered asset, the latest
//! recorded lift with an interval, the with-skill pass-rate trend across model versions under the
//! current fingerprint, a `risk` column that is only a maintenance-surface proxy (declared surface
//! size and scripts), and a keep / rewrite / retire suggestion with its reason. Suggestions are
//! heuristic, never evidence.

use std::collections::BTreeMap;

use serde::Serialize;

use super::baseline::{BaselineEntry, BaselineStore};
use super::scan::Registry;
use super::surface::surface_size;
use crate::analysis::stats::{BootstrapMethod, bootstrap_mean_interval};
use crate::record::Outcome;

/// One dashboard row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DashboardRow {
    pub asset: String,
    /// Run id of the latest recorded run (with both arms) for the current fingerprint.
    pub latest_run: Option<String>,
    /// With-skill minus without-skill, mean of case differences.
    pub lift: Option<f64>,
    pub lift_ci: Option<(f64, f64)>,
    pub lift_cases: usize,
    /// With-skill pass rate of the latest run: the mean over its paired cases of each case's
    /// share of passed attempts (pass and fail verdicts only), in [0, 1].
    pub success_rate: Option<f64>,
    /// With-skill pass rate per model, oldest first, current fingerprint only.
    pub trend: Vec<(String, f64)>,
    /// `low`, `medium`, `high`: maintenance-surface proxy, not value.
    pub risk: String,
    pub risk_detail: String,
    /// `keep`, `rewrite`, `retire`, or `evaluate`.
    pub suggestion: String,
    pub reason: String,
}

fn case_rates(entries: &[&BaselineEntry], arm: &str) -> BTreeMap<String, f64> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for entry in entries.iter().filter(|e| e.arm == arm) {
        if matches!(entry.verdict, Outcome::Pass | Outcome::Fail) {
            let slot = counts.entry(entry.case_id.clone()).or_default();
            slot.1 += 1;
            slot.0 += (entry.verdict == Outcome::Pass) as u64;
        }
    }
    counts
        .into_iter()
        .map(|(case, (p, n))| (case, p as f64 / n as f64))
        .collect()
}

/// Build the dashboard rows.
pub fn dashboard(registry: &Registry, store: &BaselineStore) -> Vec<DashboardRow> {
    registry
        .assets
        .iter()
        .map(|(name, asset)| {
            let entries: Vec<&BaselineEntry> = store
                .assets
                .get(name)
                .map(|a| {
                    a.entries
                        .iter()
                        .filter(|e| e.fingerprint == asset.fingerprint)
                        .collect()
                })
                .unwrap_or_default();
            // Latest run with both arms.
            let mut runs: Vec<(&str, chrono::DateTime<chrono::Utc>)> = entries
                .iter()
                .filter_map(|e| e.run_id.as_deref().map(|r| (r, e.recorded_at)))
                .collect();
            runs.sort_by_key(|run| std::cmp::Reverse(run.1));
            let mut latest_run = None;
            let mut lift = None;
            let mut lift_ci = None;
            let mut lift_cases = 0;
            let mut success_rate = None;
            for (run, _) in &runs {
                let in_run: Vec<&BaselineEntry> = entries
                    .iter()
                    .copied()
                    .filter(|e| e.run_id.as_deref() == Some(run))
                    .collect();
                let with = case_rates(&in_run, "with_skill");
                let without = case_rates(&in_run, "without_skill");
                let differences: Vec<f64> = with
                    .iter()
                    .filter_map(|(case, w)| without.get(case).map(|b| w - b))
                    .collect();
                if differences.is_empty() {
                    continue;
                }
                latest_run = Some(run.to_string());
                lift_cases = differences.len();
                let paired: Vec<f64> = with
                    .iter()
                    .filter(|(case, _)| without.contains_key(*case))
                    .map(|(_, rate)| *rate)
                    .collect();
                success_rate = Some(paired.iter().sum::<f64>() / paired.len() as f64);
                lift = Some(differences.iter().sum::<f64>() / differences.len() as f64);
                lift_ci = bootstrap_mean_interval(
                    &differences,
                    None,
                    4000,
                    42,
                    BootstrapMethod::Percentile,
                )
                .ok()
                .map(|r| (r.percentile.low, r.percentile.high));
                break;
            }
            let mut models: Vec<(String, chrono::DateTime<chrono::Utc>)> = Vec::new();
            for entry in entries.iter().filter(|e| e.arm == "with_skill") {
                match models.iter_mut().find(|(m, _)| m == &entry.model) {
                    Some((_, at)) => *at = (*at).min(entry.recorded_at),
                    None => models.push((entry.model.clone(), entry.recorded_at)),
                }
            }
            models.sort_by_key(|model| model.1);
            let trend: Vec<(String, f64)> = models
                .into_iter()
                .filter_map(|(model, _)| {
                    let in_model: Vec<&BaselineEntry> = entries
                        .iter()
                        .copied()
                        .filter(|e| e.model == model)
                        .collect();
                    let rates = case_rates(&in_model, "with_skill");
                    (!rates.is_empty())
                        .then(|| (model, rates.values().sum::<f64>() / rates.len() as f64))
                })
                .collect();
            let size = surface_size(&asset.surface);
            let scripts = asset.surface.get("scripts").map_or(0, Vec::len);
            let score = size + 2 * scripts;
            let risk = if score <= 5 {
                "low"
            } else if score <= 15 {
                "medium"
            } else {
                "high"
            };
            let dropped = trend
                .windows(2)
                .last()
                .map(|w| (w[0].1 - w[1].1) * 100.0)
                .filter(|d| *d >= 20.0);
            let (suggestion, reason) = match (lift, lift_ci) {
                (None, _) => (
                    "evaluate",
                    "no recorded run with both arms under the current fingerprint".to_string(),
                ),
                (Some(_), Some((_, high))) if high < 0.0 => (
                    "retire",
                    "the lift interval lies below 0: the skill makes results worse".to_string(),
                ),
                (Some(_), _) if dropped.is_some() => (
                    "rewrite",
                    format!(
                        "pass rate fell {:.0} pp at the latest model version",
                        dropped.unwrap_or(0.0)
                    ),
                ),
                (Some(_), Some((low, _))) if low > 0.0 => {
                    ("keep", "the lift interval lies above 0".to_string())
                }
                (Some(estimate), _) if estimate <= 0.0 => (
                    "rewrite",
                    "no positive lift measured (interval includes 0)".to_string(),
                ),
                _ => (
                    "keep",
                    "positive but inconclusive lift; gather more cases".to_string(),
                ),
            };
            DashboardRow {
                asset: name.clone(),
                latest_run,
                lift,
                lift_ci,
                lift_cases,
                success_rate,
                trend,
                risk: risk.to_string(),
                risk_detail: format!("{size} declared surface items, {scripts} scripts"),
                suggestion: suggestion.to_string(),
                reason,
            }
        })
        .collect()
}

/// Terminal rendering.
pub fn to_table(rows: &[DashboardRow]) -> String {
    let mut out = format!(
        "{:<28} {:>22} {:<28} {:<7} {:<9} reason\n",
        "asset", "lift [95% CI] n", "pass-rate trend", "risk*", "suggest†"
    );
    for row in rows {
        let lift = match (row.lift, row.lift_ci) {
            (Some(l), Some((a, b))) => format!(
                "{:+.0}pp [{:+.0},{:+.0}] {}",
                l * 100.0,
                a * 100.0,
                b * 100.0,
                row.lift_cases
            ),
            _ => "-".to_string(),
        };
        let trend = if row.trend.is_empty() {
            "-".to_string()
        } else {
            row.trend
                .iter()
                .map(|(_, r)| format!("{:.0}%", r * 100.0))
                .collect::<Vec<_>>()
                .join(" → ")
        };
        out.push_str(&format!(
            "{:<28} {:>22} {:<28} {:<7} {:<9} {}\n",
            row.asset, lift, trend, row.risk, row.suggestion, row.reason
        ));
    }
    out.push_str(
        "* risk is a maintenance-surface proxy (declared surface size, scripts), not value.\n",
    );
    out.push_str("† suggestions are heuristic, not evidence.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::registry::baseline::{AssetBaseline, EntrySource};
    use crate::features::registry::scan::AssetEntry;
    use chrono::{DateTime, Utc};

    fn entry(arm: &str, case: usize, pass: bool) -> BaselineEntry {
        BaselineEntry {
            fingerprint: "sha256:aa".into(),
            calibre: "v3-agent-skills".into(),
            model: "m1".into(),
            observed_model: None,
            trial_at: None,
            runner: "r".into(),
            case_id: format!("c{case}"),
            eval_set: None,
            arm: arm.into(),
            attempt: 1,
            verdict: if pass { Outcome::Pass } else { Outcome::Fail },
            source: EntrySource::Run,
            run_id: Some("run-1".into()),
            recorded_at: DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap(),
            activated: Some(arm == "with_skill"),
            checks: vec![],
            tool_calls: None,
            tool_call_errors: None,
            reason: None,
            cost_usd: None,
            judge_cost_usd: None,
        }
    }

    fn registry_with(name: &str) -> Registry {
        let mut registry = Registry::new("h");
        let asset: AssetEntry = serde_json::from_value(serde_json::json!({
            "kind": "skill", "path": "/a", "manifest": "SKILL.md", "description": "",
            "version": null, "fingerprint": "sha256:aa", "calibre": "v3-agent-skills",
            "fingerprint_files": 1, "fingerprint_bytes": 1,
            "surface": {"scripts": ["a.py", "b.py"], "tools": ["Read"]},
            "first_seen": "2026-01-01T00:00:00Z", "fingerprint_since": "2026-01-01T00:00:00Z"}))
        .unwrap();
        registry.assets.insert(name.into(), asset);
        registry.assets.insert("never-run".into(), {
            let mut other = registry.assets[name].clone();
            other.surface.clear();
            other
        });
        registry
    }

    #[test]
    fn positive_lift_keeps_negative_retires_and_unrun_is_evaluate() {
        let mut store = BaselineStore::default();
        let good: Vec<BaselineEntry> = (0..10)
            .flat_map(|c| {
                [
                    entry("with_skill", c, true),
                    entry("without_skill", c, false),
                ]
            })
            .collect();
        store
            .assets
            .insert("s".into(), AssetBaseline { entries: good });
        let rows = dashboard(&registry_with("s"), &store);
        let s = rows.iter().find(|r| r.asset == "s").unwrap();
        assert_eq!(s.lift, Some(1.0));
        assert_eq!(s.success_rate, Some(1.0));
        assert_eq!(s.suggestion, "keep");
        assert_eq!(s.trend, vec![("m1".to_string(), 1.0)]);
        assert_eq!(s.risk, "medium");
        let never = rows.iter().find(|r| r.asset == "never-run").unwrap();
        assert_eq!(never.suggestion, "evaluate");
        assert_eq!(never.risk, "low");
        let bad: Vec<BaselineEntry> = (0..10)
            .flat_map(|c| {
                [
                    entry("with_skill", c, false),
                    entry("without_skill", c, true),
                ]
            })
            .collect();
        store
            .assets
            .insert("s".into(), AssetBaseline { entries: bad });
        let rows = dashboard(&registry_with("s"), &store);
        assert_eq!(
            rows.iter().find(|r| r.asset == "s").unwrap().suggestion,
            "retire"
        );
        assert!(to_table(&rows).contains("heuristic"));
    }
}
