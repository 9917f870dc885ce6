//! Process containment: no process started for a run outlives it, however skill-lift ends.
//!
//! Three layers, each measured by the tests (`tests/cli.rs`, `kill_9_of_skill_lift_…`):
//!
//! 1. **Per-attempt supervisor.** Every agent CLI and custom grader runs under a small
//!    supervisor: the skill-lift binary re-executed with the hidden first argument
//!    [`SUPERVISOR_ARG`]. The supervisor is a *child subreaper* (`PR_SET_CHILD_SUBREAPER`), so a
//!    descendant that escapes with `setsid` and a double fork is re-parented to it, not to init;
//!    it forks and execs the command (which gets `PR_SET_PDEATHSIG(SIGKILL)`), and it holds a
//!    *lifeline*: its stdin is the read end of a pipe whose write end only skill-lift holds.
//!    When the command exits (the supervisor wakes on SIGCHLD, no polling delay), or the
//!    lifeline breaks (skill-lift dropped the attempt, or died, even by `kill -9`), the
//!    supervisor SIGKILLs every descendant it has (found through `/proc` when it still has a
//!    child, repeated until none is left), reaps them, and exits with the command's own status
//!    (a death by signal is re-raised), so the caller sees the command's exit as if unsupervised.
//! 2. **Parent-death signal.** Every child skill-lift starts directly (model servers, judge
//!    servers, and attempts when no supervisor binary is known, as in library unit tests) gets
//!    `PR_SET_PDEATHSIG(SIGKILL)` in `pre_exec`, with the race handled: if skill-lift died between
//!    `fork` and the `prctl`, the child kills itself. (The signal follows the *thread* that
//!    spawned the child; skill-lift spawns from the async runtime's worker threads, which live
//!    as long as the process.)
//! 3. **skill-lift is a subreaper too** ([`init_binary`]), so a descendant orphaned when a
//!    supervisor itself was killed is re-parented to skill-lift, and [`reap_adopted_orphans`]
//!    kills and reaps it at the end of each trial and of the run.
//!
//! A per-trial cgroup (`cgroup.kill`) would also catch processes that leave the tree by other
//! means, but the machines skill-lift runs on commonly expose no writable cgroup v2 hierarchy
//! (containers, CI runners); the supervisor needs nothing but `/proc`.
//!
//! Interrupts: [`interrupted`] resolves on the first SIGINT/SIGTERM once
//! [`install_interrupt_handler`] ran (skill-lift installs it before it starts any server or
//! child); a second interrupt exits at once with 130 (children die with it, by the layers above).
//!
//! Linux only; elsewhere the functions degrade to plain process groups.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The hidden first argument that turns the skill-lift binary into an attempt supervisor:
/// `skill-lift __skill-lift-supervise PROGRAM [ARGS…]`.
pub const SUPERVISOR_ARG: &str = "__skill-lift-supervise";

/// The binary to re-execute as supervisor, registered by [`init_binary`].
static SUPERVISOR_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Process ids of the children skill-lift started itself (they are reaped by their owners, never
/// by [`reap_adopted_orphans`]).
static KNOWN_CHILDREN: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

/// Process ids of the children the process already had when it started: a pipe's or process
/// substitution's reader that the shell forked before it exec'd skill-lift (`skill-lift run … >
/// >(tee log)`, a script that `exec`s skill-lift). They are the user's, never orphans for
/// [`reap_adopted_orphans`] (which once killed the `tee` and lost the run's output).
static INHERITED_CHILDREN: OnceLock<HashSet<u32>> = OnceLock::new();

/// Called once by the `skill-lift` binary at start: make the process a child subreaper, note the
/// children it inherited through `exec`, and register its own executable as the attempt
/// supervisor.
pub fn init_binary() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only changes a flag of this process; getpid has
    // no preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        let me = libc::getpid() as u32;
        let _ = INHERITED_CHILDREN.set(
            process_table()
                .into_iter()
                .filter(|&(_, parent, _)| parent == me)
                .map(|(pid, _, _)| pid)
                .collect(),
        );
    }
    if let Ok(exe) = std::env::current_exe() {
        let _ = SUPERVISOR_EXE.set(exe);
    }
}

/// The supervisor executable, when the running binary registered one (never in library use).
pub fn supervisor_exe() -> Option<&'static Path> {
    if cfg!(target_os = "linux") {
        SUPERVISOR_EXE.get().map(PathBuf::as_path)
    } else {
        None
    }
}

/// Remember `pid` as a child skill-lift owns (see [`reap_adopted_orphans`]).
pub fn register_child(pid: Option<u32>) {
    if let Some(pid) = pid {
        let mut known = KNOWN_CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        known.get_or_insert_with(HashSet::new).insert(pid);
    }
}

/// Forget `pid` (its owner reaped it).
pub fn unregister_child(pid: Option<u32>) {
    if let Some(pid) = pid {
        let mut known = KNOWN_CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = known.as_mut() {
            set.remove(&pid);
        }
    }
}

/// Give `command`'s child `PR_SET_PDEATHSIG(SIGKILL)`: it dies when skill-lift dies, even by
/// `kill -9`. If skill-lift already died before the setting took effect, the child kills itself.
pub fn die_with_parent(command: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpid is async-signal-safe and has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (prctl, getppid, kill); it allocates nothing.
        unsafe {
            command.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if libc::getppid() != parent {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// Resolve `program` the way `execvp` in the child will (a name without `/` searched in the
/// child's `PATH`, a relative path against the child's working folder), so that a missing program
/// is reported as a spawn error before any supervisor starts.
pub fn resolve_program(program: &Path, path_variable: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &Path| {
        std::fs::metadata(candidate)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.as_os_str().is_empty() {
        return None;
    }
    if program.components().count() > 1 || program.is_absolute() {
        let candidate = if program.is_absolute() {
            program.to_path_buf()
        } else {
            cwd.join(program)
        };
        return executable(&candidate).then_some(candidate);
    }
    let path_variable = path_variable.unwrap_or("/usr/local/bin:/usr/bin:/bin");
    std::env::split_paths(OsStr::new(path_variable))
        .map(|dir| {
            if dir.is_relative() {
                cwd.join(dir).join(program)
            } else {
                dir.join(program)
            }
        })
        .find(|candidate| executable(candidate))
}

/// If this process was started as an attempt supervisor, supervise and return its exit code;
/// otherwise `None`. The binary calls this first thing in `main`, before any thread exists.
pub fn supervisor_main_if_requested() -> Option<i32> {
    let mut args = std::env::args_os();
    let _argv0 = args.next();
    if args.next().as_deref() != Some(OsStr::new(SUPERVISOR_ARG)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    if rest.is_empty() {
        crate::errln!("skill-lift supervisor: no program given");
        return Some(127);
    }
    Some(supervise(&rest))
}

#[cfg(not(target_os = "linux"))]
fn supervise(argv: &[OsString]) -> i32 {
    // No subreaper elsewhere: just run the program.
    match std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .status()
    {
        Ok(status) => status.code().unwrap_or(1),
        Err(error) => {
            crate::errln!(
                "skill-lift: cannot start `{}`: {error}",
                argv[0].to_string_lossy()
            );
            127
        }
    }
}

#[cfg(target_os = "linux")]
extern "C" fn ignore_signal(_: libc::c_int) {}

/// The supervisor itself (see the module documentation). Single-threaded: it runs before any
/// thread of the binary starts.
#[cfg(target_os = "linux")]
fn supervise(argv: &[OsString]) -> i32 {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    let strings: Vec<CString> = match argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
    {
        Ok(strings) => strings,
        Err(_) => {
            crate::errln!("skill-lift: an argument contains a NUL byte");
            return 127;
        }
    };
    let mut pointers: Vec<*const libc::c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    pointers.push(std::ptr::null());
    let failure = format!("skill-lift: cannot start `{}`\n", argv[0].to_string_lossy());
    // SAFETY: plain system calls on this single-threaded process; every pointer passed to
    // execvp stays alive (owned by `strings`/`pointers`) until exec or _exit.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        // The trial's process group gets SIGTERM on timeout: that is for the command, not us.
        // (Handlers, unlike SIG_IGN, are reset by exec, so the command keeps the defaults.)
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(signal, ignore_signal as *const () as libc::sighandler_t);
        }
        // SIGCHLD wakes the wait below the moment the command exits: it gets a handler (not
        // SIG_IGN, which would reap children behind our back) and stays blocked except while
        // waiting (`ppoll` unblocks it atomically, so no exit goes unnoticed).
        libc::signal(
            libc::SIGCHLD,
            ignore_signal as *const () as libc::sighandler_t,
        );
        let mut child_exit: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut child_exit);
        libc::sigaddset(&mut child_exit, libc::SIGCHLD);
        let mut waiting_mask: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &child_exit, &mut waiting_mask);
        libc::sigdelset(&mut waiting_mask, libc::SIGCHLD);
        let supervisor = libc::getpid();
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        let child = libc::fork();
        if child < 0 {
            crate::errln!(
                "skill-lift: fork failed: {}",
                std::io::Error::last_os_error()
            );
            return 127;
        }
        if child == 0 {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != supervisor {
                libc::_exit(137);
            }
            // Rust starts with SIGPIPE ignored, and an ignored signal survives exec; so does a
            // blocked signal.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::sigprocmask(libc::SIG_UNBLOCK, &child_exit, std::ptr::null_mut());
            // The command never holds the lifeline: its stdin is /dev/null.
            if null >= 0 {
                libc::dup2(null, 0);
            } else {
                libc::close(0);
            }
            libc::execvp(pointers[0], pointers.as_ptr());
            libc::write(2, failure.as_ptr().cast(), failure.len());
            libc::_exit(127);
        }
        if null >= 0 {
            libc::close(null);
        }
        let status = wait_for_command_or_lifeline(child, &waiting_mask);
        kill_descendants(&waiting_mask);
        mirror_status(status)
    }
}

/// Wait until the command `child` exits (its status) or the lifeline on stdin breaks (then the
/// command is killed and its status collected). SIGCHLD is blocked outside the wait and
/// unblocked by `ppoll` (`waiting_mask`), so an exit ends the wait at once; the 1 s timeout is
/// only a safety net.
#[cfg(target_os = "linux")]
unsafe fn wait_for_command_or_lifeline(
    child: libc::pid_t,
    waiting_mask: &libc::sigset_t,
) -> libc::c_int {
    let mut lifeline_open = true;
    let timeout = libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    loop {
        if let Some(status) = unsafe { reap_all(child) } {
            return status;
        }
        let mut poll = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        let watched = if lifeline_open { 1 } else { 0 };
        // SAFETY: one valid pollfd (or none), a valid timeout and signal mask. A SIGCHLD
        // interrupts it (EINTR): the loop reaps.
        let ready = unsafe { libc::ppoll(&mut poll, watched, &timeout, waiting_mask) };
        if lifeline_open && ready > 0 {
            let mut buffer = [0u8; 64];
            // SAFETY: reading into a local buffer of the given size.
            let read = unsafe { libc::read(0, buffer.as_mut_ptr().cast(), buffer.len()) };
            let interrupted = read < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted;
            if read == 0 || (read < 0 && !interrupted) {
                lifeline_open = false;
                // SAFETY: signalling our own child.
                unsafe { libc::kill(child, libc::SIGKILL) };
            }
        }
    }
}

/// Reap every exited child; the status of `child` when it was among them.
#[cfg(target_os = "linux")]
unsafe fn reap_all(child: libc::pid_t) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid status pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return found;
        }
        if pid == child {
            found = Some(status);
        }
    }
}

/// SIGKILL every descendant of this process and reap them, until none is left (bounded: a
/// process that forks faster than it can be killed is given up on after about 5 s). Between
/// rounds it waits for the next child to exit (SIGCHLD, unblocked by `waiting_mask` as in
/// [`wait_for_command_or_lifeline`]) for at most 10 ms: a killed child is reaped the moment it
/// dies, so an agent CLI that leaves a helper process behind does not cost the trial a fixed
/// pause.
#[cfg(target_os = "linux")]
fn kill_descendants(waiting_mask: &libc::sigset_t) {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() } as u32;
    for _ in 0..500 {
        // Every living descendant has an ancestor that is our child (orphans are re-parented
        // to us, the subreaper): with no child left at all, there is nothing to look for.
        // SAFETY: reaping our own children.
        unsafe { reap_all(0) };
        let mut status = 0;
        // SAFETY: as above; ECHILD (-1) means no child is left at all.
        if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } < 0 {
            return;
        }
        for pid in descendants(me) {
            // SAFETY: sending a signal; a stale pid yields ESRCH.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        // SAFETY: reaping our own children.
        unsafe { reap_all(0) };
        // SAFETY: as above.
        if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } < 0 {
            return;
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        // SAFETY: no file descriptors, a valid timeout and signal mask; a SIGCHLD (pending
        // already, or arriving) ends the wait early with EINTR.
        unsafe { libc::ppoll(std::ptr::null_mut(), 0, &pause, waiting_mask) };
    }
}

/// Exit like the command did: its exit code, or the same signal (core dumps disabled).
#[cfg(target_os = "linux")]
unsafe fn mirror_status(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        return libc::WEXITSTATUS(status);
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: resetting our own disposition and limits, then signalling ourselves.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        return 128 + signal;
    }
    1
}

/// `(pid, parent pid, zombie)` of every process in `/proc`.
fn process_table() -> Vec<(u32, u32, bool)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut table = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may contain spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let Some(parent) = fields.next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        table.push((
            pid,
            parent,
            state.starts_with('Z') || state.starts_with('X'),
        ));
    }
    table
}

/// The living (non-zombie) descendants of `root`.
pub fn descendants(root: u32) -> Vec<u32> {
    let table = process_table();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    let mut seen = HashSet::from([root]);
    while let Some(parent) = frontier.pop() {
        for (pid, ppid, zombie) in &table {
            if *ppid == parent && seen.insert(*pid) {
                frontier.push(*pid);
                if !zombie {
                    found.push(*pid);
                }
            }
        }
    }
    found
}

/// Kill and reap the processes re-parented to skill-lift (a subreaper) that it did not start:
/// descendants of a supervisor that was itself killed. Children skill-lift started are left to
/// their owners, and children it inherited at start (see [`INHERITED_CHILDREN`]) to the user.
pub fn reap_adopted_orphans() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() } as u32;
        let known: HashSet<u32> = KNOWN_CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_default();
        let inherited = INHERITED_CHILDREN.get();
        let mut count = 0;
        for (pid, parent, zombie) in process_table() {
            if parent != me
                || known.contains(&pid)
                || inherited.is_some_and(|set| set.contains(&pid))
            {
                continue;
            }
            // Whatever this orphan started goes first, then the orphan itself.
            for descendant in descendants(pid) {
                // SAFETY: sending a signal to a process of our tree.
                unsafe { libc::kill(descendant as libc::pid_t, libc::SIGKILL) };
            }
            // SAFETY: the orphan is our child (re-parented to us): kill and reap exactly it.
            unsafe {
                if !zombie {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
                let mut status = 0;
                libc::waitpid(pid as libc::pid_t, &mut status, 0);
            }
            count += 1;
        }
        count
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// The run's interrupt flag (SIGINT or SIGTERM received).
static INTERRUPT: OnceLock<tokio::sync::watch::Sender<bool>> = OnceLock::new();

/// Start listening for SIGINT and SIGTERM (idempotent; needs a Tokio runtime). From then on the
/// first signal makes [`interrupted`] resolve, and a second one exits at once with 130.
pub fn install_interrupt_handler() {
    let mut fresh = false;
    let sender = INTERRUPT.get_or_init(|| {
        fresh = true;
        tokio::sync::watch::channel(false).0
    });
    if !fresh {
        return;
    }
    let sender = sender.clone();
    // Register both signals now, so no signal between here and the task's first poll is lost.
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    let interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
    tokio::spawn(async move {
        let (Ok(mut terminate), Ok(mut interrupt)) = (terminate, interrupt) else {
            return;
        };
        let mut count = 0;
        loop {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            count += 1;
            if count == 1 {
                let _ = sender.send(true);
                crate::values::reporter::report(crate::values::reporter::Event::Interrupted {
                    again: false,
                });
            } else {
                crate::values::reporter::report(crate::values::reporter::Event::Interrupted {
                    again: true,
                });
                std::process::exit(crate::values::exit_codes::INTERRUPTED);
            }
        }
    });
}

/// Resolves once SIGINT or SIGTERM arrived (installs the handler on first use).
pub async fn interrupted() {
    install_interrupt_handler();
    let Some(sender) = INTERRUPT.get() else {
        return std::future::pending().await;
    };
    let mut receiver = sender.subscribe();
    let _ = receiver.wait_for(|interrupted| *interrupted).await;
}

/// Whether an interrupt has arrived.
pub fn is_interrupted() -> bool {
    INTERRUPT.get().is_some_and(|sender| *sender.borrow())
}

/// Run `program args` in the foreground (stdout and stderr inherited, stdin closed) so that none
/// of the processes it starts outlives skill-lift: under the attempt supervisor, in a process
/// group of its own, holding the lifeline. An interrupt (SIGINT/SIGTERM, see [`interrupted`])
/// kills the whole tree, and so does skill-lift's death, even by `kill -9` (the lifeline
/// breaks). Unsupervised (library use) the group is killed instead. Returns the program's exit
/// status, or `None` when interrupted (the tree was killed and reaped).
pub async fn run_foreground(
    program: &str,
    args: &[&str],
) -> std::io::Result<Option<std::process::ExitStatus>> {
    use std::process::Stdio;
    install_interrupt_handler();
    let supervisor = supervisor_exe();
    let mut command = match supervisor {
        Some(exe) => {
            let mut command = tokio::process::Command::new(exe);
            // The lifeline: only skill-lift holds the write end.
            command
                .arg(SUPERVISOR_ARG)
                .arg(program)
                .stdin(Stdio::piped());
            command
        }
        None => {
            let mut command = tokio::process::Command::new(program);
            command.stdin(Stdio::null());
            die_with_parent(&mut command);
            command
        }
    };
    command.args(args).process_group(0);
    let mut child = command.spawn()?;
    let pid = child.id();
    register_child(pid);
    let lifeline = child.stdin.take();
    let outcome = tokio::select! {
        status = child.wait() => Some(status),
        () = interrupted() => None,
    };
    let status = match outcome {
        Some(status) => Some(status),
        None => {
            drop(lifeline);
            if supervisor.is_none()
                && let Some(group) = pid
            {
                // SAFETY: killpg only sends a signal; a stale group yields ESRCH, ignored.
                unsafe {
                    libc::killpg(group as i32, libc::SIGKILL);
                }
            }
            child.wait().await.map(|_| None).transpose()
        }
    };
    unregister_child(pid);
    status.transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_resolve_like_execvp() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("agent");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().display().to_string();
        assert_eq!(
            resolve_program(Path::new("agent"), Some(&path), Path::new("/")),
            Some(script.clone())
        );
        assert_eq!(
            resolve_program(Path::new("./agent"), None, dir.path()),
            Some(dir.path().join("./agent"))
        );
        assert_eq!(
            resolve_program(Path::new("missing-agent"), Some(&path), Path::new("/")),
            None
        );
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(resolve_program(&script, None, Path::new("/")), None);
    }

    #[test]
    fn descendants_of_this_process_include_a_spawned_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        assert!(descendants(me).contains(&child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!descendants(me).contains(&child.id()));
    }
}
