//! Running one agent CLI attempt as a child process: its own process group, stdin closed, stdout
//! and stderr drained concurrently while waiting (a chatty child can never block on a full pipe),
//! a wall-clock timeout followed by SIGTERM → grace → SIGKILL of the whole group, and a stop
//! shortly after the agent's final event for CLIs that linger.
//!
//! This module owns mechanics only: it knows nothing about agents or event formats. The caller
//! says which stdout line is the final event and classifies the outcome (`crate::runner::agent_cli`).
//! After every attempt the whole process group is killed, so grandchildren that kept the pipes
//! open (or simply outlived the agent) never survive the trial.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::sync::mpsc;

/// Bytes of stderr kept (the tail).
const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// How long pipes may stay open after the child exited before the group is killed.
const PIPE_DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
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
pub struct ProcessLimits {
    /// Wall-clock budget; past it the group gets SIGTERM.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Time a process may keep running after its final event before it is stopped.
    pub linger: Duration,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessOutcome {
    /// Complete stdout lines (lossy UTF-8, without the newline), in order; a last line without a
    /// newline is included.
    pub stdout_lines: Vec<String>,
    /// The last `STDERR_TAIL_BYTES` of stderr.
    pub stderr_tail: String,
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
    /// Wall time from spawn to reaping.
    pub wall_s: f64,
}

/// Why a process could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
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

/// Kills the process group when dropped, so a cancelled attempt (trial timeout in the scheduler,
/// interrupt) never leaves the agent running.
struct GroupGuard {
    group: i32,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.group, libc::SIGKILL);
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
    Line(String),
    Stderr(Vec<u8>),
}

/// Run `spec` to the end under `limits`. `is_final` is asked about each stdout line.
pub async fn run_process(
    spec: &ProcessSpec,
    limits: ProcessLimits,
    mut is_final: impl FnMut(&str) -> bool,
) -> Result<ProcessOutcome, ProcessError> {
    let program = spec.program.display().to_string();
    let started = Instant::now();
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn {
        program: program.clone(),
        source,
    })?;
    let group = child.id().map(|id| id as i32).unwrap_or(0);
    let _guard = GroupGuard { group };

    let (sender, mut receiver) = mpsc::unbounded_channel::<Stream>();
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let sender = sender.clone();
        readers.push(tokio::spawn(async move {
            // read_until has no length limit: a 10 MB line is one line.
            let mut reader = BufReader::with_capacity(64 * 1024, stdout);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if buffer.last() == Some(&b'\n') {
                            buffer.pop();
                        }
                        if buffer.last() == Some(&b'\r') {
                            buffer.pop();
                        }
                        let line = String::from_utf8_lossy(&buffer).into_owned();
                        if sender.send(Stream::Line(line)).is_err() {
                            break;
                        }
                    }
                }
            }
        }));
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
    let mut final_event_seen = false;
    let mut timed_out = false;
    let mut stopped_after_final_event = false;
    let timeout_at = tokio::time::Instant::now() + limits.timeout;
    let mut linger_at: Option<tokio::time::Instant> = None;
    let mut streams_open = true;
    let mut status = None;

    let mut take = |item: Stream,
                    lines: &mut Vec<String>,
                    stderr_tail: &mut Vec<u8>,
                    final_seen: &mut bool|
     -> bool {
        match item {
            Stream::Line(line) => {
                let is_last = !*final_seen && is_final(&line);
                lines.push(line);
                if is_last {
                    *final_seen = true;
                }
                is_last
            }
            Stream::Stderr(bytes) => {
                stderr_tail.extend_from_slice(&bytes);
                if stderr_tail.len() > STDERR_TAIL_BYTES * 2 {
                    let cut = stderr_tail.len() - STDERR_TAIL_BYTES;
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
            Stop::Running => Some(linger_at.map_or(timeout_at, |at| at.min(timeout_at))),
            Stop::Terminating { kill_at } => Some(kill_at),
            Stop::Killed => None,
        };
        tokio::select! {
            item = receiver.recv(), if streams_open => {
                match item {
                    Some(item) => {
                        if take(item, &mut lines, &mut stderr_tail, &mut final_event_seen) {
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
                        } else {
                            stopped_after_final_event = true;
                        }
                        signal_group(group, libc::SIGTERM);
                        stop = Stop::Terminating { kill_at: now + limits.grace };
                    }
                    Stop::Terminating { .. } => {
                        signal_group(group, libc::SIGKILL);
                        stop = Stop::Killed;
                    }
                    Stop::Killed => {}
                }
            }
        }
    }

    // Phase 2: the child is gone; read what is left, but never wait on pipes a grandchild holds.
    let drain_until = tokio::time::Instant::now() + PIPE_DRAIN_AFTER_EXIT;
    while streams_open {
        tokio::select! {
            item = receiver.recv() => match item {
                Some(item) => { take(item, &mut lines, &mut stderr_tail, &mut final_event_seen); }
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
        take(item, &mut lines, &mut stderr_tail, &mut final_event_seen);
    }

    let status = status.expect("loop ends with a status");
    use std::os::unix::process::ExitStatusExt;
    let keep_from = stderr_tail.len().saturating_sub(STDERR_TAIL_BYTES);
    Ok(ProcessOutcome {
        stdout_lines: lines,
        stderr_tail: String::from_utf8_lossy(&stderr_tail[keep_from..]).into_owned(),
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        stopped_after_final_event,
        final_event_seen,
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
        let outcome = run_process(
            &fake_agent("ignore-term", &[&path.display().to_string()]),
            limits(500),
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
        assert!(outcome.stderr_tail.len() <= STDERR_TAIL_BYTES);
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
}
