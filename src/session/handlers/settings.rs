//! Session settings: arrivals from the workload, the arrival policy.

use crate::session::{engine, EventKind, Outcome, Session};
use anyhow::Result;

pub(in crate::session) fn set_arrivals(s: &mut Session, on: bool) -> Result<Outcome> {
    if s.arrivals() == on {
        return Ok(Outcome::Info(format!("arrivals already {}", on_off(on))));
    }
    s.checkpoint();
    s.state.engine.set_arrivals(on);
    let msg = format!("arrivals from the workload {}", on_off(on));
    s.note(EventKind::Setting, msg.clone());
    s.changed();
    Ok(Outcome::Changed(msg))
}

pub(in crate::session) fn set_policy(s: &mut Session, name: String) -> Result<Outcome> {
    let name = name.trim().to_ascii_lowercase();
    if name == s.policy_name() {
        return Ok(Outcome::Info(format!("the arrival policy is already {name}")));
    }
    let policy = engine::policy_by_name(&name, &s.scenario.policy)?;
    s.checkpoint();
    s.state.engine.set_policy(policy);
    let msg = format!("arrival policy: {name}");
    s.note(EventKind::Setting, msg.clone());
    s.changed();
    Ok(Outcome::Changed(msg))
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}
