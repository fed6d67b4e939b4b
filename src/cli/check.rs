//! `migplan check FILE`: validate a scenario and print a one-line summary.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub file: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.file)?;
    println!("{}", crate::scenario::summary(&s));
    Ok(())
}
