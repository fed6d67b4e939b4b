//! The defragmentation pass (`:defrag`): its plan put under preview, like an optimizer's.

use crate::ops::defrag::Goal;
use crate::session::{build_preview, EventKind, Outcome, PlanProposal, Session};
use anyhow::{bail, Result};

pub(in crate::session) fn defrag(s: &mut Session, goal: Goal) -> Result<Outcome> {
    if s.state.preview.as_ref().is_some_and(|p| p.done > 0) {
        bail!("a plan is being played: apply it or undo first");
    }
    let d = crate::ops::defrag::defrag(s.fleet(), goal)?;
    let freed: Vec<String> = d
        .freed_gpus
        .iter()
        .map(|&(h, k)| s.fleet().gpu_label(h, k))
        .collect();
    let mut msg = format!(
        "defrag: {} share move(s), {} restart(s) at deploy, GPUs freed: {}",
        d.share_moves.len(),
        d.restarts.len(),
        if freed.is_empty() {
            "none".into()
        } else {
            freed.join(" ")
        }
    );
    for w in &d.whole_requests {
        let Some(h) = w.host else { continue };
        let name = &s.fleet().hosts[h].name;
        if w.started {
            msg += &format!("; pending VM {} starts on {name}", w.vm);
            if !w.switch.is_empty() {
                msg += &format!(" after {} GPU(s) switch to whole", w.switch.len());
            }
        } else {
            msg += &format!("; pending VM {} fits on {name}", w.vm);
            if !w.switch.is_empty() {
                msg += " after `:mode ... whole`";
            }
        }
    }
    if let Some(why) = &d.short {
        msg += &format!("; {why}");
    }
    if d.plan.targets.is_empty() {
        return Ok(Outcome::Info(format!("{msg}: nothing to do")));
    }
    let proposal = PlanProposal {
        status: if d.exact {
            "minimum"
        } else {
            "search budget reached"
        }
        .into(),
        ..PlanProposal::by_hand(d.plan, s.state.revision)
    };
    let preview = build_preview(s.fleet(), proposal, 24.0, s.scenario.policy.origamig.delta)?;
    s.note(EventKind::Plan, msg.clone());
    // A preview is not a change to the fleet: no undo entry, no modified mark.
    s.state.preview = Some(preview);
    Ok(Outcome::Info(format!("{msg}: a apply, d discard")))
}
