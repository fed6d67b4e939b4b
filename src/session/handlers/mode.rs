//! GPU mode changes (`:mode`, `:mode!`): previewed or applied as a drain.

use crate::fleet::HostId;
use crate::ops::mode::ModeTarget;
use crate::session::{EventKind, Outcome, Session};
use anyhow::{bail, Result};

pub(in crate::session) fn preview_mode(
    s: &mut Session,
    host: HostId,
    gpu: usize,
    target: ModeTarget,
) -> Result<Outcome> {
    let p = s.mode_preview(host, gpu, &target)?;
    let lines = p.lines(s.fleet());
    for l in &lines {
        s.note(EventKind::Plan, format!("mode preview: {l}"));
    }
    Ok(Outcome::Info(format!(
        "{}; {} VM(s) leave, {} stay pending (log); `:mode! ...` applies",
        lines[0],
        p.leavers.len(),
        p.stranded().len()
    )))
}

pub(in crate::session) fn set_mode(
    s: &mut Session,
    host: HostId,
    gpu: usize,
    target: ModeTarget,
) -> Result<Outcome> {
    if s.state.preview.as_ref().is_some_and(|p| p.done > 0) {
        bail!("a plan is being played: apply it or undo first");
    }
    let p = s.mode_preview(host, gpu, &target)?;
    let lines = p.lines(s.fleet());
    s.checkpoint();
    *s.state.engine.fleet_mut() = p.after.clone();
    let msg = format!(
        "{}: {} VM(s) drained, {} pending{}",
        lines[0],
        p.leavers.len(),
        p.stranded().len(),
        if p.needs_reset { "; needs a GPU reset" } else { "" }
    );
    for l in &lines[1..] {
        s.note(EventKind::Setting, format!("mode: {l}"));
    }
    s.note(EventKind::Setting, msg.clone());
    s.state.preview = None;
    s.changed();
    Ok(Outcome::Changed(msg))
}
