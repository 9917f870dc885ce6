//! Exporters: pure functions from an analyzed run (its manifest, its [`Summary`] and its trial
//! records) to bytes, one module per format. Writing files is the caller's job:
//! [`write_exports`] writes the chosen formats atomically into one folder, and [`export_run`]
//! analyzes a run folder and exports it in one streaming pass over `trials.jsonl` (records are
//! held in memory only when a selected format needs them: `html`, `junit`, `benchmark-json`;
//! when only the summary formats are selected, each line is decoded as the analysis's borrowed
//! view of it, `crate::record::TrialView`, not as a whole record).
//!
//! Every format is a function of the recorded run only, with no clock and no random input, so
//! `skill-lift report` re-renders byte-identical files. Formats are documented in
//! `docs/report-formats.md`. The one live export, [`trace_export`] (OpenTelemetry spans of the
//! trials as they finish, `docs/tracing.md`), is fed by the scheduler instead.

pub(crate) mod compare;
pub(crate) mod compat;
pub(crate) mod csv_export;
pub(crate) mod html;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod matrix;
pub(crate) mod object_out;
pub(crate) mod progress;
pub(crate) mod publish;
#[cfg(test)]
mod snapshot_tests;
pub(crate) mod step_summary;
pub(crate) mod tables;
pub(crate) mod trace_export;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::analysis::{AnalysisSettings, RunAccumulator, Summary};
use crate::disk::redact::RedactingWriter;
use crate::disk::{temp_file_in, write_atomic};
use crate::record::{
    Manifest, RecordError, TranscriptReader, TrialRecord, for_each_planned_trial,
    for_each_planned_view,
};

/// One analyzed run: everything an exporter may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunExport<'a> {
    pub manifest: &'a Manifest,
    pub summary: &'a Summary,
    pub records: &'a [TrialRecord],
    /// Trial ids whose transcript is missing from the run folder: `report.html` shows them
    /// without a link to a page (see [`write_transcript_pages`]).
    pub missing_transcripts: &'a BTreeSet<String>,
    /// One sample answer per case and paired arm ([`sample_answers`]), for the per-case tables
    /// of `report.md` and `report.html`; empty when none was read.
    pub answers: &'a [SampleAnswer],
}

/// A case's sample answer in one arm: the trial ([`crate::analysis::SampleTrial`]) and the
/// start of its final answer on one line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SampleAnswer {
    /// The trial shown.
    pub trial: crate::analysis::SampleTrial,
    /// Its final answer, whitespace collapsed, at most [`SAMPLE_ANSWER_CHARS`] characters
    /// (`…` when cut); `None` when its transcript could not be read or holds no answer.
    pub answer: Option<String>,
}

/// Characters of a sample answer shown in the per-case tables.
pub(crate) const SAMPLE_ANSWER_CHARS: usize = 120;

/// The sample answers of `samples`, read from the run's transcripts (a transcript that cannot
/// be read shows no answer; the trial page says why).
pub(crate) fn sample_answers(
    run_dir: &Path,
    samples: Vec<crate::analysis::SampleTrial>,
) -> Vec<SampleAnswer> {
    let mut reader = TranscriptReader::new(run_dir);
    samples
        .into_iter()
        .map(|trial| {
            let answer = reader
                .read_at(
                    &trial.trial_id,
                    trial.transcript.as_deref(),
                    trial.transcript_span,
                )
                .ok()
                .flatten()
                .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
                .and_then(|document| {
                    document["trajectory"]["final_answer"]
                        .as_str()
                        .map(one_line_excerpt)
                });
            SampleAnswer { trial, answer }
        })
        .collect()
}

/// `text` with its whitespace collapsed to single spaces, cut to [`SAMPLE_ANSWER_CHARS`].
fn one_line_excerpt(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= SAMPLE_ANSWER_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(SAMPLE_ANSWER_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// An export format, named as on the command line (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Format {
    /// `summary.json`
    SummaryJson,
    /// `trials.csv`
    TrialsCsv,
    /// `cases.csv`
    CasesCsv,
    /// `lift.csv`
    LiftCsv,
    /// `report.md`
    Markdown,
    /// `report.html` plus `transcripts/*.html` (the transcript pages are rendered by
    /// `skill-lift report`, `regrade` and `merge`; `run` leaves them to `report`)
    Html,
    /// `junit.xml`
    Junit,
    /// skill-creator's `benchmark.json`
    Benchmark,
    /// ACES-style `lift.json`
    LiftJson,
    /// ACES-style `pass_at_k_lift.json`
    PassAtKLiftJson,
}

impl Format {
    /// Every format, in the order they are written.
    pub(crate) const ALL: [Format; 10] = [
        Format::SummaryJson,
        Format::TrialsCsv,
        Format::CasesCsv,
        Format::LiftCsv,
        Format::Markdown,
        Format::Html,
        Format::Junit,
        Format::Benchmark,
        Format::LiftJson,
        Format::PassAtKLiftJson,
    ];

    /// The name used by `--format`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::SummaryJson => "summary-json",
            Format::TrialsCsv => "trials-csv",
            Format::CasesCsv => "cases-csv",
            Format::LiftCsv => "lift-csv",
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Junit => "junit",
            Format::Benchmark => "benchmark-json",
            Format::LiftJson => "lift-json",
            Format::PassAtKLiftJson => "pass-at-k-lift-json",
        }
    }

    /// The file the format is written to, relative to the output folder.
    pub(crate) fn file_name(self) -> &'static str {
        match self {
            Format::SummaryJson => "summary.json",
            Format::TrialsCsv => "trials.csv",
            Format::CasesCsv => "cases.csv",
            Format::LiftCsv => "lift.csv",
            Format::Markdown => "report.md",
            Format::Html => "report.html",
            Format::Junit => "junit.xml",
            Format::Benchmark => "benchmark.json",
            Format::LiftJson => "lift.json",
            Format::PassAtKLiftJson => "pass_at_k_lift.json",
        }
    }
}

impl FromStr for Format {
    type Err = crate::values::unknown_name::UnknownName;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == value || f.file_name() == value)
            .ok_or_else(|| {
                let names = Format::ALL.iter().map(|f| f.name()).chain(["all"]);
                crate::values::unknown_name::UnknownName::new("format", value, names)
            })
    }
}

/// `summary.json`: the [`Summary`], pretty-printed, with a trailing newline.
pub(crate) fn summary_json(summary: &Summary) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(summary).expect("summary serializes");
    bytes.push(b'\n');
    bytes
}

impl Format {
    /// Whether rendering needs every trial record in memory (the others need only the summary,
    /// and `trials.csv` is streamed).
    pub(crate) fn needs_records(self) -> bool {
        matches!(self, Format::Html | Format::Junit | Format::Benchmark)
    }
}

/// Analyze the run in `run_dir` and write `formats` into `out_dir`, streaming `trials.jsonl`
/// once: every record feeds the analysis accumulator and, when selected, a `trials.csv` row;
/// records are kept only when a selected format [needs them](Format::needs_records). With
/// `transcript_pages` and [`Format::Html`], each transcript is also rendered to HTML. Returns
/// the summary and the paths written.
pub(crate) fn export_run(
    run_dir: &Path,
    out_dir: &Path,
    manifest: &Manifest,
    settings: &AnalysisSettings,
    formats: &[Format],
    transcript_pages: bool,
) -> Result<(Summary, Vec<PathBuf>), RecordError> {
    let trials = run_dir.join("trials.jsonl");
    if !formats
        .iter()
        .any(|f| f.needs_records() || *f == Format::TrialsCsv)
    {
        // Only the summary is exported: each line is decoded as the analysis's view of it,
        // without building whole records.
        let (accumulator, _) = for_each_planned_view(
            &trials,
            manifest,
            || RunAccumulator::new(manifest),
            |accumulator, record| {
                accumulator.add_view(record);
                Ok(())
            },
        )?;
        return finish_exports(
            run_dir,
            out_dir,
            settings,
            formats,
            transcript_pages,
            accumulator,
            &[],
            Vec::new(),
        );
    }
    export_from(
        run_dir,
        out_dir,
        manifest,
        settings,
        formats,
        transcript_pages,
        |visit| for_each_planned_trial(&trials, manifest, visit).map(|_| ()),
    )
}

/// [`export_run`] from records already in memory (the run's dispatcher during a run: its
/// periodic exports never re-read `trials.jsonl`). `records` are the run's current records, one
/// per planned trial (superseded ones left out). No transcript pages are written.
pub(crate) fn export_records<'a>(
    out_dir: &Path,
    manifest: &Manifest,
    settings: &AnalysisSettings,
    formats: &[Format],
    records: impl IntoIterator<Item = &'a TrialRecord>,
) -> Result<(Summary, Vec<PathBuf>), RecordError> {
    export_from(
        out_dir,
        out_dir,
        manifest,
        settings,
        formats,
        false,
        |visit| records.into_iter().cloned().try_for_each(visit),
    )
}

/// The one export path: `source` hands every record to its visitor once.
fn export_from(
    run_dir: &Path,
    out_dir: &Path,
    manifest: &Manifest,
    settings: &AnalysisSettings,
    formats: &[Format],
    transcript_pages: bool,
    source: impl FnOnce(
        &mut dyn FnMut(TrialRecord) -> Result<(), RecordError>,
    ) -> Result<(), RecordError>,
) -> Result<(Summary, Vec<PathBuf>), RecordError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source: std::io::Error| RecordError::Io { path, source }
    };
    let keep_records = formats.iter().any(|f| f.needs_records());
    let trials_csv_path = out_dir.join(Format::TrialsCsv.file_name());
    let mut trials_csv = if formats.contains(&Format::TrialsCsv) {
        let temp = temp_file_in(out_dir)?;
        // Streamed rows pass the redaction boundary line by line.
        Some(csv_export::TrialsCsvWriter::new(RedactingWriter::new(
            std::io::BufWriter::with_capacity(1 << 20, temp),
        )))
    } else {
        None
    };
    let mut accumulator = RunAccumulator::new(manifest);
    let mut records = Vec::new();
    // Only records of the run's own plan are analyzed (file:line errors otherwise).
    source(&mut |record| {
        accumulator.add(&record);
        if let Some(writer) = trials_csv.as_mut() {
            writer.write(&record).map_err(io(&trials_csv_path))?;
        }
        if keep_records {
            records.push(record);
        }
        Ok(())
    })?;
    let mut written = Vec::new();
    if let Some(writer) = trials_csv {
        let redacting = writer.into_inner().map_err(io(&trials_csv_path))?;
        let buffered = redacting.finish().map_err(io(&trials_csv_path))?;
        let temp = buffered
            .into_inner()
            .map_err(|e| io(&trials_csv_path)(e.into_error()))?;
        temp.as_file().sync_data().map_err(io(&trials_csv_path))?;
        crate::disk::persist(temp, &trials_csv_path)?;
        written.push(trials_csv_path);
    }
    finish_exports(
        run_dir,
        out_dir,
        settings,
        formats,
        transcript_pages,
        accumulator,
        &records,
        written,
    )
}

/// The end of an export: the summary of `accumulator`, and every format but `trials.csv`
/// (already `written`) rendered from it and `records` (those [needed](Format::needs_records)).
#[allow(clippy::too_many_arguments)]
fn finish_exports(
    run_dir: &Path,
    out_dir: &Path,
    settings: &AnalysisSettings,
    formats: &[Format],
    transcript_pages: bool,
    accumulator: RunAccumulator,
    records: &[TrialRecord],
    mut written: Vec<PathBuf>,
) -> Result<(Summary, Vec<PathBuf>), RecordError> {
    let manifest = accumulator.manifest();
    let answers = if formats
        .iter()
        .any(|f| matches!(f, Format::Markdown | Format::Html))
    {
        sample_answers(run_dir, accumulator.samples())
    } else {
        Vec::new()
    };
    let summary = accumulator.finish(settings);
    // The pages first: report.html links only to pages that exist.
    let missing_transcripts = if transcript_pages && formats.contains(&Format::Html) {
        write_transcript_pages(run_dir, out_dir, records)?
    } else {
        BTreeSet::new()
    };
    let run = RunExport {
        manifest,
        summary: &summary,
        records,
        missing_transcripts: &missing_transcripts,
        answers: &answers,
    };
    let others: Vec<Format> = formats
        .iter()
        .copied()
        .filter(|f| *f != Format::TrialsCsv)
        .collect();
    written.extend(write_export_files(out_dir, &run, &others)?);
    written.sort_by_key(|path| {
        Format::ALL
            .iter()
            .position(|f| path.file_name().is_some_and(|n| n == f.file_name()))
            .unwrap_or(usize::MAX)
    });
    Ok((summary, written))
}

/// Render one format of a run to bytes.
pub(crate) fn render(format: Format, run: &RunExport) -> Vec<u8> {
    match format {
        Format::SummaryJson => summary_json(run.summary),
        Format::TrialsCsv => csv_export::trials_csv(run.records),
        Format::CasesCsv => csv_export::cases_csv(run.summary),
        Format::LiftCsv => csv_export::lift_csv(run.summary),
        Format::Markdown => {
            let mut text = markdown::summary_markdown(run.summary);
            text.push_str(&markdown::case_table(run.summary, run.answers));
            text.into_bytes()
        }
        Format::Html => html::report_html(run).into_bytes(),
        Format::Junit => junit::junit_xml(run),
        Format::Benchmark => compat::benchmark_json(run),
        Format::LiftJson => compat::lift_json(run.summary),
        Format::PassAtKLiftJson => compat::pass_at_k_lift_json(run.summary),
    }
}

/// The HTML rendering path of a transcript in its own file (`transcripts/x.json` →
/// `transcripts/x.html`).
pub(crate) fn transcript_html_path(transcript: &str) -> String {
    match transcript.strip_suffix(".json") {
        Some(stem) => format!("{stem}.html"),
        None => format!("{transcript}.html"),
    }
}

/// The HTML page of a trial's transcript, relative to the report folder, when it has one:
/// `transcripts/<case>.<arm>.<attempt>.html` for a transcript in the run's transcript log, the
/// transcript file's path ending in `.html` for one in its own file (older run folders; the
/// same name for the trials `run` writes).
pub(crate) fn transcript_page(record: &TrialRecord) -> Option<String> {
    let relative = record.transcript.as_ref()?;
    Some(match record.transcript_span {
        Some(_) => transcript_html_path(&record.key().transcript_path()),
        None => transcript_html_path(relative),
    })
}

/// Write `formats` of a run into `out_dir` atomically, without the transcript pages (the cheap
/// part of [`write_exports`], used for the periodic exports during a run).
pub(crate) fn write_export_files(
    out_dir: &Path,
    run: &RunExport,
    formats: &[Format],
) -> Result<Vec<PathBuf>, RecordError> {
    let mut written = Vec::new();
    for &format in formats {
        let path = out_dir.join(format.file_name());
        write_atomic(&path, &render(format, run))?;
        written.push(path);
    }
    Ok(written)
}

/// Render every recorded transcript of `records` (from the run's transcript log, or from
/// their own files in older run folders) to an HTML page beside `report.html`. The pages are
/// derived (re-rendered by every `report`): each is written to a temporary file and renamed
/// into place, without an fsync of its own. A transcript whose file is missing gets no page
/// and a warning naming the file; returns the trial ids of those.
fn write_transcript_pages(
    run_dir: &Path,
    out_dir: &Path,
    records: &[TrialRecord],
) -> Result<BTreeSet<String>, RecordError> {
    // Only regular files under the run's `transcripts/` are read (no `..`, absolute path,
    // symbolic link or device), and at most `MAX_RUN_FILE_BYTES` per transcript.
    let mut reader = TranscriptReader::new(run_dir);
    let mut folders = std::collections::HashSet::new();
    let mut missing = BTreeSet::new();
    // Missing files, each with how many trials' transcripts it held.
    let mut missing_files: std::collections::BTreeMap<&str, usize> = Default::default();
    for record in records {
        let Some(page) = transcript_page(record) else {
            continue;
        };
        let document: serde_json::Value = match reader.read(record)? {
            Some(bytes) => match serde_json::from_slice(&bytes) {
                Ok(document) => document,
                Err(error) => {
                    // Rendered without its events, and said so, naming the file.
                    crate::values::reporter::report(crate::values::reporter::Event::warning_at(
                        run_dir.join(record.transcript.as_deref().unwrap_or("")),
                        format!(
                            "the transcript of {} is not valid JSON ({error}); its page shows no events",
                            record.trial_id
                        ),
                    ));
                    serde_json::Value::Null
                }
            },
            None => {
                missing.insert(record.trial_id.clone());
                if let Some(file) = record.transcript.as_deref() {
                    *missing_files.entry(file).or_default() += 1;
                }
                continue;
            }
        };
        let target = crate::record::path_inside(out_dir, &page)?;
        if let Some(parent) = target.parent()
            && folders.insert(parent.to_path_buf())
        {
            std::fs::create_dir_all(parent).map_err(|source| RecordError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        write_derived(&target, html::transcript_html(record, &document).as_bytes())?;
    }
    for (file, trials) in missing_files {
        crate::values::reporter::report(crate::values::reporter::Event::warning_at(
            run_dir.join(file),
            format!(
                "missing; the transcripts of {trials} trial(s) it held are not rendered (report.html lists those trials without a link)"
            ),
        ));
    }
    Ok(missing)
}

/// Write a derived file (re-rendered by the next `report`): a temporary file renamed into
/// place, through the redaction boundary, without an fsync ([`crate::disk::write_derived`]).
fn write_derived(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    Ok(crate::disk::write_derived(path, bytes)?)
}
