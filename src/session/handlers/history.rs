//! Undo and redo over whole snapshots of the state.

use crate::session::{Outcome, Session};
use anyhow::{bail, Result};

pub(in crate::session) fn undo(s: &mut Session) -> Result<Outcome> {
    let Some(prev) = s.undo.pop() else {
        bail!("nothing to undo");
    };
    let cur = std::mem::replace(&mut s.state, prev);
    s.redo.push(cur);
    s.refresh();
    Ok(Outcome::Changed(format!("undone ({} more)", s.undo.len())))
}

pub(in crate::session) fn redo(s: &mut Session) -> Result<Outcome> {
    let Some(next) = s.redo.pop() else {
        bail!("nothing to redo");
    };
    let cur = std::mem::replace(&mut s.state, next);
    s.undo.push(cur);
    s.refresh();
    Ok(Outcome::Changed(format!("redone ({} more)", s.redo.len())))
}
