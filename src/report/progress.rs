//! Progress of a run on stderr: an indicatif bar on a terminal, or plain status lines every N
//! seconds where stderr is a log (a pipe, a file, a CI job), so a long run is never silent.
//!
//! [`ProgressDisplay::choose`] turns `--progress never|auto|always`, `--quiet` and the terminal
//! into one display; [`Progress`] is fed by whoever owns the run's events (the scheduler's
//! recorder loop) with the trials done and the running lift, and owns nothing else. Status lines
//! come from a small thread of their own, so a line appears on time even while no trial
//! finishes.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// `--progress`: whether and how a run shows progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ProgressMode {
    /// No progress output.
    Never,
    /// A bar on a terminal; status lines every interval when stderr is not a terminal or `CI`
    /// is set; nothing with `--quiet`.
    #[default]
    Auto,
    /// Status lines every interval, even on a terminal and with `--quiet` (for logs captured
    /// through a pseudo-terminal).
    Always,
}

/// The default seconds between two status lines.
pub(crate) const DEFAULT_LINE_INTERVAL_S: f64 = 15.0;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ProgressDisplay {
    /// Nothing.
    Hidden,
    /// An indicatif bar (redrawn in place).
    Bar,
    /// One status line per interval; `label` (a matrix cell's `runner · model`) opens each
    /// line, so lines of cells running at once can be told apart. (`&'static`: the display is
    /// `Copy`; a label is made once per cell with [`ProgressDisplay::labelled`].)
    Lines {
        interval: Duration,
        label: Option<&'static str>,
    },
}

impl ProgressDisplay {
    /// The display for `mode` with `--quiet`, given whether stderr is an interactive terminal.
    pub(crate) fn choose(
        mode: ProgressMode,
        quiet: bool,
        interactive: bool,
        interval: Duration,
    ) -> Self {
        match mode {
            ProgressMode::Never => ProgressDisplay::Hidden,
            ProgressMode::Always => ProgressDisplay::Lines {
                interval,
                label: None,
            },
            ProgressMode::Auto if quiet => ProgressDisplay::Hidden,
            ProgressMode::Auto if interactive => ProgressDisplay::Bar,
            ProgressMode::Auto => ProgressDisplay::Lines {
                interval,
                label: None,
            },
        }
    }

    /// The same display with status lines opened by `label` (a matrix cell's name); a bar or
    /// nothing stays as it is. The label is leaked once (a handful of cells per process).
    pub(crate) fn labelled(self, label: String) -> Self {
        match self {
            ProgressDisplay::Lines { interval, .. } => ProgressDisplay::Lines {
                interval,
                label: Some(Box::leak(label.into_boxed_str())),
            },
            other => other,
        }
    }

    /// Whether stderr is an interactive terminal: a terminal, and `CI` is not set.
    pub(crate) fn stderr_is_interactive() -> bool {
        std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
    }
}

/// What a status line reports.
#[derive(Debug, Clone)]
struct LineState {
    total: u64,
    done: u64,
    /// Trials already done when this invocation started (a resumed run): not in the rate.
    done_at_start: u64,
    started: Instant,
    message: String,
    /// Opens the line (a matrix cell's `runner · model`).
    label: Option<&'static str>,
}

impl LineState {
    /// `skill-lift: 37/96 trials (38%) · lift +12.5 pp over 12 cases · 1m05s elapsed · ETA 1m40s`
    fn line(&self, now: Instant) -> String {
        let elapsed = now.duration_since(self.started);
        let percent = if self.total == 0 {
            100.0
        } else {
            self.done as f64 * 100.0 / self.total as f64
        };
        let finished_here = self.done.saturating_sub(self.done_at_start);
        let remaining = self.total.saturating_sub(self.done);
        let eta = if remaining == 0 {
            "ETA 0s".to_string()
        } else if finished_here == 0 {
            "ETA unknown (no trial finished yet)".to_string()
        } else {
            let per_trial = elapsed.as_secs_f64() / finished_here as f64;
            format!(
                "ETA {}",
                format_duration(Duration::from_secs_f64(per_trial * remaining as f64))
            )
        };
        format!(
            "skill-lift: {}{}/{} trials ({percent:.0}%) · {} · {} elapsed · {eta}",
            self.label
                .map(|label| format!("[{label}] "))
                .unwrap_or_default(),
            self.done,
            self.total,
            self.message,
            format_duration(elapsed)
        )
    }
}

/// `1h02m03s`, `4m05s`, `7s`.
pub(crate) fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if hours > 0 {
        format!("{hours}h{minutes:02}m{seconds:02}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds:02}s")
    } else {
        format!("{seconds}s")
    }
}

/// The status-line thread: prints a line every interval until stopped.
struct LineReporter {
    state: Arc<Mutex<LineState>>,
    stop: std::sync::mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A run's progress display.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    lines: Option<LineReporter>,
}

impl Progress {
    /// Start showing the progress of `total` trials of which `done` are already recorded.
    pub(crate) fn start(display: ProgressDisplay, total: u64, done: u64, message: String) -> Self {
        match display {
            ProgressDisplay::Hidden => Self {
                bar: None,
                lines: None,
            },
            ProgressDisplay::Bar => {
                let bar = ProgressBar::with_draw_target(
                    Some(total),
                    ProgressDrawTarget::stderr_with_hz(8),
                );
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials  {msg}",
                    )
                    .expect("valid template"),
                );
                bar.set_position(done);
                bar.set_message(crate::disk::redact::redact_text(&message).into_owned());
                Self {
                    bar: Some(bar),
                    lines: None,
                }
            }
            ProgressDisplay::Lines { interval, label } => {
                let state = Arc::new(Mutex::new(LineState {
                    total,
                    done,
                    done_at_start: done,
                    started: Instant::now(),
                    message,
                    label,
                }));
                let (stop, stopped) = std::sync::mpsc::channel::<()>();
                let shared = Arc::clone(&state);
                let interval = interval.max(Duration::from_millis(10));
                let thread = std::thread::Builder::new()
                    .name("skill-lift-progress".to_string())
                    .spawn(move || {
                        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                            stopped.recv_timeout(interval)
                        {
                            let line = match shared.lock() {
                                Ok(state) => state.line(Instant::now()),
                                Err(_) => break,
                            };
                            crate::errln!("{line}");
                        }
                    })
                    .ok();
                Self {
                    bar: None,
                    lines: Some(LineReporter {
                        state,
                        stop,
                        thread,
                    }),
                }
            }
        }
    }

    /// `count` more trials are done; `message` is the running lift.
    pub(crate) fn advance(&self, count: u64, message: String) {
        if let Some(bar) = &self.bar {
            bar.inc(count);
            // The bar draws itself, outside the terminal writer: its message is redacted here.
            bar.set_message(crate::disk::redact::redact_text(&message).into_owned());
        } else if let Some(lines) = &self.lines
            && let Ok(mut state) = lines.state.lock()
        {
            state.done += count;
            state.message = message;
        }
    }

    /// Stop: the bar is cleared, the line thread ends (no further line). Also on drop.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if let Some(mut lines) = self.lines.take() {
            let _ = lines.stop.send(());
            if let Some(thread) = lines.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_follows_mode_quiet_and_terminal() {
        let interval = Duration::from_secs(15);
        let lines = ProgressDisplay::Lines {
            interval,
            label: None,
        };
        use ProgressMode::*;
        assert_eq!(
            ProgressDisplay::choose(Auto, false, true, interval),
            ProgressDisplay::Bar
        );
        assert_eq!(ProgressDisplay::choose(Auto, false, false, interval), lines);
        assert_eq!(
            ProgressDisplay::choose(Auto, true, false, interval),
            ProgressDisplay::Hidden
        );
        assert_eq!(
            ProgressDisplay::choose(Never, false, false, interval),
            ProgressDisplay::Hidden
        );
        assert_eq!(ProgressDisplay::choose(Always, true, true, interval), lines);
    }

    #[test]
    fn status_line_has_done_total_lift_and_eta() {
        let started = Instant::now();
        let state = LineState {
            total: 100,
            done: 30,
            done_at_start: 10,
            started,
            message: "lift +12.5 pp over 8 cases".to_string(),
            label: None,
        };
        // 20 trials in 40 s: 2 s each, 70 left: 140 s.
        let line = state.line(started + Duration::from_secs(40));
        assert_eq!(
            line,
            "skill-lift: 30/100 trials (30%) · lift +12.5 pp over 8 cases · 40s elapsed · ETA 2m20s"
        );
        let fresh = LineState {
            done: 10,
            ..state.clone()
        };
        assert!(
            fresh.line(started).contains("ETA unknown"),
            "{}",
            fresh.line(started)
        );
        let all = LineState {
            done: 100,
            ..state.clone()
        };
        assert!(all.line(started).ends_with("ETA 0s"));
        // A matrix cell's lines name the cell.
        let cell = LineState {
            label: Some("local · qwen"),
            ..state
        };
        assert!(
            cell.line(started + Duration::from_secs(40))
                .starts_with("skill-lift: [local · qwen] 30/100 trials (30%)"),
            "{}",
            cell.line(started)
        );
        assert_eq!(
            ProgressDisplay::Bar.labelled("x".to_string()),
            ProgressDisplay::Bar
        );
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(Duration::from_secs(7)), "7s");
        assert_eq!(format_duration(Duration::from_secs(245)), "4m05s");
        assert_eq!(format_duration(Duration::from_secs(3723)), "1h02m03s");
    }
}
