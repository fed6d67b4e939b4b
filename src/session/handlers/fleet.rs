//! VMs by hand: add (placed by the arrival policy or pinned), remove, move.

use crate::fleet::{Placement, Vm, VmId};
use crate::session::{placement_label, shape, unplaced_reason, EventKind, Outcome, Session, VmRequest};
use anyhow::{anyhow, bail, Result};

pub(in crate::session) fn add_vm(s: &mut Session, req: VmRequest) -> Result<Outcome> {
    if req.gis.is_empty() && req.cores == 0 {
        bail!("a VM needs at least one GI or some cores");
    }
    let fleet = s.fleet();
    let vm = Vm {
        shape: req.shape,
        kind: req.kind,
        arrival: s.now_s(),
        lifetime: req.lifetime_s,
        tenant: req.tenant.clone(),
        ..Vm::job(0, req.gis.clone(), req.cores, req.ram_gb)
    };
    fleet.validate_request(&vm)?;
    let shape = shape(fleet, &vm);
    if let Some(pin) = &req.pin {
        let mut v = vm.clone();
        v.id = fleet.next_vm_id();
        fleet
            .validate_placement(&v, pin, false)
            .map_err(|e| anyhow!("cannot pin {shape} at {}: {e}", placement_label(fleet, pin)))?;
    }
    s.checkpoint();
    let (id, placed) = s.state.engine.submit(vm, req.pin)?;
    let outcome = if placed {
        let p = s.fleet().vm(id).and_then(|v| v.placement.clone());
        Outcome::Changed(format!(
            "VM {id} ({shape}) placed on {}",
            p.map(|p| placement_label(s.fleet(), &p)).unwrap_or_default()
        ))
    } else if s.fleet().vm(id).is_none() {
        // Shares and gangs are never queued: with no room the simulator refuses them.
        Outcome::Pending(format!(
            "VM {id} ({shape}) refused: no GPU has room for it (shares and gangs do not wait)"
        ))
    } else {
        let v = s.fleet().vm(id).cloned();
        let why = v
            .map(|v| unplaced_reason(s.fleet(), &v))
            .unwrap_or_else(|| "unknown".into());
        Outcome::Pending(format!("VM {id} ({shape}) does not fit: pending. {why}"))
    };
    s.changed();
    Ok(outcome)
}

pub(in crate::session) fn remove_vm(s: &mut Session, id: VmId) -> Result<Outcome> {
    let vm = s.fleet().vm(id).ok_or_else(|| anyhow!("no VM {id}"))?.clone();
    s.checkpoint();
    s.state.engine.remove_vm(id)?;
    let msg = format!("removed VM {id} ({})", shape(s.fleet(), &vm));
    s.note(EventKind::Removal, msg.clone());
    s.changed();
    Ok(Outcome::Changed(msg))
}

pub(in crate::session) fn move_vm(s: &mut Session, vm: VmId, to: Placement) -> Result<Outcome> {
    let v = s.fleet().vm(vm).ok_or_else(|| anyhow!("no VM {vm}"))?;
    if v.placement.is_none() {
        bail!("VM {vm} is pending, not placed: it cannot be moved");
    }
    s.fleet()
        .validate_placement(v, &to, true)
        .map_err(|e| anyhow!("move of VM {vm} refused: {e}"))?;
    s.checkpoint();
    s.state.engine.fleet_mut().move_vm(vm, to.clone())?;
    let msg = format!("moved VM {vm} to {}", placement_label(s.fleet(), &to));
    s.note(EventKind::Migration, msg.clone());
    s.state.preview = None;
    s.changed();
    Ok(Outcome::Changed(msg))
}
