//! The previewed plan: apply the rest, play one phase of a step, discard.

use crate::executor::Schedule;
use crate::session::{EventKind, Outcome, PlanPhase, Session, DEFRAG_ORIGIN};
use anyhow::{bail, Result};

pub(in crate::session) fn apply_plan(s: &mut Session) -> Result<Outcome> {
    let Some(p) = s.state.preview.clone() else {
        bail!("no plan to apply: optimize first (o)");
    };
    s.checkpoint();
    let rest = Schedule {
        steps: p.schedule.steps[p.done..].to_vec(),
        ..Default::default()
    };
    let n = rest.steps.len();
    apply_steps(s, &rest)?;
    let msg = format!(
        "applied the {} plan: {} step(s); active hosts {} -> {}, active GPUs {} -> {}",
        if p.proposal.plan.origin == DEFRAG_ORIGIN {
            DEFRAG_ORIGIN
        } else if p.proposal.plan.origin == crate::session::GPU_COMPACTION_ORIGIN {
            crate::session::GPU_COMPACTION_STATUS
        } else {
            p.proposal.mode.name()
        },
        p.schedule.steps.len(),
        p.before.active_hosts(),
        s.fleet().active_hosts(),
        p.before.active_gpus(),
        s.fleet().active_gpus()
    );
    s.note(EventKind::Plan, msg.clone());
    s.state.preview = None;
    s.changed();
    let _ = n;
    Ok(Outcome::Changed(msg))
}

pub(in crate::session) fn discard_plan(s: &mut Session) -> Result<Outcome> {
    let Some(p) = s.state.preview.take() else {
        return Ok(Outcome::Info("no plan to discard".into()));
    };
    if p.done > 0 || p.phase != PlanPhase::Pending {
        // Part of the plan ran: discarding keeps what ran (undo takes it back).
        s.checkpoint();
        s.note(
            EventKind::Plan,
            format!(
                "plan stopped after {} of {} steps",
                p.done,
                p.schedule.steps.len()
            ),
        );
        if p.phase == PlanPhase::Migrated {
            s.state.preview = None;
        }
        s.changed();
        return Ok(Outcome::Changed(
            "plan stopped; the steps played stay applied".into(),
        ));
    }
    Ok(Outcome::Info("plan discarded".into()))
}

/// Runs schedule steps on the simulator and logs what they did.
pub(in crate::session) fn apply_steps(s: &mut Session, schedule: &Schedule) -> Result<()> {
    let r = s.state.engine.apply_schedule(schedule);
    s.pull_events();
    r
}
