//! The scenario file: save (`:w`) and open.

use crate::scenario;
use crate::session::{Outcome, Session};
use anyhow::{bail, Result};
use std::path::PathBuf;

pub(in crate::session) fn save(s: &mut Session, path: Option<PathBuf>) -> Result<Outcome> {
    let path = match path.or_else(|| s.path.clone()) {
        Some(p) => p,
        None => bail!("this scenario has no file yet: save with `:w FILE`"),
    };
    let sc = s.to_scenario();
    scenario::save(&sc, &path)?;
    s.path = Some(path.clone());
    s.saved_revision = s.state.revision;
    Ok(Outcome::Info(format!("saved {}", path.display())))
}

pub(in crate::session) fn open(s: &mut Session, path: PathBuf) -> Result<Outcome> {
    let fresh = Session::open(&path)?;
    let next_revision = s.next_revision;
    *s = fresh;
    // Revisions stay unique across opens, so a stale solve result is recognized.
    s.state.revision = next_revision;
    s.saved_revision = next_revision;
    s.next_revision = next_revision + 1;
    Ok(Outcome::Changed(format!("opened {}", path.display())))
}
