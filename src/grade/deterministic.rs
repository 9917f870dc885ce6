//! TEMPORARY stand-in until the `metrics` branch lands (replaced wholesale at merge).
use crate::evalset::GoldenCase;
use crate::grade::metric::{MetricContext, MetricResult, MetricSource};
use crate::trajectory::Trajectory;

fn pending() -> MetricResult {
    MetricResult::from_sub_scores(MetricSource::Deterministic, Default::default())
}
pub fn security(_: &GoldenCase, _: &Trajectory, _: &MetricContext<'_>) -> MetricResult {
    pending()
}
pub fn skill_execution(_: &GoldenCase, _: &Trajectory, _: &MetricContext<'_>) -> MetricResult {
    pending()
}
pub fn skill_efficiency(_: &GoldenCase, _: &Trajectory, _: &MetricContext<'_>) -> MetricResult {
    pending()
}
