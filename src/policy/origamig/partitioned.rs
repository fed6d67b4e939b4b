//! Partitioned OrigaMIG: one instance per partition of the fleet, calls in parallel.
//!
//! §6.5 sees the gain of one instance over FF shrink as the fleet grows (one call per 10 s step
//! cannot keep up) and suggests one instance per partition, with calls on disjoint neighborhoods
//! running in parallel. The setting `partitions = K` builds that:
//!
//! - Partitions are K host sets, as equal as possible; K above the host count is cut to it. The
//!   setting `partition_hosts = N` gives K = ceil(n / N) instead (no partition above N hosts).
//!   By default (`partition_interleaved`) partition i holds hosts i, i + K, ...: FF fills the
//!   fleet from its first host, so each partition then holds full and emptier hosts alike.
//!   Otherwise (`preset = "paper"`) they are contiguous ranges in fleet order (racks; the first
//!   `n mod K` get one host more).
//! - Each partition runs an OrigaMIG instance with its own triggers (Γh over its hosts), its own
//!   calls, its own "one call at a time" hold (§5.4), and neighborhoods (Algorithm 1) taken from
//!   its hosts only.
//! - Arrivals: FF over the whole fleet (§5.1), on the hosts outside the M̂ of every running call.
//!   A request FF cannot place waits in Q. Each step, every pending VM is handed to one partition
//!   by the same first-fit rule over the hosts of the partitions not holding a call, using the fit
//!   test of §5.2: the partition of the first active host whose free resources fit the VM, else of
//!   the first switched-off host that fits it, else of the first active host that would fit it
//!   empty, else (no host could ever take it: Algorithm 1 line 12 rejects it) the first such
//!   partition. That partition's admission call decides it; a VM that no idle partition can take
//!   waits for the next step.
//! - Each step, every idle partition whose check is due picks its call; the calls run in parallel
//!   on rayon's pool (the fleet is only read), and their plans are applied afterwards in
//!   partition order. Nothing depends on which thread ran which call, so a seed's figures are the
//!   same for any thread count (HiGHS keeps one thread per call: its thread count is global to the
//!   process).
//! - A plan whose executor steps would park a VM on a host of another partition is discarded
//!   like a plan without a parking place: moves never cross partitions.

use super::bilp::{SolveControl, SolveStatus};
use super::call::{self, CallMode, Proposal};
use super::hostset::HostSet;
use super::neighborhood::{self, Neighborhood, Scope};
use super::policy::{check_skipped_repeat, CallEnd, CallRecorder, CallStats, ProvenUnchanged};
use super::triggers::{CallKind, Triggers};
use crate::fleet::{Fleet, HostId, Placement, Vm, VmId};
use crate::plan::Plan;
use crate::policy::{CancelFlag, Policy};
use crate::policy_settings::OrigamigSettings;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One partition's instance.
#[derive(Debug, Clone)]
struct Part {
    hosts: HostSet,
    triggers: Triggers,
    /// M̂ of the call whose steps are still running, and when the last of them ends.
    running: Vec<HostId>,
    running_until: f64,
    /// Consolidation neighborhoods of this partition a solve proved unchanged: an equal one is
    /// skipped as a repeat, as by one instance.
    proven: ProvenUnchanged,
}

impl Part {
    fn is_running(&self, now_s: f64) -> bool {
        now_s < self.running_until
    }
}

/// The `origamig` policy with `partitions` > 1.
#[derive(Debug, Clone)]
pub struct Partitioned {
    settings: OrigamigSettings,
    /// Live-migration bandwidth (Gbit/s) that times a plan's steps (`[policy] migration_gbps`).
    migration_gbps: f64,
    /// Built on first use from the fleet's host count.
    parts: Vec<Part>,
    /// The host count the partitions were built for.
    fleet_hosts: Option<usize>,
    /// What the calls have done ([`Policy::call_log`]).
    calls: CallRecorder,
    rejected: Vec<VmId>,
    stats: CallStats,
    cancel: CancelFlag,
    /// For tests: solve the repeats anyway and panic if one would change the fleet.
    check_repeats: bool,
    /// TC's tables for the arrival rule's best fit on big hosts (`arrival_gpu_best_fit`).
    tables: crate::policy::cache::Lazy,
}

/// Whether a call's steps reach outside its partition's hosts.
fn crosses_of(p: &Proposal, hosts: &HostSet) -> bool {
    p.schedule
        .steps
        .iter()
        .any(|s| !hosts.contains(s.to.host) || s.from.as_ref().is_some_and(|f| !hosts.contains(f.host)))
}

/// The host ranges of `k` partitions of `n` hosts: contiguous, in fleet order, sizes differing by
/// at most one (the first `n mod k` have one more); `k` is cut to `n` (at least one partition).
pub fn ranges(n: usize, k: usize) -> Vec<Range<HostId>> {
    let k = k.clamp(1, n.max(1));
    let (base, extra) = (n / k, n % k);
    let mut out = Vec::with_capacity(k);
    let mut at = 0;
    for i in 0..k {
        let len = base + usize::from(i < extra);
        out.push(at..at + len);
        at += len;
    }
    out
}

/// The hosts of `k` partitions of `n` hosts: the contiguous [`ranges`], or with `interleaved`
/// partition i holds hosts i, i + k, i + 2k, ... (`k` cut to `n` as for [`ranges`]).
pub fn host_sets(n: usize, k: usize, interleaved: bool) -> Vec<HostSet> {
    if interleaved {
        let k = k.clamp(1, n.max(1));
        (0..k).map(|i| HostSet::strided(i, n, k)).collect()
    } else {
        ranges(n, k).into_iter().map(HostSet::range).collect()
    }
}

/// The number of partitions of a fleet of `n` hosts: ceil(n / `partition_hosts`) when that is
/// set, else `partitions`.
pub fn count(n: usize, settings: &OrigamigSettings) -> usize {
    match settings.partition_hosts {
        0 => settings.partitions,
        size => n.div_ceil(size).max(1),
    }
}

impl Partitioned {
    pub fn new(settings: &OrigamigSettings) -> Self {
        Partitioned {
            settings: settings.clone(),
            migration_gbps: crate::policy_settings::DEFAULT_MIGRATION_GBPS,
            parts: Vec::new(),
            fleet_hosts: None,
            calls: CallRecorder::default(),
            rejected: Vec::new(),
            stats: CallStats::default(),
            cancel: CancelFlag::default(),
            check_repeats: false,
            tables: Default::default(),
        }
    }

    /// For tests: every consolidation call skipped as a repeat of a neighborhood proven
    /// unchanged is solved anyway, and the policy panics if it would change the fleet.
    pub fn set_check_repeats(&mut self, on: bool) {
        self.check_repeats = on;
    }

    /// The policy with its plans' steps timed at `gbps` Gbit/s (`[policy] migration_gbps`).
    pub(crate) fn with_migration_gbps(mut self, gbps: f64) -> Self {
        self.migration_gbps = gbps;
        self
    }

    pub fn stats(&self) -> &CallStats {
        &self.stats
    }

    /// The hosts of the partitions (empty until the policy first sees the fleet).
    pub fn partitions(&self) -> Vec<HostSet> {
        self.parts.iter().map(|p| p.hosts.clone()).collect()
    }

    fn ensure_parts(&mut self, fleet: &Fleet) {
        let n = fleet.hosts.len();
        if self.fleet_hosts != Some(n) {
            self.fleet_hosts = Some(n);
            self.parts = host_sets(n, count(n, &self.settings), self.settings.partition_interleaved)
                .into_iter()
                .map(|hosts| Part {
                    triggers: Triggers::for_hosts(hosts.clone()),
                    hosts,
                    running: Vec::new(),
                    running_until: f64::NEG_INFINITY,
                    proven: ProvenUnchanged::default(),
                })
                .collect();
        }
    }

    fn part_of(&self, host: HostId) -> Option<usize> {
        self.parts.iter().position(|p| p.hosts.contains(host))
    }

    fn is_held(&self, host: HostId, now_s: f64) -> bool {
        self.part_of(host).is_some_and(|i| {
            let p = &self.parts[i];
            p.is_running(now_s) && p.running.contains(&host)
        })
    }

    /// The partition that decides a pending VM this step (module notes), among the idle ones.
    fn owner(&self, fleet: &Fleet, vm: &Vm, idle: &[bool]) -> Option<usize> {
        let hosts = || {
            self.parts
                .iter()
                .enumerate()
                .filter(|(i, _)| idle[*i])
                .flat_map(|(i, p)| p.hosts.iter().map(move |h| (i, h)))
        };
        let active_fit = |h: HostId| {
            let host = &fleet.hosts[h];
            host.is_active() && neighborhood::fits_free(fleet, host, vm)
        };
        let off_fit = |h: HostId| {
            let host = &fleet.hosts[h];
            !host.is_active() && neighborhood::fits_free(fleet, host, vm)
        };
        let active_empty_fit = |h: HostId| {
            let host = &fleet.hosts[h];
            host.is_active() && neighborhood::fits_empty(fleet, host, vm)
        };
        if let Some((i, _)) = hosts().find(|&(_, h)| active_fit(h)) {
            return Some(i);
        }
        if let Some((i, _)) = hosts().find(|&(_, h)| off_fit(h)) {
            return Some(i);
        }
        if let Some((i, _)) = hosts().find(|&(_, h)| active_empty_fit(h)) {
            return Some(i);
        }
        let never = !fleet.hosts.iter().any(|h| neighborhood::fits_empty(fleet, h, vm));
        if never {
            return idle.iter().position(|&b| b);
        }
        None
    }

    /// One step: the triggers of every idle partition, its calls in parallel, then the plans in
    /// partition order.
    fn step(&mut self, fleet: &Fleet, now_s: f64) -> Vec<Plan> {
        self.ensure_parts(fleet);
        let idle: Vec<bool> = self.parts.iter().map(|p| !p.is_running(now_s)).collect();
        let mut pending: Vec<Vec<VmId>> = vec![Vec::new(); self.parts.len()];
        for &id in fleet.pending() {
            let Some(vm) = fleet.vm(id) else { continue };
            if let Some(i) = self.owner(fleet, vm, &idle) {
                pending[i].push(id);
            }
        }
        // Each due partition's call and neighborhood, chosen in partition order (reading the
        // fleet only); a consolidation neighborhood equal to one a solve of this partition proved
        // unchanged is skipped as a repeat (exact, see `ProvenUnchanged`).
        let mut jobs: Vec<(usize, CallKind, &'static str, Neighborhood, Duration)> = Vec::new();
        for (i, part) in self.parts.iter_mut().enumerate() {
            if !idle[i] || !part.triggers.due(now_s, &self.settings) {
                continue;
            }
            let Some(kind) = part
                .triggers
                .next_call_with(fleet, &self.settings, !pending[i].is_empty())
            else {
                continue;
            };
            let cause = part.triggers.cause(&kind);
            let t0 = Instant::now();
            let scope = Scope {
                hosts: &part.hosts,
                pending: &pending[i],
            };
            let nb = neighborhood::select_in(fleet, &kind, &self.settings, scope);
            if part.proven.contains(fleet, &nb) {
                if self.check_repeats {
                    check_skipped_repeat(fleet, &kind, &self.settings, &nb);
                }
                self.stats.consolidation_calls += 1;
                self.calls
                    .record(cause, &nb, CallEnd::Repeat, t0.elapsed().as_secs_f64());
                part.triggers.after_call_on(fleet, &kind, false, &nb.hosts);
                continue;
            }
            jobs.push((i, kind, cause, nb, t0.elapsed()));
        }
        if jobs.is_empty() {
            return Vec::new();
        }
        let settings = &self.settings;
        let cancel = &self.cancel;
        let results: Vec<anyhow::Result<Proposal>> = jobs
            .par_iter()
            .map(|(_, kind, _, nb, selected_in)| {
                // A call's time counts from its own start (not from the queue of the pool),
                // plus the time its neighborhood took to select.
                let t0 = Instant::now()
                    .checked_sub(*selected_in)
                    .unwrap_or_else(Instant::now);
                let mode = match kind {
                    CallKind::Admission => CallMode::Admission,
                    _ => CallMode::Consolidation,
                };
                let control = SolveControl {
                    cancel: cancel.for_solve(),
                    limit: call::sim_limit(cancel),
                    ..SolveControl::default()
                };
                call::call_on(fleet, mode, kind.clone(), settings, &control, nb.clone(), t0)
            })
            .collect();
        let mut plans = Vec::new();
        for ((i, kind, cause, _, _), result) in jobs.into_iter().zip(results) {
            match kind {
                CallKind::Admission => self.stats.admission_calls += 1,
                _ => self.stats.consolidation_calls += 1,
            }
            let p = match result {
                Ok(p) => p,
                Err(e) => {
                    self.stats.failed += 1;
                    self.stats.last_error = Some(format!("{e:#}"));
                    // As for one instance: a failed admission call rejects its oldest pending VM.
                    if let (CallKind::Admission, Some(&oldest)) = (&kind, pending[i].first()) {
                        self.rejected.push(oldest);
                    }
                    self.parts[i].triggers.after_call(fleet, &kind, false);
                    continue;
                }
            };
            let end = match p.status {
                Some(_) => {
                    let applies = p.improves && !crosses_of(&p, &self.parts[i].hosts);
                    CallEnd::Solved {
                        changed: p.changes_placements() && applies,
                        moves: if applies { p.schedule.migrations() } else { 0 },
                    }
                }
                None => CallEnd::Empty,
            };
            self.calls.record(cause, &p.neighborhood, end, p.call_s);
            self.parts[i].proven.learn(fleet, &p);
            if p.status == Some(SolveStatus::Optimal) {
                self.stats.optimal += 1;
            }
            self.stats.limited.count(p.status);
            let crosses = crosses_of(&p, &self.parts[i].hosts);
            if p.discarded.is_some() || (p.improves && crosses) {
                self.stats.discarded += 1;
            }
            let applies = p.improves && !crosses;
            self.rejected.extend(p.rejected.iter().copied());
            if p.improves && crosses {
                // Discarded like a plan without a parking place: its pending VMs are rejected.
                self.rejected.extend(p.neighborhood.pending.iter().copied());
            }
            let changed = applies && !p.schedule.steps.is_empty();
            self.parts[i]
                .triggers
                .after_call_on(fleet, &kind, changed, &p.neighborhood.hosts);
            if applies {
                self.stats.applied += 1;
                let part = &mut self.parts[i];
                part.running = p.neighborhood.hosts.clone();
                part.running_until = now_s + p.schedule.duration_s(fleet, self.migration_gbps);
                plans.push(p.plan);
            }
        }
        plans
    }
}

impl Policy for Partitioned {
    fn name(&self) -> &str {
        "origamig"
    }

    fn clone_box(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    /// The arrival rule of §5.1: FF over the whole fleet, on the hosts outside the M̂ of every
    /// running call.
    fn on_arrival(&mut self, fleet: &Fleet, vm: &Vm, now_s: f64) -> Option<Placement> {
        self.ensure_parts(fleet);
        if self.settings.arrival_host_best_fit {
            let held: std::collections::BTreeSet<HostId> = (0..fleet.hosts.len())
                .filter(|&h| self.is_held(h, now_s))
                .collect();
            if let Some(p) =
                super::policy::arrival_host_best_fit(&self.settings, &mut self.tables, fleet, vm, |h| {
                    !held.contains(&h)
                })
            {
                return Some(p);
            }
        }
        let p = fleet.ff_placement_arrival(vm, self.settings.ff_active_first, |h| !self.is_held(h, now_s))?;
        Some(super::policy::arrival_best_fit(
            &self.settings,
            &mut self.tables,
            fleet,
            vm,
            p,
        ))
    }

    fn queues_unplaced(&self) -> bool {
        true
    }

    /// The VM's class is enabled again in the partition it ran in (in every partition when the
    /// host is not known).
    fn on_departure(&mut self, fleet: &Fleet, vm: &Vm, now_s: f64) {
        let host = vm.placement.as_ref().map(|p| p.host);
        self.on_departure_from(fleet, vm, host, now_s);
    }

    /// As [`Policy::on_departure`], with the host the VM ran on (the simulator removes the VM,
    /// and its placement with it, before it tells the policy).
    fn on_departure_from(&mut self, fleet: &Fleet, vm: &Vm, host: Option<HostId>, _now_s: f64) {
        self.ensure_parts(fleet);
        match host.and_then(|h| self.part_of(h)) {
            Some(i) => self.parts[i].triggers.on_departure(fleet, vm, host),
            None => self
                .parts
                .iter_mut()
                .for_each(|p| p.triggers.on_departure(fleet, vm, host)),
        }
    }

    /// The plans of the step merged into one (their hosts are disjoint), for callers that take
    /// one plan; the simulator takes them one by one through [`Policy::on_step_plans`].
    fn on_step(&mut self, fleet: &Fleet, now_s: f64) -> Option<Plan> {
        let plans = self.step(fleet, now_s);
        let mut it = plans.into_iter();
        let mut first = it.next()?;
        for p in it {
            first.targets.extend(p.targets);
        }
        Some(first)
    }

    fn on_step_plans(&mut self, fleet: &Fleet, now_s: f64) -> Vec<Plan> {
        self.step(fleet, now_s)
    }

    fn take_rejected(&mut self) -> Vec<VmId> {
        std::mem::take(&mut self.rejected)
    }

    fn call_log(&self) -> crate::policy::CallLog {
        self.calls.log(self.stats.limited)
    }

    fn set_cancel(&mut self, cancel: Option<Arc<AtomicBool>>) {
        self.cancel = CancelFlag(cancel);
    }
}

#[cfg(test)]
mod tests {
    use super::{count, host_sets, ranges, HostSet, Partitioned};
    use crate::catalog::embedded;
    use crate::fleet::{Fleet, GiRequest, Host, Vm};
    use crate::policy::origamig::triggers::{CallKind, Class};
    use crate::policy::Policy;
    use crate::policy_settings::OrigamigSettings;

    /// A departure from a host of partition 0 enables its class again there only: the class
    /// stays disabled in partition 1, whose hosts did not change. With `reenable =
    /// "departure"` (where the partition matters: any departure of the class would do), a
    /// departure from an unknown host enables it everywhere.
    #[test]
    fn a_departure_enables_its_class_again_in_its_own_partition_only() {
        let c = embedded();
        let a100 = c.model_id("a100-40gb").unwrap();
        let hosts = (0..4)
            .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
            .collect();
        let fleet = Fleet::new(c, hosts);
        let settings = OrigamigSettings {
            partitions: 2,
            partition_interleaved: false,
            reenable: crate::policy_settings::Reenable::Departure,
            ..OrigamigSettings::default()
        };
        let vm = Vm::job(1, GiRequest::named(c, "a100-40gb", &["1g.5gb"]).unwrap(), 4, 16);
        let class = Class::of_vm(&fleet, &vm);
        assert_eq!(class, Class::Gpu("a100-40gb".into()));
        let disabled = |p: &Partitioned| -> Vec<bool> {
            p.parts
                .iter()
                .map(|part| part.triggers.is_disabled(&class))
                .collect()
        };
        let mut p = Partitioned::new(&settings);
        p.ensure_parts(&fleet);
        assert_eq!(p.partitions(), vec![HostSet::range(0..2), HostSet::range(2..4)]);
        let disable_all = |p: &mut Partitioned| {
            for part in &mut p.parts {
                // The triggers take `reenable` from the settings at a check (the fleet is
                // empty: no call).
                assert_eq!(part.triggers.next_call_with(&fleet, &settings, false), None);
                // A call on every host of the partition changed nothing.
                let hosts: Vec<usize> = part.hosts.iter().collect();
                part.triggers
                    .after_call_on(&fleet, &CallKind::Consolidation(class.clone()), false, &hosts);
            }
        };
        disable_all(&mut p);
        assert_eq!(disabled(&p), vec![true, true]);
        p.on_departure_from(&fleet, &vm, Some(1), 0.0);
        assert_eq!(disabled(&p), vec![false, true]);
        disable_all(&mut p);
        p.on_departure_from(&fleet, &vm, Some(3), 0.0);
        assert_eq!(disabled(&p), vec![true, false]);
        disable_all(&mut p);
        p.on_departure_from(&fleet, &vm, None, 0.0);
        assert_eq!(disabled(&p), vec![false, false]);
    }

    #[test]
    fn ranges_are_contiguous_and_balanced() {
        assert_eq!(ranges(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(ranges(4, 8), vec![0..1, 1..2, 2..3, 3..4]);
        assert_eq!(ranges(5, 1), vec![0..5]);
        assert_eq!(ranges(0, 3), vec![0..0]);
    }

    #[test]
    fn interleaved_partitions_take_every_kth_host_and_cover_the_fleet_once() {
        let sets = host_sets(10, 3, true);
        let listed: Vec<Vec<usize>> = sets.iter().map(|s| s.iter().collect()).collect();
        assert_eq!(listed, vec![vec![0, 3, 6, 9], vec![1, 4, 7], vec![2, 5, 8]]);
        for h in 0..10 {
            assert_eq!(sets.iter().filter(|s| s.contains(h)).count(), 1, "host {h}");
        }
        // k is cut to n, as for contiguous ranges.
        assert_eq!(host_sets(2, 5, true).len(), 2);
        assert_eq!(
            host_sets(10, 3, false),
            ranges(10, 3).into_iter().map(HostSet::range).collect::<Vec<_>>()
        );
    }

    #[test]
    fn partition_hosts_gives_partitions_of_at_most_that_size() {
        let by_size = |n: usize, size: usize| {
            let s = OrigamigSettings {
                partition_hosts: size,
                ..OrigamigSettings::default()
            };
            ranges(n, count(n, &s))
        };
        assert_eq!(by_size(4096, 128).len(), 32);
        assert!(by_size(4096, 128).iter().all(|r| r.len() == 128));
        // 100 hosts by 32: four partitions of 25, none above 32.
        assert_eq!(by_size(100, 32), vec![0..25, 25..50, 50..75, 75..100]);
        assert_eq!(by_size(20, 64), vec![0..20]);
        let by_count = OrigamigSettings {
            partitions: 3,
            ..OrigamigSettings::default()
        };
        assert_eq!(count(10, &by_count), 3);
    }
}
