//! The quality contract a skill or its eval set declares: `contract.toml` beside the eval set
//! (by default `<skill>/evals/contract.toml`), its `[quality]` table read strictly into
//! [`QualityBounds`] (docs/running.md "Quality contract"). The run records the bounds in its
//! manifest; `crate::analysis::quality` checks them against the run.
//!
//! ```toml
//! [quality]
//! min_pass_rate = 0.8            # with_skill pass rate, a fraction
//! max_p95_wall_s = 20            # 95th percentile of with_skill's trial wall time, seconds
//! max_tokens_per_trial = 30000   # mean input + output tokens per with_skill trial
//! max_cost_usd_per_trial = 0.05  # mean cost per with_skill trial, USD
//! max_unscoreable = 0.05         # unscoreable trials over every trial of the run
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::record::{QualityBounds, QualityContract};

/// The contract file's name.
pub(crate) const CONTRACT_FILE: &str = "contract.toml";

/// A `contract.toml` that cannot be used (each names the file).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ContractError {
    /// The file exists but cannot be read.
    #[error("{path}: cannot read the contract: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not valid TOML, an unknown key or table, or a value of the wrong type (toml's message
    /// names the key and the line).
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A bound outside its range.
    #[error("{path}: [quality] {key} = {value}: {expected}")]
    OutOfRange {
        path: PathBuf,
        key: &'static str,
        value: f64,
        expected: &'static str,
    },
    /// A `[quality]` table with no bound in it.
    #[error(
        "{path}: the [quality] table declares no bound (known: min_pass_rate, max_p95_wall_s, max_tokens_per_trial, max_cost_usd_per_trial, max_unscoreable)"
    )]
    Empty { path: PathBuf },
}

/// The file as written: tables known so far.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContractFile {
    quality: Option<QualityBounds>,
}

/// The `contract.toml` that applies to an eval set at `eval_path` of the skill in `skill_dir`:
/// the one beside the eval set (inside it for a task folder), else the skill's
/// `evals/contract.toml`; `None` when neither exists.
pub(crate) fn contract_path(eval_path: &Path, skill_dir: &Path) -> Option<PathBuf> {
    let beside = if eval_path.is_dir() {
        eval_path.join(CONTRACT_FILE)
    } else {
        eval_path
            .parent()
            .unwrap_or(Path::new("."))
            .join(CONTRACT_FILE)
    };
    let skills = skill_dir.join("evals").join(CONTRACT_FILE);
    [beside, skills].into_iter().find(|p| p.is_file())
}

/// Read the quality contract at `path` (strictly: unknown tables and keys are errors naming the
/// file and the key). `None` when the file declares no `[quality]` table.
pub(crate) fn load_contract(path: &Path) -> Result<Option<QualityContract>, ContractError> {
    let text = std::fs::read_to_string(path).map_err(|source| ContractError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file: ContractFile = toml::from_str(&text).map_err(|e| ContractError::Parse {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().replace('\n', " "),
    })?;
    let Some(bounds) = file.quality else {
        return Ok(None);
    };
    validate(path, &bounds)?;
    Ok(Some(QualityContract {
        path: path.to_path_buf(),
        bounds,
    }))
}

fn validate(path: &Path, bounds: &QualityBounds) -> Result<(), ContractError> {
    let fraction = "a fraction in [0, 1]";
    let positive = "a positive number";
    let checks: [(&'static str, Option<f64>, &'static str); 5] = [
        ("min_pass_rate", bounds.min_pass_rate, fraction),
        ("max_p95_wall_s", bounds.max_p95_wall_s, positive),
        (
            "max_tokens_per_trial",
            bounds.max_tokens_per_trial,
            positive,
        ),
        (
            "max_cost_usd_per_trial",
            bounds.max_cost_usd_per_trial,
            positive,
        ),
        ("max_unscoreable", bounds.max_unscoreable, fraction),
    ];
    if checks.iter().all(|(_, value, _)| value.is_none()) {
        return Err(ContractError::Empty {
            path: path.to_path_buf(),
        });
    }
    for (key, value, expected) in checks {
        let Some(value) = value else { continue };
        let valid = if expected == fraction {
            (0.0..=1.0).contains(&value)
        } else {
            value.is_finite() && value > 0.0
        };
        if !valid {
            return Err(ContractError::OutOfRange {
                path: path.to_path_buf(),
                key,
                value,
                expected,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Option<QualityContract>, ContractError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONTRACT_FILE);
        std::fs::write(&path, text).unwrap();
        load_contract(&path)
    }

    #[test]
    fn every_bound_reads() {
        let contract = load(
            "[quality]\nmin_pass_rate = 0.8\nmax_p95_wall_s = 20\nmax_tokens_per_trial = 30000\nmax_cost_usd_per_trial = 0.05\nmax_unscoreable = 0.05\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(contract.bounds.min_pass_rate, Some(0.8));
        assert_eq!(contract.bounds.max_p95_wall_s, Some(20.0));
        assert_eq!(contract.bounds.max_tokens_per_trial, Some(30000.0));
        assert_eq!(contract.bounds.max_cost_usd_per_trial, Some(0.05));
        assert_eq!(contract.bounds.max_unscoreable, Some(0.05));
        assert!(load("# nothing yet\n").unwrap().is_none());
    }

    #[test]
    fn unknown_keys_and_tables_name_the_file_and_the_key() {
        let error = load("[quality]\nmax_p95_latency = 20\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("contract.toml") && error.contains("max_p95_latency"),
            "{error}"
        );
        let error = load("[qualty]\nmin_pass_rate = 0.8\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("qualty"), "{error}");
        let error = load("[quality]\nmin_pass_rate = \"80%\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("min_pass_rate") || error.contains("80%"),
            "{error}"
        );
    }

    #[test]
    fn out_of_range_and_empty_contracts_are_refused() {
        let error = load("[quality]\nmin_pass_rate = 80\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("min_pass_rate = 80") && error.contains("[0, 1]"),
            "{error}"
        );
        let error = load("[quality]\nmax_p95_wall_s = 0\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("positive"), "{error}");
        let error = load("[quality]\n").unwrap_err().to_string();
        assert!(error.contains("declares no bound"), "{error}");
    }
}
