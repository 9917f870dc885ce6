//! The `skill-lift` binary: parse, run, exit with a documented code (see `exit_codes`).

fn main() {
    // Re-executed as the supervisor of one agent attempt (see `skill_lift::features::contain`)? That runs
    // before anything else, while the process is still single-threaded.
    if let Some(code) = skill_lift::features::contain::supervisor_main_if_requested() {
        std::process::exit(code);
    }
    // Like other command-line tools: a closed pipe (`skill-lift … | head`) ends the process
    // quietly instead of a panic in the print macros.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // A child subreaper whose attempts run under supervisors: nothing it starts outlives it.
    skill_lift::features::contain::init_binary();
    std::process::exit(skill_lift::cli::main());
}
