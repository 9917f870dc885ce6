//! The `skill-lift` binary: parse, run, exit with a documented code (see `exit_codes`).

fn main() {
    std::process::exit(skill_lift::cli::main());
}
