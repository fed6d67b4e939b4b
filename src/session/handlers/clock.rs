//! The clock: steps handed out to run ([`Outcome::Step`]) and continuous play.

use crate::session::{Outcome, Session, STEP_S};
use anyhow::{bail, Result};

pub(in crate::session) fn step(s: &mut Session) -> Result<Outcome> {
    s.step_request(s.now_s() + STEP_S, false)
}

pub(in crate::session) fn step_for(s: &mut Session, d: f64) -> Result<Outcome> {
    if !(d > 0.0 && d.is_finite()) {
        bail!("a step must be a positive duration");
    }
    s.step_request(s.now_s() + d, false)
}

pub(in crate::session) fn step_to_next_event(s: &mut Session) -> Result<Outcome> {
    match s.state.engine.next_event_time() {
        Some(t) => {
            let t = t.max(s.now_s() + STEP_S).min(s.now_s() + 365.0 * 86400.0);
            s.step_request(t, false)
        }
        None => Ok(Outcome::Info(
            "no event ahead: no VM departs and arrivals are off".into(),
        )),
    }
}

pub(in crate::session) fn toggle_play(s: &mut Session) -> Result<Outcome> {
    s.playing = !s.playing;
    // Starting play opens a new run (one undo step); pausing leaves the run open, so a
    // tick still running when the user paused joins it.
    if s.playing {
        s.play_snapshot = false;
    }
    Ok(Outcome::Info(if s.playing { "playing" } else { "paused" }.into()))
}

pub(in crate::session) fn play_tick(s: &mut Session, d: f64) -> Result<Outcome> {
    if !s.playing {
        return Ok(Outcome::Info("paused".into()));
    }
    let t = s.now_s() + d;
    s.step_request(t, true).inspect_err(|_| s.playing = false)
}
