//! `migplan check FILE`: validate a scenario and print a one-line summary, after a line for each
//! flat `[policy]` key of earlier versions saying where it lives now.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub file: PathBuf,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.file)?;
    for note in &s.moved_keys {
        println!("{note}");
    }
    println!("{}", crate::scenario::summary(&s));
    Ok(())
}
