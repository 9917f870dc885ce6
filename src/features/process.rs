//! Running one agent CLI attempt as a child process: its own process group, stdin closed, stdout
//! and stderr drained concurrently while waiting (a chatty child can never block on a full pipe),
//! a wall-clock timeout followed by SIGTERM → grace → SIGKILL of the whole group, and a stop
//! shortly after the agent's final event for CLIs that linger.
//!
//! This module owns mechanics only: it knows nothing about agents or event formats. The caller
//! says which stdout line is the final event and classifies the outcome (`crate::features::runner::agent_cli`);
//! a caller that watches the output while it runs ([`ProcessWatch`]) can also declare the
//! process stalled (an agent retrying a dead API), which stops it like a timeout.
//! After every attempt the whole process tree is killed, so grandchildren that kept the pipes
//! open, outlived the agent or escaped its process group with `setsid` never survive the trial:
//! in the `skill-lift` binary each attempt runs under a supervisor (`crate::features::contain`) that kills
//! every descendant when the attempt ends or skill-lift dies, even by `kill -9`.
//!
//! Output is bounded: at most `ProcessLimits::max_stdout_bytes` of stdout are kept (lines past
//! the cap are dropped, except a short line recognised as the final event) and the last
//! `max_stderr_bytes` of stderr; what was cut is counted in the outcome. Memory stays bounded
//! whatever the child prints, newlines or not.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

/// Default cap on the stdout kept per attempt (16 MiB).
pub(crate) const DEFAULT_MAX_STDOUT_BYTES: usize = 16 * 1024 * 1024;
/// Default size of the stderr tail kept per attempt (64 KiB).
pub(crate) const DEFAULT_MAX_STDERR_BYTES: usize = 64 * 1024;
/// Past the stdout cap, lines up to this long are still read whole, to find the final event.
const FINAL_EVENT_PROBE_BYTES: usize = 1024 * 1024;
/// How long pipes may stay open after the child exited before the group is killed.
const PIPE_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Debug, Clone)]
pub(crate) struct ProcessSpec {
    /// The program (path, or a name looked up in the child's `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Working folder.
    pub cwd: PathBuf,
    /// The child's whole environment (the parent's is cleared).
    pub env: Vec<(String, String)>,
}

/// Time limits of one attempt.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcessLimits {
    /// Wall-clock budget; past it the group gets SIGTERM.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Time a process may keep running after its final event before it is stopped.
    pub linger: Duration,
    /// Bytes of stdout kept at most (see the module documentation).
    pub max_stdout_bytes: usize,
    /// Bytes of stderr kept at most (the tail).
    pub max_stderr_bytes: usize,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessOutcome {
    /// Complete stdout lines (lossy UTF-8, without the newline), in order; a last line without a
    /// newline is included.
    pub stdout_lines: Vec<String>,
    /// The last `max_stderr_bytes` of stderr.
    pub stderr_tail: String,
    /// Bytes of stdout dropped past `max_stdout_bytes` (0 when nothing was cut).
    pub stdout_dropped_bytes: u64,
    /// Bytes of stderr dropped before the kept tail (0 when nothing was cut).
    pub stderr_dropped_bytes: u64,
    /// Exit code when the process exited.
    pub exit_code: Option<i32>,
    /// Signal number when a signal ended it.
    pub signal: Option<i32>,
    /// Whether the timeout fired.
    pub timed_out: bool,
    /// Whether it was stopped because it lingered after its final event.
    pub stopped_after_final_event: bool,
    /// Whether a line recognised as the final event was seen.
    pub final_event_seen: bool,
    /// Whether the caller's [`ProcessWatch`] declared the process stalled, which stopped it.
    pub stalled: bool,
    /// Wall time from spawn to reaping.
    pub wall_s: f64,
}

/// Why a process could not be run at all.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProcessError {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("waiting for `{program}` failed: {source}")]
    Wait {
        program: String,
        source: std::io::Error,
    },
}

/// Send `signal` to the process group `group` (ignoring "no such process").
fn signal_group(group: i32, signal: i32) {
    if group > 0 {
        // SAFETY: killpg only sends a signal; a stale or empty group yields ESRCH, which we ignore.
        unsafe {
            libc::killpg(group, signal);
        }
    }
}

/// Stops the attempt when dropped, so a cancelled attempt (trial timeout in the scheduler,
/// interrupt) never leaves the agent running: a supervised attempt loses its lifeline (the
/// supervisor then kills the whole tree); an unsupervised one gets SIGKILL on its group.
struct GroupGuard {
    group: i32,
    supervised: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.supervised {
            signal_group(self.group, libc::SIGKILL);
        }
        // A supervised child stays registered until reaped (Tokio reaps dropped children): it
        // is still cleaning up its tree and must not be taken for an orphan.
    }
}

/// Where the stop sequence of a process stands.
#[derive(Clone, Copy)]
enum Stop {
    Running,
    Terminating { kill_at: tokio::time::Instant },
    Killed,
}

async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

enum Stream {
    /// A stdout line within the cap.
    Line(String),
    /// A stdout line past the cap: kept only when it is the final event.
    Probe(String),
    /// Stdout bytes dropped past the cap.
    Dropped(u64),
    Stderr(Vec<u8>),
}

/// Read `stdout` into lines, keeping at most `budget` bytes in all; a line is never buffered
/// beyond what the budget (or, past it, the final-event probe) allows.
async fn read_stdout_lines(
    mut stdout: impl tokio::io::AsyncRead + Unpin,
    mut budget: usize,
    sender: mpsc::UnboundedSender<Stream>,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    // Bytes of the current line not kept in `line`.
    let mut line_dropped: u64 = 0;
    let finish = |line: &mut Vec<u8>, dropped: &mut u64, budget: &mut usize| -> Vec<Stream> {
        let mut out = Vec::new();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let text = String::from_utf8_lossy(line).into_owned();
        if *dropped == 0 && line.len() <= *budget {
            *budget -= line.len();
            out.push(Stream::Line(text));
        } else {
            let total = line.len() as u64 + *dropped;
            out.push(Stream::Dropped(total));
            if *dropped == 0 {
                out.push(Stream::Probe(text));
            }
            *budget = 0;
        }
        line.clear();
        *dropped = 0;
        out
    };
    loop {
        let read = match stdout.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut rest = &chunk[..read];
        while !rest.is_empty() {
            let (piece, complete) = match rest.iter().position(|b| *b == b'\n') {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            rest = if complete {
                &rest[piece.len() + 1..]
            } else {
                &[]
            };
            // Keep the piece while the line fits the budget, or (past it) the probe size.
            let room = budget.max(FINAL_EVENT_PROBE_BYTES);
            if line_dropped == 0 && line.len() + piece.len() <= room {
                line.extend_from_slice(piece);
            } else {
                line_dropped += (line.len() + piece.len()) as u64;
                line.clear();
            }
            if complete {
                for item in finish(&mut line, &mut line_dropped, &mut budget) {
                    if sender.send(item).is_err() {
                        return;
                    }
                }
            }
        }
    }
    if !line.is_empty() || line_dropped > 0 {
        for item in finish(&mut line, &mut line_dropped, &mut budget) {
            let _ = sender.send(item);
        }
    }
}

/// What a caller watches in a running process's output ([`run_watched_process`]).
pub(crate) trait ProcessWatch: Send {
    /// Whether this stdout line is the final event.
    fn line(&mut self, line: &str) -> bool;

    /// A chunk of stderr as it arrives.
    fn stderr(&mut self, _bytes: &[u8]) {}

    /// When [`ProcessWatch::stalled`] should next be asked (`None`: not before more output).
    fn next_check(&self) -> Option<tokio::time::Instant> {
        None
    }

    /// Whether the process is stalled at `now`: it is then stopped (SIGTERM, grace, SIGKILL)
    /// and the outcome says `stalled`.
    fn stalled(&mut self, _now: tokio::time::Instant) -> bool {
        false
    }
}

/// A watch that only recognises the final event.
struct FinalEvent<F>(F);

impl<F: FnMut(&str) -> bool + Send> ProcessWatch for FinalEvent<F> {
    fn line(&mut self, line: &str) -> bool {
        (self.0)(line)
    }
}

/// Run `spec` to the end under `limits`. `is_final` is asked about each stdout line.
pub(crate) async fn run_process(
    spec: &ProcessSpec,
    limits: ProcessLimits,
    is_final: impl FnMut(&str) -> bool + Send,
) -> Result<ProcessOutcome, ProcessError> {
    run_watched_process(spec, limits, &mut FinalEvent(is_final)).await
}

/// Run `spec` to the end under `limits`, with `watch` reading its output as it arrives.
pub(crate) async fn run_watched_process(
    spec: &ProcessSpec,
    limits: ProcessLimits,
    watch: &mut dyn ProcessWatch,
) -> Result<ProcessOutcome, ProcessError> {
    let program = spec.program.display().to_string();
    let started = Instant::now();
    let supervisor = crate::features::contain::supervisor_exe();
    let mut command = match supervisor {
        Some(exe) => {
            // Report a missing program as a spawn error, as an unsupervised spawn would.
            let path_variable = spec
                .env
                .iter()
                .rev()
                .find(|(name, _)| name == "PATH")
                .map(|(_, value)| value.as_str());
            if crate::features::contain::resolve_program(&spec.program, path_variable, &spec.cwd)
                .is_none()
            {
                return Err(ProcessError::Spawn {
                    program,
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no such executable (looked up in the child's PATH)",
                    ),
                });
            }
            let mut command = tokio::process::Command::new(exe);
            command
                .arg(crate::features::contain::SUPERVISOR_ARG)
                .arg(&spec.program)
                // The lifeline: only skill-lift holds the write end.
                .stdin(Stdio::piped());
            command
        }
        None => {
            let mut command = tokio::process::Command::new(&spec.program);
            command.stdin(Stdio::null()).kill_on_drop(true);
            command
        }
    };
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if supervisor.is_none() {
        // Unsupervised (library use): the command at least dies with skill-lift.
        crate::features::contain::die_with_parent(&mut command);
    }
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn {
        program: program.clone(),
        source,
    })?;
    let registered = child.id();
    crate::features::contain::register_child(registered);
    let group = child.id().map(|id| id as i32).unwrap_or(0);
    let _guard = GroupGuard {
        group,
        supervised: supervisor.is_some(),
    };
    let mut lifeline = child.stdin.take();

    let (sender, mut receiver) = mpsc::unbounded_channel::<Stream>();
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(read_stdout_lines(
            stdout,
            limits.max_stdout_bytes,
            sender.clone(),
        )));
    }
    if let Some(mut stderr) = child.stderr.take() {
        let sender = sender.clone();
        readers.push(tokio::spawn(async move {
            let mut chunk = vec![0u8; 16 * 1024];
            loop {
                match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if sender.send(Stream::Stderr(chunk[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
        }));
    }
    drop(sender);

    let mut lines = Vec::new();
    let mut stderr_tail: Vec<u8> = Vec::new();
    let mut stdout_dropped: u64 = 0;
    let mut stderr_dropped: u64 = 0;
    let mut final_event_seen = false;
    let mut timed_out = false;
    let mut stopped_after_final_event = false;
    let mut stalled = false;
    let timeout_at = tokio::time::Instant::now() + limits.timeout;
    let mut linger_at: Option<tokio::time::Instant> = None;
    let mut streams_open = true;
    let mut status = None;
    let stderr_cap = limits.max_stderr_bytes;

    let mut take = |item: Stream,
                    watch: &mut dyn ProcessWatch,
                    lines: &mut Vec<String>,
                    stderr_tail: &mut Vec<u8>,
                    final_seen: &mut bool|
     -> bool {
        match item {
            Stream::Line(line) => {
                let is_last = !*final_seen && watch.line(&line);
                lines.push(line);
                if is_last {
                    *final_seen = true;
                }
                is_last
            }
            Stream::Probe(line) => {
                let is_last = !*final_seen && watch.line(&line);
                if is_last {
                    // The terminal event is kept even past the cap (it is at most the probe
                    // size), so a cut stream can still be told complete.
                    stdout_dropped = stdout_dropped.saturating_sub(line.len() as u64);
                    lines.push(line);
                    *final_seen = true;
                }
                is_last
            }
            Stream::Dropped(bytes) => {
                stdout_dropped += bytes;
                false
            }
            Stream::Stderr(bytes) => {
                watch.stderr(&bytes);
                stderr_tail.extend_from_slice(&bytes);
                if stderr_tail.len() > stderr_cap.saturating_mul(2).max(64 * 1024) {
                    let cut = stderr_tail.len() - stderr_cap;
                    stderr_dropped += cut as u64;
                    stderr_tail.drain(..cut);
                }
                false
            }
        }
    };

    // Phase 1: until the child exits, draining both pipes.
    let mut stop = Stop::Running;
    while status.is_none() {
        let deadline = match stop {
            Stop::Running => {
                let mut at = linger_at.map_or(timeout_at, |at| at.min(timeout_at));
                if linger_at.is_none()
                    && let Some(check) = watch.next_check()
                {
                    at = at.min(check);
                }
                Some(at)
            }
            Stop::Terminating { kill_at } => Some(kill_at),
            Stop::Killed => None,
        };
        tokio::select! {
            item = receiver.recv(), if streams_open => {
                match item {
                    Some(item) => {
                        if take(item, watch, &mut lines, &mut stderr_tail, &mut final_event_seen) {
                            linger_at = Some(tokio::time::Instant::now() + limits.linger);
                        }
                    }
                    None => streams_open = false,
                }
            }
            waited = child.wait() => {
                status = Some(waited.map_err(|source| ProcessError::Wait { program: program.clone(), source })?);
            }
            _ = sleep_until_some(deadline) => {
                let now = tokio::time::Instant::now();
                match stop {
                    Stop::Running => {
                        if now >= timeout_at {
                            timed_out = true;
                        } else if linger_at.is_some_and(|at| now >= at) {
                            stopped_after_final_event = true;
                        } else if linger_at.is_none() && watch.stalled(now) {
                            stalled = true;
                        } else {
                            continue;
                        }
                        signal_group(group, libc::SIGTERM);
                        stop = Stop::Terminating { kill_at: now + limits.grace };
                    }
                    Stop::Terminating { .. } => {
                        if lifeline.is_some() {
                            // The supervisor kills the whole tree, then exits like the command.
                            lifeline = None;
                        } else {
                            signal_group(group, libc::SIGKILL);
                        }
                        stop = Stop::Killed;
                    }
                    Stop::Killed => {}
                }
            }
        }
    }
    drop(lifeline);
    crate::features::contain::unregister_child(registered);

    // Phase 2: the child is gone; read what is left, but never wait on pipes a grandchild holds.
    let drain_until = tokio::time::Instant::now() + PIPE_DRAIN_AFTER_EXIT;
    while streams_open {
        tokio::select! {
            item = receiver.recv() => match item {
                Some(item) => { take(item, watch, &mut lines, &mut stderr_tail, &mut final_event_seen); }
                None => streams_open = false,
            },
            _ = tokio::time::sleep_until(drain_until) => break,
        }
    }
    // Whatever is left of the group (grandchildren) goes now.
    signal_group(group, libc::SIGKILL);
    for reader in &readers {
        reader.abort();
    }
    while let Ok(item) = receiver.try_recv() {
        take(
            item,
            watch,
            &mut lines,
            &mut stderr_tail,
            &mut final_event_seen,
        );
    }

    let status = status.expect("loop ends with a status");
    use std::os::unix::process::ExitStatusExt;
    let keep_from = stderr_tail.len().saturating_sub(stderr_cap);
    stderr_dropped += keep_from as u64;
    Ok(ProcessOutcome {
        stdout_lines: lines,
        stderr_tail: String::from_utf8_lossy(&stderr_tail[keep_from..]).into_owned(),
        stdout_dropped_bytes: stdout_dropped,
        stderr_dropped_bytes: stderr_dropped,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        stopped_after_final_event,
        final_event_seen,
        stalled,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_agent(mode: &str, extra: &[&str]) -> ProcessSpec {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_agent.py");
        let mut args = vec![script.display().to_string(), mode.to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        ProcessSpec {
            program: PathBuf::from("python3"),
            args,
            cwd: std::env::temp_dir(),
            env: vec![(
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            )],
        }
    }

    fn limits(timeout_ms: u64) -> ProcessLimits {
        ProcessLimits {
            timeout: Duration::from_millis(timeout_ms),
            grace: Duration::from_millis(300),
            linger: Duration::from_millis(300),
            max_stdout_bytes: DEFAULT_MAX_STDOUT_BYTES,
            max_stderr_bytes: DEFAULT_MAX_STDERR_BYTES,
        }
    }

    fn is_result(line: &str) -> bool {
        line.contains("\"type\":\"result\"") || line.contains("\"type\": \"result\"")
    }

    /// Whether a process with this id is alive (zombies count as gone).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    fn pid_file() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pids");
        (dir, path)
    }

    fn pids(path: &std::path::Path) -> Vec<i32> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    #[tokio::test]
    async fn normal_run_is_collected() {
        let outcome = run_process(&fake_agent("ok", &[]), limits(10_000), is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        assert!(outcome.final_event_seen);
        assert!(!outcome.timed_out && !outcome.stopped_after_final_event);
        assert!(outcome.stdout_lines.last().unwrap().contains("result"));
        assert!(outcome.stderr_tail.contains("fake agent starting"));
    }

    #[tokio::test]
    async fn hang_is_stopped_by_the_timeout() {
        let (_dir, path) = pid_file();
        let started = Instant::now();
        let outcome = run_process(
            &fake_agent("hang", &[&path.display().to_string()]),
            limits(500),
            is_result,
        )
        .await
        .unwrap();
        assert!(outcome.timed_out);
        assert_eq!(outcome.signal, Some(libc::SIGTERM));
        assert!(started.elapsed() < Duration::from_secs(5));
        for pid in pids(&path) {
            assert!(!alive(pid), "pid {pid} survived");
        }
    }

    #[tokio::test]
    async fn sigterm_ignored_means_sigkill_after_grace() {
        let (_dir, path) = pid_file();
        // Long enough for Python to start and ignore SIGTERM on a loaded machine.
        let outcome = run_process(
            &fake_agent("ignore-term", &[&path.display().to_string()]),
            limits(3000),
            is_result,
        )
        .await
        .unwrap();
        assert!(outcome.timed_out);
        assert_eq!(outcome.signal, Some(libc::SIGKILL));
        for pid in pids(&path) {
            assert!(!alive(pid), "pid {pid} survived");
        }
    }

    #[tokio::test]
    async fn grandchild_holding_the_pipes_is_killed() {
        let (_dir, path) = pid_file();
        let started = Instant::now();
        let outcome = run_process(
            &fake_agent("grandchild", &[&path.display().to_string()]),
            limits(20_000),
            is_result,
        )
        .await
        .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        assert!(outcome.final_event_seen);
        assert!(!outcome.timed_out);
        assert!(started.elapsed() < Duration::from_secs(10));
        let pids = pids(&path);
        assert_eq!(pids.len(), 2, "child and grandchild pids recorded");
        std::thread::sleep(Duration::from_millis(100));
        for pid in pids {
            assert!(!alive(pid), "pid {pid} survived");
        }
    }

    #[tokio::test]
    async fn ten_megabyte_line_is_one_line() {
        let outcome = run_process(&fake_agent("big-line", &[]), limits(30_000), is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        let big = outcome
            .stdout_lines
            .iter()
            .find(|l| l.len() > 10_000_000)
            .expect("the 10 MB line");
        assert!(big.starts_with('{') && big.ends_with('}'));
        assert!(outcome.final_event_seen);
    }

    #[tokio::test]
    async fn non_zero_exit_and_signal_death_are_reported() {
        let outcome = run_process(&fake_agent("exit", &["3"]), limits(10_000), is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(3));
        assert_eq!(outcome.signal, None);
        let outcome = run_process(&fake_agent("signal", &[]), limits(10_000), is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, None);
        assert_eq!(outcome.signal, Some(libc::SIGKILL));
        assert!(!outcome.timed_out);
    }

    #[tokio::test]
    async fn stream_without_final_event_is_reported() {
        let outcome = run_process(&fake_agent("no-final", &[]), limits(10_000), is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        assert!(!outcome.final_event_seen);
        assert!(!outcome.stdout_lines.is_empty());
    }

    #[tokio::test]
    async fn lingering_after_the_final_event_is_stopped() {
        let (_dir, path) = pid_file();
        let started = Instant::now();
        let outcome = run_process(
            &fake_agent("linger", &[&path.display().to_string()]),
            limits(30_000),
            is_result,
        )
        .await
        .unwrap();
        assert!(outcome.final_event_seen);
        assert!(outcome.stopped_after_final_event);
        assert!(!outcome.timed_out);
        assert!(started.elapsed() < Duration::from_secs(10));
        for pid in pids(&path) {
            assert!(!alive(pid), "pid {pid} survived");
        }
    }

    #[tokio::test]
    async fn chatty_stderr_does_not_deadlock() {
        let outcome = run_process(&fake_agent("chatty", &[]), limits(30_000), is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        assert!(outcome.final_event_seen);
        assert!(outcome.stderr_tail.len() <= DEFAULT_MAX_STDERR_BYTES);
        assert_eq!(
            outcome.stderr_dropped_bytes as usize + outcome.stderr_tail.len(),
            4 * 1024 * 1024 + "fake agent starting\n".len()
        );
    }

    #[tokio::test]
    async fn missing_program_is_a_spawn_error() {
        let mut spec = fake_agent("ok", &[]);
        spec.program = PathBuf::from("/nonexistent/agent-cli");
        let error = run_process(&spec, limits(1000), is_result)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("cannot start"), "{error}");
    }

    #[tokio::test]
    async fn output_past_the_caps_is_dropped_and_counted() {
        // 20 MB on stdout without a newline, then the result line; 1 MiB kept at most.
        let mut limits = limits(60_000);
        limits.max_stdout_bytes = 1024 * 1024;
        limits.max_stderr_bytes = 1000;
        let outcome = run_process(&fake_agent("flood", &["20000000"]), limits, is_result)
            .await
            .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        let kept: usize = outcome.stdout_lines.iter().map(String::len).sum();
        assert!(kept <= 1024 * 1024 + 1000, "kept {kept} bytes");
        assert!(
            outcome.stdout_dropped_bytes >= 20_000_000,
            "{}",
            outcome.stdout_dropped_bytes
        );
        // The final event is still seen (and kept) past the cap.
        assert!(outcome.final_event_seen);
        assert!(is_result(outcome.stdout_lines.last().unwrap()));
        assert!(outcome.stderr_tail.len() <= 1000);
        assert!(outcome.stderr_dropped_bytes > 0);
    }

    #[tokio::test]
    async fn lines_within_the_cap_are_kept_whole() {
        let mut limits = limits(10_000);
        limits.max_stdout_bytes = 100_000;
        let outcome = run_process(&fake_agent("ok", &[]), limits, is_result)
            .await
            .unwrap();
        assert_eq!(outcome.stdout_dropped_bytes, 0);
        assert_eq!(outcome.stderr_dropped_bytes, 0);
        assert!(outcome.final_event_seen);
    }
}
