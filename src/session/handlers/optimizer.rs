//! OrigaMIG calls (§5): a solve handed out to run ([`Outcome::Solve`]), its proposal taken in
//! as a plan preview.

use crate::session::{build_preview, CallMode, Outcome, PlanProposal, Session, SolveRequest};
use anyhow::{bail, Result};

pub(in crate::session) fn optimize(s: &mut Session, mode: CallMode) -> Result<Outcome> {
    if s.state.preview.as_ref().is_some_and(|p| p.done > 0) {
        bail!("a plan is being played: apply it or undo first");
    }
    if mode == CallMode::Admission && s.fleet().pending().is_empty() {
        bail!("no request waits: an admission call has nothing to admit");
    }
    Ok(Outcome::Solve(Box::new(SolveRequest {
        mode,
        fleet: s.fleet().clone(),
        settings: s.scenario.policy.origamig.clone(),
        revision: s.state.revision,
    })))
}

pub(in crate::session) fn proposed(s: &mut Session, p: Box<PlanProposal>) -> Result<Outcome> {
    if p.revision != s.state.revision {
        bail!("the fleet changed while the optimizer ran; its plan was dropped (run it again)");
    }
    if let Some(why) = &p.discarded {
        return Ok(Outcome::Info(format!(
            "the {} call's plan cannot be ordered into steps ({why}); nothing changes",
            p.mode.name()
        )));
    }
    if p.plan.targets.is_empty() && p.hosts.is_empty() {
        // Algorithm 1 found no neighborhood: say why, as `migplan solve` does.
        let why = if s.fleet().pending().is_empty() {
            "nothing waits and no host's VMs fit in the others' free room, so no host can go off"
        } else {
            "no waiting request fits on any host, even with its VMs rearranged"
        };
        return Ok(Outcome::Info(format!(
            "the {} call had nothing to decide: {why} ({:.1} s)",
            p.mode.name(),
            p.solve_s
        )));
    }
    if p.plan.targets.is_empty() {
        return Ok(Outcome::Info(format!(
            "the {} call found nothing better than the current placement ({}, {:.1} s)",
            p.mode.name(),
            p.status,
            p.solve_s
        )));
    }
    let compaction = p.plan.origin == crate::session::GPU_COMPACTION_ORIGIN;
    let preview = build_preview(s.fleet(), *p, 24.0, s.scenario.policy.origamig.delta)?;
    if compaction {
        let msg = format!(
            "GPU compaction: {} move(s) free {} whole GPU(s) ({}): a apply, d discard",
            preview.schedule.migrations(),
            -preview.delta_gpus(),
            if s.fleet().pending().is_empty() {
                "the call switches no host off and nothing waits"
            } else {
                "the call admits no waiting request"
            }
        );
        s.state.preview = Some(preview);
        return Ok(Outcome::Info(msg));
    }
    let msg = format!(
        "plan: {} step(s), {} admitted, active hosts {:+}, GPUs {:+}: a apply, d discard",
        preview.schedule.steps.len(),
        preview.admitted.len(),
        preview.delta_hosts(),
        preview.delta_gpus()
    );
    // A preview is not a change to the fleet: no undo entry, no modified mark.
    s.state.preview = Some(preview);
    Ok(Outcome::Info(msg))
}
