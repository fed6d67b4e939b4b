//! The `origamig` and `opt` placement policies (§5, §6.3).
//!
//! Both place an arriving request by FF (the arrival rule of §5.1) and queue it when FF fails.
//! Every `check_every_s` of simulated time the triggers of §5.1 decide whether to call: an
//! admission call while the queue is not empty, else a consolidation call for a class whose gap
//! reached θ. `origamig` selects the neighborhood by Algorithm 1; `opt` solves the BILP over the
//! whole fleet instead (for small fleets: each call is bounded by the call budget only,
//! `node_limit` and `lp_iteration_limit`, with the safety clock `sim_time_limit_s` in the
//! planner's play). A call's plan goes back to the
//! simulator as a [`Plan`]; the pending VMs it rejects are handed over
//! through [`Policy::take_rejected`].
//!
//! A call runs until the executor's last step ends (§5.4: "while a call runs, the arrival rule
//! places no request on M̂, and a departure only removes steps"): the simulator applies a plan at
//! once, and the policy holds M̂ for as long as the steps take one after another
//! ([`Schedule::duration_s`] at `migration_gbps`, the same clock TC's compactions keep, §6.3).
//! Until then no other call starts (§5.1: one call at a time) and arrivals go to the hosts
//! outside M̂. The solve itself takes no simulated time.

use super::bilp::{SolveControl, SolveStatus};
use super::call::{self, CallMode, Proposal};
use super::neighborhood::{self, Neighborhood};
use super::triggers::{CallKind, Triggers};
use crate::executor::Schedule;
use crate::fleet::{Fleet, Host, HostId, Placement, Vm, VmId};
use crate::metrics::CallTally;
use crate::plan::Plan;
use crate::policy::tc::Scope;
use crate::policy::Policy;
use crate::policy_settings::OrigamigSettings;
use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Counters of the calls a policy made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallStats {
    pub admission_calls: u64,
    pub consolidation_calls: u64,
    /// Calls whose plan was applied (strictly better and executable).
    pub applied: u64,
    /// Calls whose plan the executor discarded (no parking place).
    pub discarded: u64,
    /// Calls the solver proved optimal.
    pub optimal: u64,
    /// Calls that failed (a solver error); the fleet was left as it was.
    pub failed: u64,
    /// The last failure, for diagnostics.
    pub last_error: Option<String>,
    /// Calls ended by the node budget or by the wall clock.
    pub limited: crate::policy::LimitedCalls,
}

/// How one call the triggers started ended, for [`CallTally`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallEnd {
    /// The solver ran; whether the call changed the placements, and the migrations (moves and
    /// parking moves) of the plan it applied.
    Solved { changed: bool, moves: usize },
    /// The neighborhood had nothing to decide.
    Empty,
    /// The neighborhood was one a solve had proven optimal as it stood ([`ProvenUnchanged`]).
    Repeat,
}

/// What OrigaMIG's calls have done, recorded once for [`Origamig`] and [`super::Partitioned`]:
/// the log [`Policy::call_log`] returns, and the tallies by trigger and neighborhood.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CallRecorder {
    log: crate::policy::CallLog,
    tallies: CallTallies,
}

impl CallRecorder {
    /// Records one call fired by `trigger` on `nb` that took `s` seconds and ended as `end`: a
    /// solve adds its time and |N̂| to the log, an empty neighborhood counts as a trigger check.
    pub(crate) fn record(&mut self, trigger: &'static str, nb: &Neighborhood, end: CallEnd, s: f64) {
        match end {
            CallEnd::Solved { .. } => {
                self.log.times_s.push(s);
                self.log.vms.push(nb.n_vms);
            }
            CallEnd::Empty => {
                self.log.trigger_checks += 1;
                self.log.trigger_check_s += s;
            }
            CallEnd::Repeat => {}
        }
        self.tallies.record(trigger, nb, end, s);
    }

    /// The log so far, with the calls `limited` counted.
    pub fn log(&self, limited: crate::policy::LimitedCalls) -> crate::policy::CallLog {
        crate::policy::CallLog {
            limited,
            tallies: self.tallies.rows(),
            calls: self.log.times_s.len(),
            ..self.log.clone()
        }
    }
}

/// The calls of a run by trigger and neighborhood ([`CallTally`]), in a fixed order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CallTallies(Vec<CallTally>);

impl CallTallies {
    /// Counts one call fired by `trigger` ([`Triggers::cause`]) on `nb` that took `s` seconds.
    pub(crate) fn record(&mut self, trigger: &'static str, nb: &Neighborhood, end: CallEnd, s: f64) {
        let neighborhood = match (&nb.kind, nb.merge) {
            (CallKind::Whole, _) => "whole",
            (_, true) => "merge",
            (_, false) => "algorithm1",
        };
        let at = match self
            .0
            .iter()
            .position(|t| t.trigger == trigger && t.neighborhood == neighborhood)
        {
            Some(i) => i,
            None => {
                self.0.push(CallTally {
                    trigger,
                    neighborhood,
                    ..CallTally::default()
                });
                let order = |t: &CallTally| {
                    let tr = ["admission", "gap", "host_gap", "whole"]
                        .iter()
                        .position(|x| *x == t.trigger);
                    let nb = ["algorithm1", "merge", "whole"]
                        .iter()
                        .position(|x| *x == t.neighborhood);
                    (tr, nb)
                };
                self.0.sort_by_key(order);
                self.0
                    .iter()
                    .position(|t| t.trigger == trigger && t.neighborhood == neighborhood)
                    .unwrap_or(0)
            }
        };
        let t = &mut self.0[at];
        match end {
            CallEnd::Solved { changed, moves } => {
                t.solved += 1;
                t.moves += moves as u64;
                t.solved_s += s;
                if !changed {
                    t.unchanged += 1;
                    t.unchanged_s += s;
                }
            }
            CallEnd::Empty => {
                t.empty += 1;
                t.empty_s += s;
            }
            CallEnd::Repeat => {
                t.repeat += 1;
                t.repeat_s += s;
            }
        }
    }

    pub fn rows(&self) -> Vec<CallTally> {
        self.0.clone()
    }
}

/// A consolidation neighborhood as the solver sees it: its hosts in order with everything on
/// them, and their VMs. The model of a call reads the fleet only through these (and the catalog
/// and the settings, fixed for a policy), so two calls on equal keys solve the same BILP.
#[derive(Debug, Clone, PartialEq)]
struct NeighborhoodKey {
    hosts: Vec<(HostId, Host)>,
    vms: Vec<Vm>,
}

impl NeighborhoodKey {
    fn of(fleet: &Fleet, nb: &Neighborhood) -> Self {
        let hosts: Vec<(HostId, Host)> = nb.hosts.iter().map(|&h| (h, fleet.hosts[h].clone())).collect();
        let vms = hosts
            .iter()
            .flat_map(|(_, h)| h.vms.iter())
            .filter_map(|&id| fleet.vm(id).cloned())
            .collect();
        NeighborhoodKey { hosts, vms }
    }
}

/// Consolidation neighborhoods on which a solve proved the current placement optimal: the solver
/// reached [`SolveStatus::Optimal`] and returned the placement as it stood. A later call on an
/// equal neighborhood ([`NeighborhoodKey`]) solves the same BILP, whose optimum is then still the
/// current placement's value, so no plan can be strictly better (§5.3) and the call can only
/// change nothing: it is skipped. The last [`ProvenUnchanged::KEEP`] are kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProvenUnchanged(Vec<NeighborhoodKey>);

impl ProvenUnchanged {
    const KEEP: usize = 64;

    /// Whether a consolidation call on `nb` is proven to change nothing.
    pub fn contains(&self, fleet: &Fleet, nb: &Neighborhood) -> bool {
        if !matches!(nb.kind, CallKind::Consolidation(_)) || nb.is_empty() || self.0.is_empty() {
            return false;
        }
        let key = NeighborhoodKey::of(fleet, nb);
        self.0.contains(&key)
    }

    /// Remembers the neighborhood of a consolidation call whose solve proved the current
    /// placement optimal.
    pub(crate) fn learn(&mut self, fleet: &Fleet, p: &Proposal) {
        let proven = matches!(p.neighborhood.kind, CallKind::Consolidation(_))
            && p.status == Some(SolveStatus::Optimal)
            && p.plan.targets.is_empty()
            && !p.neighborhood.is_empty();
        if !proven {
            return;
        }
        let key = NeighborhoodKey::of(fleet, &p.neighborhood);
        if self.0.contains(&key) {
            return;
        }
        if self.0.len() >= Self::KEEP {
            self.0.remove(0);
        }
        self.0.push(key);
    }
}

/// For tests (`set_check_repeats`): solves a consolidation call skipped as a repeat anyway and
/// panics if it would propose a move (the skip would then not be exact).
pub(crate) fn check_skipped_repeat(
    fleet: &Fleet,
    kind: &CallKind,
    settings: &OrigamigSettings,
    nb: &Neighborhood,
) {
    let control = SolveControl::default();
    let again = call::call_on(
        fleet,
        CallMode::Consolidation,
        kind.clone(),
        settings,
        &control,
        nb.clone(),
        Instant::now(),
    );
    if let Ok(p) = again {
        assert!(
            !p.improves && p.plan.targets.is_empty(),
            "a skipped repeat call would have proposed {} moves (improves: {})",
            p.plan.targets.len(),
            p.improves
        );
    }
}

/// OrigaMIG (`whole = false`) or OPT (`whole = true`) as an online policy.
#[derive(Debug, Clone)]
pub struct Origamig {
    settings: OrigamigSettings,
    /// Live-migration bandwidth (Gbit/s) that times a plan's steps (`[policy] migration_gbps`).
    migration_gbps: f64,
    whole: bool,
    triggers: Triggers,
    /// What the calls have done ([`Policy::call_log`]).
    calls: CallRecorder,
    /// Neighborhoods proven to change nothing.
    proven: ProvenUnchanged,
    /// For tests: solve the repeats anyway and panic if one would change the fleet.
    check_repeats: bool,
    rejected: Vec<VmId>,
    stats: CallStats,
    /// M̂ of the call whose steps are still running, and when the last of them ends.
    running: BTreeSet<HostId>,
    running_until: f64,
    /// The GPUs (host, index) the running compaction of big hosts moves VMs from, which take no
    /// arrival until its moves end (`gpu_compaction_hold_hosts = false`: its hosts stay open).
    held_gpus: BTreeSet<(HostId, usize)>,
    /// Set by the planner while it steps time on a worker thread, so that a cancel stops a
    /// running solve instead of waiting for its time limit.
    cancel: crate::policy::CancelFlag,
    /// TC's tables for the arrival rule's best fit on big hosts (`arrival_gpu_best_fit`).
    tables: crate::policy::cache::Lazy,
    /// When the next GPU compaction on big hosts is due (`gpu_compaction`), simulated seconds.
    next_gpu_compaction: Option<f64>,
    /// When the next GPU compaction on two-GPU hosts is due (`gpu_compaction_small`).
    next_small_compaction: Option<f64>,
    /// The moves the GPU compaction of big hosts may still make
    /// (`gpu_compaction_moves_per_departure`).
    move_account: f64,
}

/// A copy of `fleet` where the GPUs `held` (host, index) show every memory slice taken, so that no
/// arrival rule places a GI there: the sources of a running compaction's moves
/// (`gpu_compaction_hold_hosts = false`). Placement searches confirm each candidate against the
/// GPUs themselves, so first fit's index of free room may stay as it is (it only over-states).
fn with_gpus_full(fleet: &Fleet, held: &BTreeSet<(HostId, usize)>) -> Fleet {
    let mut f = fleet.clone();
    let catalog = fleet.catalog;
    for &(h, k) in held {
        if let Some(g) = f.hosts.get_mut(h).and_then(|x| x.gpus.get_mut(k)) {
            g.occ.mask = catalog.model(g.model).full_mask();
        }
    }
    f
}

/// The arrival rule's GPUs on a big host (`arrival_gpu_best_fit`): FF chose `p`'s host; on a
/// host of more than two GPUs the VM's GIs go to its GPUs by TC's best fit, else `p` stands.
pub(super) fn arrival_best_fit(
    settings: &OrigamigSettings,
    tables: &mut crate::policy::cache::Lazy,
    fleet: &Fleet,
    vm: &Vm,
    p: Placement,
) -> Placement {
    let big_host = fleet
        .hosts
        .get(p.host)
        .is_some_and(|h| h.gpus.len() > super::neighborhood::PAPER_HOST_GPUS);
    if !settings.arrival_gpu_best_fit || !(big_host || settings.arrival_best_fit_small) || !vm.is_mig() {
        return p;
    }
    let t = tables.get(fleet.catalog);
    crate::policy::tc::placement_with_affinity(
        &t,
        fleet,
        vm,
        |h| h == p.host,
        settings.arrival_kind_affinity,
        if big_host {
            settings.arrival_fragmentation
        } else {
            0.0
        },
    )
    .unwrap_or(p)
}

/// `arrival_host_best_fit` on a fleet of big hosts: TC's placement among the active hosts that
/// `open` allows, or `None` (then FF decides, switching a host on).
pub(super) fn arrival_host_best_fit(
    settings: &OrigamigSettings,
    tables: &mut crate::policy::cache::Lazy,
    fleet: &Fleet,
    vm: &Vm,
    open: impl Fn(HostId) -> bool,
) -> Option<Placement> {
    if !settings.arrival_host_best_fit || !vm.is_mig() {
        return None;
    }
    let big_fleet = fleet
        .hosts
        .iter()
        .any(|h| h.gpus.len() > super::neighborhood::PAPER_HOST_GPUS);
    if !(big_fleet || settings.arrival_best_fit_small) {
        return None;
    }
    let t = tables.get(fleet.catalog);
    crate::policy::tc::placement_with_affinity(
        &t,
        fleet,
        vm,
        |h| fleet.hosts[h].is_active() && open(h),
        settings.arrival_kind_affinity,
        if big_fleet {
            settings.arrival_fragmentation
        } else {
            0.0
        },
    )
}

/// The GPU compaction of the big hosts (`gpu_compaction`) as one plan for the planner, on every
/// active host of more than two GPUs: the policy's rules for which GPUs are vacated and where
/// their VMs go (`gpu_compaction_across`, `_across_tenant`, `_toward_fuller`,
/// `_fewest_vms_first`, `_idle_gpu`), without its rates (the moves a departure earns, the budget
/// of moves across hosts per compaction), which pace a simulation and not a plan a planner reads
/// before applying it. Empty when `gpu_compaction` is off or no GPU can be vacated.
pub fn gpu_compaction_plan(fleet: &Fleet, settings: &OrigamigSettings) -> Plan {
    if !settings.gpu_compaction {
        return Plan::default();
    }
    let in_scope = |h: HostId| compacted(fleet, h, true);
    if !(0..fleet.hosts.len()).any(in_scope) {
        return Plan::default();
    }
    let mut tables = crate::policy::cache::Lazy::default();
    let tables = tables.get(fleet.catalog);
    let scope = Scope {
        across_budget: 0,
        move_budget: None,
        ..compaction_scope(settings, &in_scope, true)
    };
    crate::policy::tc::compaction_in(&tables, fleet, scope, GPU_COMPACTION_ORIGIN)
}

/// The GPU compaction the planner's `o` and `migplan solve` offer after the call `call` on
/// `fleet`: [`gpu_compaction_plan`] when an auto call has nothing to do (no plan, none
/// discarded), else an empty plan.
pub fn gpu_compaction_after(fleet: &Fleet, call: &Proposal, settings: &OrigamigSettings) -> Plan {
    if call.mode != CallMode::Auto || !call.plan.targets.is_empty() || call.discarded.is_some() {
        return Plan::default();
    }
    gpu_compaction_plan(fleet, settings)
}

/// The origin of the GPU compaction's plans (the key of its moves in `migrations_by_origin`).
pub const GPU_COMPACTION_ORIGIN: &str = "origamig gpu compaction";

/// Whether host `h` takes part in the GPU compaction of the big hosts (`big`: more than two
/// GPUs) or of the others: it is of that size and active.
fn compacted(fleet: &Fleet, h: HostId, big: bool) -> bool {
    fleet
        .hosts
        .get(h)
        .is_some_and(|x| (x.gpus.len() > super::neighborhood::PAPER_HOST_GPUS) == big && x.is_active())
}

/// The scope of the policy's GPU compaction of the big hosts (`big`) or of the others, on the
/// hosts `in_scope` holds, with its budget across hosts and no budget of moves (the policy sets
/// that from its account).
fn compaction_scope<'a>(s: &OrigamigSettings, in_scope: &'a dyn Fn(HostId) -> bool, big: bool) -> Scope<'a> {
    Scope {
        hosts: in_scope,
        within_host: true,
        across_max_vms: s.gpu_compaction_across,
        across_max_vms_tenant: s.gpu_compaction_across_tenant,
        toward_fuller: s.gpu_compaction_toward_fuller,
        across_budget: s.gpu_compaction_across_budget,
        move_budget: None,
        fewest_vms_first: big && s.gpu_compaction_fewest_vms_first,
        idle_gpus: big && s.gpu_compaction_idle_gpu,
        emptying_host_only: !big && s.gpu_compaction_small_empty_host,
        exact_fill: (s.gpu_compaction_toward_fuller && s.gpu_compaction_exact_fill)
            .then_some(s.gpu_compaction_exact_fill_spare),
        fragmentation: if big { s.gpu_compaction_fragmentation } else { 0.0 },
    }
}

impl Origamig {
    /// The `origamig` policy.
    pub fn new(settings: &OrigamigSettings) -> Self {
        Origamig {
            settings: settings.clone(),
            migration_gbps: crate::policy_settings::DEFAULT_MIGRATION_GBPS,
            whole: false,
            triggers: Triggers::new(),
            calls: CallRecorder::default(),
            proven: ProvenUnchanged::default(),
            check_repeats: false,
            rejected: Vec::new(),
            stats: CallStats::default(),
            running: BTreeSet::new(),
            running_until: f64::NEG_INFINITY,
            held_gpus: BTreeSet::new(),
            cancel: Default::default(),
            tables: Default::default(),
            next_gpu_compaction: None,
            next_small_compaction: None,
            move_account: 0.0,
        }
    }

    /// The `opt` policy: the same triggers, each call over the whole fleet.
    pub fn opt(settings: &OrigamigSettings) -> Self {
        Origamig {
            whole: true,
            ..Origamig::new(settings)
        }
    }

    /// The policy with its plans' steps timed at `gbps` Gbit/s (`[policy] migration_gbps`).
    pub(crate) fn with_migration_gbps(mut self, gbps: f64) -> Self {
        self.migration_gbps = gbps;
        self
    }

    pub fn stats(&self) -> &CallStats {
        &self.stats
    }

    /// For tests: every consolidation call skipped as a repeat of a neighborhood proven
    /// unchanged ([`ProvenUnchanged`]) is solved anyway, and the policy panics if that solve
    /// would propose any move.
    pub fn set_check_repeats(&mut self, on: bool) {
        self.check_repeats = on;
    }

    /// Whether a call's steps are still running at `now_s`.
    pub fn is_running(&self, now_s: f64) -> bool {
        now_s < self.running_until
    }

    /// Whether the arrival rule must leave `host` alone at `now_s`: it is in the M̂ of a running
    /// call.
    pub fn is_held(&self, host: HostId, now_s: f64) -> bool {
        self.is_running(now_s) && self.running.contains(&host)
    }

    /// Holds M̂ from `now_s` until the schedule's steps, run one after another, end.
    fn hold(&mut self, fleet: &Fleet, hosts: &[HostId], schedule: &Schedule, now_s: f64) {
        self.running = hosts.iter().copied().collect();
        self.held_gpus.clear();
        self.running_until = now_s + schedule.duration_s(fleet, self.migration_gbps);
    }

    /// `gpu_compaction`: every `gpu_compaction_min` of simulated time, when no call runs, TC's
    /// compaction of the GPUs of each active host of more than two GPUs within that host (a GPU
    /// of few VMs may send them across hosts, `gpu_compaction_across*`); with
    /// `gpu_compaction_small`, every `gpu_compaction_small_min` the same on the active hosts of
    /// two GPUs or fewer; else, with `host_emptying_vms`, every `host_emptying_min` the host
    /// emptying of those hosts ([`crate::policy::tc::empty_hosts_in`]). `None` for OPT, when
    /// neither is due, and when nothing moves.
    fn gpu_compaction(&mut self, fleet: &Fleet, now_s: f64) -> Option<Plan> {
        if !self.settings.gpu_compaction || self.whole {
            return None;
        }
        let big = self.compaction_of(fleet, now_s, true);
        if big.is_some() {
            return big;
        }
        if self.settings.gpu_compaction_small || self.settings.host_emptying_vms > 0 {
            return self.compaction_of(fleet, now_s, false);
        }
        None
    }

    /// One GPU compaction of the active hosts of more than two GPUs (`big`) or of the others
    /// (or their host emptying), when its period (`gpu_compaction_min`,
    /// `gpu_compaction_small_min` or `host_emptying_min`) has come and no call runs.
    fn compaction_of(&mut self, fleet: &Fleet, now_s: f64, big: bool) -> Option<Plan> {
        let s = &self.settings;
        let emptying = !big && !s.gpu_compaction_small;
        let period = 60.0
            * if big {
                s.gpu_compaction_min
            } else if emptying {
                s.host_emptying_min
            } else {
                s.gpu_compaction_small_min
            };
        if period.is_nan() || period <= 0.0 {
            return None;
        }
        let in_scope = |h: HostId| compacted(fleet, h, big);
        if !(0..fleet.hosts.len()).any(in_scope) {
            return None;
        }
        let running = self.is_running(now_s);
        let slot = if big {
            &mut self.next_gpu_compaction
        } else {
            &mut self.next_small_compaction
        };
        let next = *slot.get_or_insert(((now_s / period).floor() + 1.0) * period);
        // A running call's steps first: the compaction waits for the next step after them.
        if now_s + 1e-9 < next || running {
            return None;
        }
        let mut n = next;
        while n <= now_s + 1e-9 {
            n += period;
        }
        *slot = Some(n);
        let tables = self.tables.get(fleet.catalog);
        let scope = Scope {
            move_budget: (big && s.gpu_compaction_moves_per_departure > 0.0)
                .then_some(self.move_account.max(0.0).floor() as usize),
            ..compaction_scope(s, &in_scope, big)
        };
        let mut plan = if emptying {
            crate::policy::tc::empty_hosts_in(
                &tables,
                fleet,
                &in_scope,
                s.host_emptying_vms,
                s.host_emptying_budget,
                "origamig host emptying",
            )
        } else {
            crate::policy::tc::compaction_in(&tables, fleet, scope, GPU_COMPACTION_ORIGIN)
        };
        if big && plan.targets.is_empty() && s.host_emptying_big_vms > 0 {
            plan = crate::policy::tc::empty_hosts_in(
                &tables,
                fleet,
                &in_scope,
                s.host_emptying_big_vms,
                s.host_emptying_budget,
                "origamig host emptying",
            );
        }
        if plan.targets.is_empty() {
            return None;
        }
        if big && s.gpu_compaction_moves_per_departure > 0.0 {
            self.move_account -= plan.targets.len() as f64;
        }
        self.held_gpus.clear();
        if big && !s.gpu_compaction_hold_hosts {
            // Only the GPUs the moves leave are held: until a VM's copy ends its GIs still run
            // there, while the fleet already shows them free. Its destination is taken already.
            self.running = BTreeSet::new();
            self.held_gpus = plan.source_gpus(fleet);
        } else {
            self.running = plan.hosts(fleet);
        }
        self.running_until = now_s + crate::policy::tc::moves_duration_s(fleet, &plan, self.migration_gbps);
        Some(plan)
    }

    /// One check of the triggers and, if one fires, one call. Returns the plan to apply.
    fn check(&mut self, fleet: &Fleet, now_s: f64) -> Option<Plan> {
        if self.is_running(now_s) || !self.triggers.due(now_s, &self.settings) {
            return None;
        }
        let trigger = if self.settings.host_scaled_limits {
            // θ counted per GPU on big hosts (`host_scaled_limits`); two-GPU fleets keep θ.
            let g = neighborhood::most_gpus(fleet, &super::hostset::HostSet::all(fleet.hosts.len()));
            let theta = neighborhood::scaled_theta(self.settings.theta, g);
            if theta != self.settings.theta {
                let scaled = OrigamigSettings {
                    theta,
                    ..self.settings.clone()
                };
                self.triggers.next_call(fleet, &scaled)?
            } else {
                self.triggers.next_call(fleet, &self.settings)?
            }
        } else {
            self.triggers.next_call(fleet, &self.settings)?
        };
        match trigger {
            CallKind::Admission => self.stats.admission_calls += 1,
            _ => self.stats.consolidation_calls += 1,
        }
        let (mode, kind) = if self.whole {
            (CallMode::Opt, CallKind::Whole)
        } else {
            let mode = match trigger {
                CallKind::Admission => CallMode::Admission,
                _ => CallMode::Consolidation,
            };
            (mode, trigger.clone())
        };
        let control = SolveControl {
            cancel: self.cancel.for_solve(),
            limit: call::sim_limit(&self.cancel),
            ..SolveControl::default()
        };
        let cause = self.triggers.cause(&trigger);
        let t0 = Instant::now();
        let nb = neighborhood::select(fleet, &kind, &self.settings);
        if self.proven.contains(fleet, &nb) {
            // The same BILP as a solve that changed nothing: it would change nothing again.
            if self.check_repeats {
                check_skipped_repeat(fleet, &kind, &self.settings, &nb);
            }
            self.calls
                .record(cause, &nb, CallEnd::Repeat, t0.elapsed().as_secs_f64());
            self.triggers.after_call_on(fleet, &trigger, false, &nb.hosts);
            return None;
        }
        let p = match call::call_on(fleet, mode, kind, &self.settings, &control, nb, t0) {
            Ok(p) => p,
            Err(e) => {
                self.stats.failed += 1;
                self.stats.last_error = Some(format!("{e:#}"));
                // A failed admission call must still decide the oldest pending VM, or the same
                // call would repeat forever: reject it.
                if let (CallKind::Admission, Some(&oldest)) = (&trigger, fleet.pending().first()) {
                    self.rejected.push(oldest);
                }
                self.triggers.after_call(fleet, &trigger, false);
                return None;
            }
        };
        // A call whose neighborhood is empty (Algorithm 1 found nothing to do) solves nothing:
        // only calls that ran the solver have a call time.
        if p.status.is_some() {
            let end = CallEnd::Solved {
                changed: p.changes_placements(),
                moves: if p.improves { p.schedule.migrations() } else { 0 },
            };
            self.calls.record(cause, &p.neighborhood, end, p.call_s);
            self.proven.learn(fleet, &p);
        } else {
            self.calls
                .record(cause, &p.neighborhood, CallEnd::Empty, p.call_s);
        }
        if p.status == Some(SolveStatus::Optimal) {
            self.stats.optimal += 1;
        }
        self.stats.limited.count(p.status);
        if p.discarded.is_some() {
            self.stats.discarded += 1;
        }
        self.rejected.extend(p.rejected.iter().copied());
        self.triggers
            .after_call_on(fleet, &trigger, p.changes_placements(), &p.neighborhood.hosts);
        if p.improves {
            self.stats.applied += 1;
            self.hold(fleet, &p.neighborhood.hosts, &p.schedule, now_s);
            Some(p.plan)
        } else {
            None
        }
    }
}

impl Policy for Origamig {
    fn name(&self) -> &str {
        if self.whole {
            "opt"
        } else {
            "origamig"
        }
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    /// The arrival rule of §5.1: FF with the default GI placement, on the hosts outside the M̂
    /// of a running call (§5.4).
    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, now_s: f64) -> Option<Placement> {
        let masked;
        let fleet = if self.is_running(now_s) && !self.held_gpus.is_empty() {
            masked = with_gpus_full(fleet, &self.held_gpus);
            &masked
        } else {
            fleet
        };
        let settings = &self.settings;
        if settings.arrival_host_best_fit {
            let held: BTreeSet<HostId> = (0..fleet.hosts.len())
                .filter(|&h| self.is_held(h, now_s))
                .collect();
            let mut tables = self.tables.clone();
            let p = arrival_host_best_fit(settings, &mut tables, fleet, vm, |h| !held.contains(&h));
            self.tables = tables;
            if let Some(p) = p {
                return Some(p);
            }
        }
        let p = fleet.ff_placement_arrival(vm, settings.ff_active_first, |h| !self.is_held(h, now_s))?;
        Some(arrival_best_fit(settings, &mut self.tables, fleet, vm, p))
    }

    fn queues_unplaced(&self) -> bool {
        true
    }

    fn on_departure(&mut self, fleet: &Fleet, vm: &Vm, _now_s: f64) {
        self.triggers
            .on_departure(fleet, vm, vm.placement.as_ref().map(|p| p.host));
    }

    fn on_departure_from(&mut self, fleet: &Fleet, vm: &Vm, host: Option<HostId>, _now_s: f64) {
        let s = &self.settings;
        if s.gpu_compaction_moves_per_departure > 0.0
            && host
                .and_then(|h| fleet.hosts.get(h))
                .is_some_and(|h| h.gpus.len() > super::neighborhood::PAPER_HOST_GPUS)
        {
            let earned = self.move_account + s.gpu_compaction_moves_per_departure;
            self.move_account = earned.min(s.gpu_compaction_moves_cap);
        }
        self.triggers.on_departure(fleet, vm, host);
    }

    fn on_step(&mut self, fleet: &Fleet, now_s: f64) -> Option<Plan> {
        match self.check(fleet, now_s) {
            Some(p) => Some(p),
            None => self.gpu_compaction(fleet, now_s),
        }
    }

    fn take_rejected(&mut self) -> Vec<VmId> {
        std::mem::take(&mut self.rejected)
    }

    fn call_log(&self) -> crate::policy::CallLog {
        self.calls.log(self.stats.limited)
    }

    fn set_cancel(&mut self, cancel: Option<Arc<AtomicBool>>) {
        self.cancel = crate::policy::CancelFlag(cancel);
    }
}
