//! Playing a previewed plan one phase at a time: create the new GIs, migrate, destroy the old.

use crate::executor::{self, Schedule, StepKind};
use crate::session::handlers::plan::apply_steps;
use crate::session::{placement_label, EventKind, Outcome, PlanPhase, Session};
use anyhow::{bail, Result};

pub(in crate::session) fn plan_step(s: &mut Session) -> Result<Outcome> {
    let Some(mut p) = s.state.preview.clone() else {
        bail!("no plan to play: optimize first (o)");
    };
    if p.finished() {
        s.state.preview = None;
        return Ok(Outcome::Info("the plan is complete".into()));
    }
    s.checkpoint();
    let st = p.schedule.steps[p.done].clone();
    let label = placement_label(&p.after, &st.to);
    let msg = match (st.kind, p.phase) {
        (StepKind::SetMode(_) | StepKind::RestartAtDeploy | StepKind::Start, _) => {
            // One step that is whole at once: a mode switch, a restart at deploy, a start.
            let words = match st.kind {
                StepKind::SetMode(_) => executor::set_mode_text(&p.before, &st).unwrap_or_default(),
                StepKind::RestartAtDeploy => format!(
                    "VM {} stopped and started on {label} (restart at its next deploy, nothing copied)",
                    st.vm
                ),
                _ => format!("created the GIs of VM {} and started it on {label}", st.vm),
            };
            apply_steps(
                s,
                &Schedule {
                    steps: vec![st.clone()],
                    ..Default::default()
                },
            )?;
            p.done += 1;
            p.phase = PlanPhase::Pending;
            format!("step {}: {words}", p.done)
        }
        (_, PlanPhase::Pending) => {
            p.phase = PlanPhase::Created;
            format!(
                "step {}: created the new GIs of VM {} on {label}",
                p.done + 1,
                st.vm
            )
        }
        (_, PlanPhase::Created) => {
            apply_steps(
                s,
                &Schedule {
                    steps: vec![st.clone()],
                    ..Default::default()
                },
            )?;
            p.phase = PlanPhase::Migrated;
            format!("step {}: migrated VM {} to {label}", p.done + 1, st.vm)
        }
        (_, PlanPhase::Migrated) => {
            p.done += 1;
            p.phase = PlanPhase::Pending;
            format!("step {}: destroyed the old GIs of VM {}", p.done, st.vm)
        }
    };
    let finished = p.finished();
    s.state.preview = if finished { None } else { Some(p) };
    s.changed();
    if finished {
        s.note(EventKind::Plan, "plan complete".into());
        return Ok(Outcome::Changed(format!("{msg}; plan complete")));
    }
    Ok(Outcome::Changed(msg))
}
