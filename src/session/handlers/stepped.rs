//! A finished step of the clock taken in: the simulator after it becomes the session's.

use crate::session::{format_duration, EventKind, Outcome, Session, State, StepResult};
use anyhow::{bail, Result};

/// Takes in a step's result: the simulator after it becomes the session's, and the state
/// before it one undo step (a play run: one for the whole run).
pub(in crate::session) fn stepped(s: &mut Session, r: StepResult) -> Result<Outcome> {
    if r.revision != s.state.revision {
        bail!("the session changed while the clock ran; the step was dropped (step again)");
    }
    if r.reached_s() == s.now_s() && r.cancelled {
        if r.play {
            s.playing = false;
        }
        return Ok(Outcome::Info(
            "step cancelled before any time passed: nothing changed".into(),
        ));
    }
    let take_snapshot = !(r.play && s.play_snapshot);
    let reached_s = r.reached_s();
    let before = std::mem::replace(&mut s.state.engine, r.engine);
    if take_snapshot {
        let snapshot = State {
            engine: before,
            preview: s.state.preview.clone(),
            log: s.state.log.clone(),
            samples: s.state.samples.clone(),
            revision: s.state.revision,
        };
        s.undo.push(snapshot);
        if s.undo.len() > s.undo_cap {
            s.undo.remove(0);
        }
        s.redo.clear();
    }
    if r.play {
        s.play_snapshot = true;
    }
    s.keep_preview_after_step();
    let calls = match r.calls {
        0 => String::new(),
        1 => " (1 optimizer call)".into(),
        n => format!(" ({n} optimizer calls)"),
    };
    let outcome = if r.cancelled {
        if r.play {
            s.playing = false;
        }
        let msg = format!(
            "step cancelled at {} (of {}): the session keeps the state there; u undoes the step{calls}",
            s.date_at(reached_s).format("%Y-%m-%d %H:%M:%S"),
            s.date_at(r.target_s).format("%Y-%m-%d %H:%M:%S")
        );
        // After the step's own events, which all come before it.
        s.pull_events();
        s.note(EventKind::Setting, msg.clone());
        Outcome::Cancelled(msg)
    } else if r.play {
        Outcome::Changed(String::new())
    } else {
        Outcome::Changed(format!(
            "stepped {}{calls}",
            format_duration(reached_s - r.from_s)
        ))
    };
    s.changed();
    Ok(outcome)
}
