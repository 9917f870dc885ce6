//! The `skill-lift` binary: parse, run, exit with a documented code (see `exit_codes`).

fn main() {
    // Like other command-line tools: a closed pipe (`skill-lift … | head`) ends the process
    // quietly instead of a panic in the print macros.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(skill_lift::cli::main());
}
