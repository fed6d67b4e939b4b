//! The `migplan` binary: parses the command line and hands over to [`migplan::cli::run`].

fn main() {
    std::process::exit(migplan::cli::run());
}
