//! `migplan check FILE`: validate a scenario and print a one-line summary, after a line for each
//! flat `[policy]` key of earlier versions saying where it lives now.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario file (TOML).
    pub file: PathBuf,
    /// Print JSON: the summary's fields and the notes on moved keys.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let s = crate::scenario::load(&a.file)?;
    if a.json {
        let v = serde_json::json!({
            "summary": crate::scenario::summary_of(&s),
            "notes": s.moved_keys,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    for note in &s.moved_keys {
        println!("{note}");
    }
    println!("{}", crate::scenario::summary(&s));
    Ok(())
}
