//! The restricted BILP of OrigaMIG (§4, Eq. 4-16; §5.3) over a neighborhood: hosts M̂, the VMs
//! running on them and some pending VMs. Built with good_lp, solved with HiGHS.
//!
//! The solver starts from the current placement with the pending VMs rejected, which satisfies
//! every constraint (§5.3). The returned placement is checked against the fleet's own rules and
//! its Eq. (5) recomputed from the placement ([`objective::evaluate`]); if it is worse than the
//! current placement, the current one is returned, so a call never loses value.
//!
//! Whole-fleet OPT (§6.8) is the same function over every host and every pending VM.
//!
//! The formulations are built in their own modules on a shared toolkit (`toolkit.rs`): host
//! contents (`hostcols.rs`), placement patterns (`pattern.rs`) and, with the `solver-lab`
//! feature, the paper's own variables (`slots.rs`); `docs/optimizer.md` describes them.

mod configs;
mod hostcols;
mod pattern;
mod precheck;
mod run;
#[cfg(feature = "solver-lab")]
mod slots;
mod toolkit;

pub use precheck::no_improving_plan;

use super::objective::{self, Terms, Weights};
use crate::fleet::{Fleet, GiRequest, GiSlot, HostId, Placement, VmId};
use crate::policy_settings::OrigamigSettings;
use highs::HighsModelStatus;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// How the BILP is written. All formulations have the same optimum (tests compare them). The
/// paper's own variables (`Plain`, `Tight`, `Config`) are for tests and benches only: they come
/// with the `solver-lab` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Formulation {
    /// Eq. (4)-(16) as the paper writes them, restricted to the neighborhood (§5.3), plus the
    /// per-profile instance limits of the catalog (which the paper's profiles never reach).
    #[cfg(feature = "solver-lab")]
    Plain,
    /// Plain with exact reductions: variables that cannot be non-zero dropped, rows tightened,
    /// hosts that some optimum keeps on fixed (see `slots.rs`).
    #[cfg(feature = "solver-lab")]
    Tight,
    /// Tight, with each VM's GIs assigned to GPUs as one pattern per (VM, host, GPU per GI), and
    /// each GPU's arrangement one configuration column per profile multiset; see `pattern.rs`.
    Pattern,
    /// One column per (host, VMs it holds by type) with the best arrangement's value, the
    /// Dantzig-Wolfe reformulation by host (`hostcols.rs`), where each host's contents can be
    /// enumerated within a budget (configuration combinations and cutting steps); `Pattern` for
    /// the calls where they cannot. The default.
    #[default]
    Host,
    /// Tight, with each GPU's slices described by configuration columns: one binary per
    /// configuration of the GPU (§3's configuration space), linked to the GIs by one equality
    /// per (profile, start). It replaces gamma, f and the slice rows: gamma is the sum of the
    /// GPU's configuration columns and a configuration's free-start reward is its CF. Same
    /// feasible placements and objective; its LP is no tighter than Tight's.
    #[cfg(feature = "solver-lab")]
    Config,
}

impl Formulation {
    /// Every formulation, the paper's first.
    #[cfg(feature = "solver-lab")]
    pub const ALL: [Formulation; 5] = [
        Formulation::Plain,
        Formulation::Tight,
        Formulation::Config,
        Formulation::Pattern,
        Formulation::Host,
    ];
    /// Every formulation.
    #[cfg(not(feature = "solver-lab"))]
    pub const ALL: [Formulation; 2] = [Formulation::Pattern, Formulation::Host];

    /// The formulation of a name from [`Formulation::name`].
    pub fn from_name(name: &str) -> Option<Formulation> {
        Formulation::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "solver-lab")]
            Formulation::Plain => "plain",
            #[cfg(feature = "solver-lab")]
            Formulation::Tight => "tight",
            #[cfg(feature = "solver-lab")]
            Formulation::Config => "config",
            Formulation::Pattern => "pattern",
            Formulation::Host => "host",
        }
    }
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SolveStatus {
    /// The optimum was proven.
    Optimal,
    /// The wall-clock limit stopped the solver; the incumbent is returned. Where that happens
    /// depends on the machine's speed and load.
    TimeLimit,
    /// The call's work budget (`node_limit` or `lp_iteration_limit`) stopped the solver; the
    /// incumbent is returned. It stops at the same point on any machine.
    NodeLimit,
    /// The caller cancelled; the incumbent is returned.
    Cancelled,
    /// Nothing to decide (no VM in the neighborhood).
    Trivial,
}

impl std::fmt::Display for SolveStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SolveStatus::Optimal => "optimal",
            SolveStatus::TimeLimit => "time limit",
            SolveStatus::NodeLimit => "node limit",
            SolveStatus::Cancelled => "cancelled",
            SolveStatus::Trivial => "trivial",
        })
    }
}

/// A progress report during a solve.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Seconds since the call started.
    pub elapsed_s: f64,
    /// Eq. (5) of the best placement found so far (the solver's value).
    pub incumbent: Option<f64>,
    /// Best proven upper bound on Eq. (5).
    pub bound: Option<f64>,
    /// (bound - incumbent) / |incumbent|.
    pub gap: Option<f64>,
    /// Branch-and-bound nodes so far.
    pub nodes: u64,
    /// Which phase of the call reports.
    pub phase: &'static str,
}

/// A progress sink; called on the solving thread.
pub(crate) type ProgressSink = Arc<dyn Fn(&Progress) + Send + Sync>;

/// What bounds a call (docs/optimizer.md, "Call budget").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallLimit {
    /// A simulated call (the default; the policies in `simulate`, `sweep`, `experiment`): the
    /// work budget only, `node_limit` branch-and-bound nodes and `lp_iteration_limit` simplex
    /// iterations, which end the call at the same point on any machine. No wall clock.
    #[default]
    Budget,
    /// A simulated call of the planner's play, which a user watches: the work budget, and
    /// `sim_time_limit_s` of wall clock as a safety net.
    Interactive,
    /// A call a user waits for (`migplan solve`, the planner's solve, `experiment`'s OPT
    /// snapshots): `time_limit_s` of wall clock, no node limit.
    Clock,
}

impl CallLimit {
    /// Wall-clock seconds (infinite: none) and branch-and-bound nodes of a call under
    /// `settings`.
    pub fn limits(self, settings: &OrigamigSettings) -> (f64, Option<u64>) {
        match self {
            CallLimit::Budget => (f64::INFINITY, Some(settings.node_limit)),
            CallLimit::Interactive => (settings.sim_time_limit_s, Some(settings.node_limit)),
            CallLimit::Clock => (settings.time_limit_s, None),
        }
    }

    /// Simplex iterations of a call under `settings` (`None`: none).
    pub(crate) fn lp_iterations(self, settings: &OrigamigSettings) -> Option<u64> {
        match self {
            CallLimit::Budget | CallLimit::Interactive => Some(settings.lp_iteration_limit),
            CallLimit::Clock => None,
        }
    }
}

/// How a caller controls a solve: a cancel flag (set it from any thread: the solver stops soon
/// after and keeps its incumbent), an optional progress sink, and the formulation. The fields
/// for solver experiments come with the `solver-lab` feature.
#[derive(Clone)]
pub struct SolveControl {
    pub cancel: Arc<AtomicBool>,
    pub progress: Option<ProgressSink>,
    pub formulation: Formulation,
    /// What bounds the call: the deterministic budget of a simulated call (default) or the
    /// wall clock of a call a user waits for.
    pub limit: CallLimit,
    /// Print HiGHS's log.
    pub verbose: bool,
    /// Run HiGHS's presolve (default: off: it proved fewer calls optimal on the solver bench; a
    /// run whose returned vector disagrees with its reported objective is repeated without it,
    /// see `solve_with`).
    #[cfg(feature = "solver-lab")]
    pub presolve: bool,
    /// A placement to start from instead of the current one (every running VM of the
    /// neighborhood, plus any admitted pending VMs), used when it is valid and better by Eq. (5)
    /// (pattern formulation only).
    pub hint: Option<BTreeMap<VmId, Placement>>,
    /// Without a `hint`, start from the greedy placement of [`super::greedy`] when it beats the
    /// current one (default: on).
    pub greedy_start: bool,
    /// Extra HiGHS options (name, value), for tuning experiments.
    #[cfg(feature = "solver-lab")]
    pub highs_options: Vec<(String, String)>,
    /// Hosts forced on or off, for experiments (pattern and host formulations).
    #[cfg(feature = "solver-lab")]
    pub fix_hosts: Vec<(HostId, bool)>,
    /// Add the conflict-clique rows of the pattern formulation (default: on; off only to measure
    /// what they give).
    #[cfg(feature = "solver-lab")]
    pub conflict_cliques: bool,
    /// Enumerate the host contents of hosts past the cutting budget GPU by GPU
    /// (`hostcols/bygpu.rs`) instead of falling back to the pattern formulation (default: off;
    /// measured slower on the paper's runs, docs/results/speed-notes.md).
    #[cfg(feature = "solver-lab")]
    pub host_contents_by_gpu: bool,
}

impl Default for SolveControl {
    fn default() -> Self {
        SolveControl {
            cancel: Arc::default(),
            progress: None,
            formulation: Formulation::default(),
            limit: CallLimit::default(),
            verbose: false,
            #[cfg(feature = "solver-lab")]
            presolve: false,
            hint: None,
            greedy_start: true,
            #[cfg(feature = "solver-lab")]
            highs_options: Vec::new(),
            #[cfg(feature = "solver-lab")]
            fix_hosts: Vec::new(),
            #[cfg(feature = "solver-lab")]
            conflict_cliques: true,
            #[cfg(feature = "solver-lab")]
            host_contents_by_gpu: false,
        }
    }
}

impl std::fmt::Debug for SolveControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SolveControl")
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.is_some())
            .field("formulation", &self.formulation)
            .field("limit", &self.limit)
            .finish()
    }
}

/// The result of one solve.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveOutcome {
    /// Target placement of every VM placed in the solution (moved or not); pending VMs that are
    /// not admitted are absent.
    pub targets: BTreeMap<VmId, Placement>,
    pub status: SolveStatus,
    /// Relative MIP gap (bound - objective) / |objective| when the solver stopped.
    pub gap: f64,
    /// Best upper bound on Eq. (5) over the neighborhood (at least `objective`).
    pub bound: f64,
    /// Eq. (5) over the neighborhood of the returned placement, recomputed from the placement.
    pub objective: f64,
    /// Eq. (5) of the current placement (pending VMs rejected).
    pub start_objective: f64,
    /// Terms of Eq. (5) of the returned placement.
    pub terms: Terms,
    /// Wall-clock seconds of the whole call (build, solve, check).
    pub solve_s: f64,
    /// The solver's placement was worse than the current one, which is returned instead.
    pub fell_back: bool,
    /// Model size (rows, columns) handed to HiGHS.
    pub rows: usize,
    pub cols: usize,
    /// HiGHS threads used (process-wide: the first value requested wins).
    pub threads: u32,
    /// Branch-and-bound nodes HiGHS explored.
    pub nodes: u64,
    /// The presolved run returned a vector that disagrees with its reported objective and the
    /// call was repeated without presolve (see `solve_with`).
    #[cfg(feature = "solver-lab")]
    pub presolve_retried: bool,
    /// The formulation the model was built in (`Host` falls back to `Pattern` where it does
    /// not apply).
    pub formulation: Formulation,
}

/// One VM of the neighborhood.
#[derive(Debug, Clone)]
pub(crate) struct VmRec {
    pub id: VmId,
    pub cores: u32,
    pub ram: u32,
    pub gis: Vec<GiRequest>,
    /// Current host position (in `Inst::hosts`) and GI slots of a running VM.
    pub old: Option<(usize, Vec<GiSlot>)>,
    /// delta_i ([`Weights::delta_of`] of a running VM, `delta_new` of a pending one).
    pub delta: f64,
    /// What delta_i adds to `delta_running` for a running VM of this VM's GIs and RAM
    /// ([`Weights::surcharge`]), also for a pending one: the host-content formulation prices a
    /// VM type by it.
    pub surcharge: f64,
}

/// A neighborhood ready to be modeled.
pub(crate) struct Inst<'a> {
    pub fleet: &'a Fleet,
    pub hosts: Vec<HostId>,
    /// Running VMs (by host, then id), then the pending VMs in the caller's order.
    pub vms: Vec<VmRec>,
    pub index: HashMap<VmId, usize>,
    pub w: Weights,
    /// Hosts whose phi is fixed by the caller (experiments, `SolveControl::fix_hosts`), by
    /// position; all `None` otherwise.
    pub phi_fix: Vec<Option<bool>>,
    /// Add the conflict-clique rows (pattern formulation; see `pattern.rs`).
    pub cliques: bool,
    /// The host-content enumeration's budget, a multiplier of its limits (`hostcols.rs`;
    /// `policy.origamig.host_columns_budget`).
    pub budget: u32,
    /// Enumerate hosts past the cutting budget GPU by GPU (`SolveControl::host_contents_by_gpu`).
    pub by_gpu: bool,
}

impl<'a> Inst<'a> {
    fn new(fleet: &'a Fleet, hosts: &[HostId], pending: &[VmId], w: Weights) -> anyhow::Result<Self> {
        let mut seen = BTreeSet::new();
        for &h in hosts {
            if h >= fleet.hosts.len() {
                anyhow::bail!("neighborhood: no host {h}");
            }
            if !seen.insert(h) {
                anyhow::bail!("neighborhood: host {h} listed twice");
            }
        }
        let pos: HashMap<HostId, usize> = hosts.iter().enumerate().map(|(i, &h)| (h, i)).collect();
        let mut vms = Vec::new();
        for &h in hosts {
            for &id in &fleet.hosts[h].vms {
                let vm = fleet
                    .vm(id)
                    .ok_or_else(|| anyhow::anyhow!("host {h} lists unknown VM {id}"))?;
                let p = vm
                    .placement
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("host {h} lists unplaced VM {id}"))?;
                vms.push(VmRec {
                    id,
                    cores: vm.cores,
                    ram: vm.ram_gb,
                    gis: vm.gis.clone(),
                    old: Some((pos[&p.host], p.gis.clone())),
                    delta: w.delta_of(vm, fleet.catalog),
                    surcharge: w.surcharge_of(vm, fleet.catalog),
                });
            }
        }
        for &id in pending {
            let vm = fleet
                .vm(id)
                .ok_or_else(|| anyhow::anyhow!("pending VM {id} is unknown"))?;
            if vm.placement.is_some() {
                anyhow::bail!("VM {id} is not pending: it is placed");
            }
            if vms.iter().any(|v: &VmRec| v.id == id) {
                anyhow::bail!("pending VM {id} listed twice");
            }
            vms.push(VmRec {
                id,
                cores: vm.cores,
                ram: vm.ram_gb,
                gis: vm.gis.clone(),
                old: None,
                delta: w.delta_new,
                surcharge: w.surcharge_of(vm, fleet.catalog),
            });
        }
        let index = vms.iter().enumerate().map(|(i, v)| (v.id, i)).collect();
        Ok(Inst {
            fleet,
            hosts: hosts.to_vec(),
            vms,
            index,
            w,
            phi_fix: vec![None; hosts.len()],
            cliques: true,
            budget: 1,
            by_gpu: false,
        })
    }

    /// The current placement of the neighborhood's running VMs.
    fn current_targets(&self) -> BTreeMap<VmId, Placement> {
        self.vms
            .iter()
            .filter_map(|v| {
                let (h, gis) = v.old.as_ref()?;
                Some((
                    v.id,
                    Placement {
                        host: self.hosts[*h],
                        gis: gis.clone(),
                    },
                ))
            })
            .collect()
    }
}

/// Solves the restricted BILP over `hosts` with the VMs running there and the `pending` VMs.
pub fn solve(
    fleet: &Fleet,
    hosts: &[HostId],
    pending: &[VmId],
    settings: &OrigamigSettings,
) -> anyhow::Result<SolveOutcome> {
    solve_with(fleet, hosts, pending, settings, &SolveControl::default())
}

/// Whether a host of `hosts` has more GPUs than the paper's host (§6.1: two).
pub(crate) fn big_hosts(fleet: &Fleet, hosts: &[HostId]) -> bool {
    hosts
        .iter()
        .filter_map(|&h| fleet.hosts.get(h))
        .any(|h| h.gpus.len() > super::neighborhood::PAPER_HOST_GPUS)
}

/// [`solve`] with progress reports, cancellation and a choice of formulation.
pub fn solve_with(
    fleet: &Fleet,
    hosts: &[HostId],
    pending: &[VmId],
    settings: &OrigamigSettings,
    control: &SolveControl,
) -> anyhow::Result<SolveOutcome> {
    let t0 = Instant::now();
    let w = Weights::from_settings(settings);
    let inst = call_instance(fleet, hosts, pending, settings, control, w)?;
    let start_terms = objective::evaluate(fleet, fleet, hosts, &w);
    let threads = run::process_threads(settings.threads);
    if inst.vms.is_empty() {
        return Ok(trivial_outcome(start_terms, t0, threads, control.formulation));
    }
    let greedy = greedy_hint(fleet, hosts, pending, settings, control, &w);
    let call = Call {
        fleet,
        hosts,
        inst: &inst,
        settings,
        control,
        w,
        start_total: start_terms.total,
        hint: control.hint.as_ref().or(greedy.as_ref()),
        t0,
    };
    #[cfg(feature = "solver-lab")]
    let (attempt, presolve_retried) = call.attempt_with_presolve_retry()?;
    #[cfg(not(feature = "solver-lab"))]
    let attempt = call.attempt(false)?;
    // Without presolve the returned vector is the one HiGHS evaluated.
    debug_assert!(
        attempt.consistent,
        "recomputed Eq. 5 {} below the solver's",
        attempt.terms.total
    );
    #[cfg_attr(not(feature = "solver-lab"), allow(unused_mut))]
    let mut out = never_worse_outcome(attempt, &inst, start_terms, t0, threads);
    #[cfg(feature = "solver-lab")]
    {
        out.presolve_retried = presolve_retried;
    }
    Ok(out)
}

/// The neighborhood's instance with the settings and controls that shape its model.
fn call_instance<'a>(
    fleet: &'a Fleet,
    hosts: &[HostId],
    pending: &[VmId],
    settings: &OrigamigSettings,
    control: &SolveControl,
    w: Weights,
) -> anyhow::Result<Inst<'a>> {
    let mut inst = Inst::new(fleet, hosts, pending, w)?;
    inst.budget = settings
        .host_columns_budget
        .clamp(1, crate::limits::MAX_HOST_COLUMNS_BUDGET);
    #[cfg(feature = "solver-lab")]
    {
        inst.cliques = control.conflict_cliques;
        inst.by_gpu = control.host_contents_by_gpu;
        for &(h, on) in &control.fix_hosts {
            if let Some(p) = hosts.iter().position(|&x| x == h) {
                inst.phi_fix[p] = Some(on);
            }
        }
    }
    #[cfg(not(feature = "solver-lab"))]
    let _ = control;
    Ok(inst)
}

/// The outcome of a neighborhood without VMs: the current placement, proven optimal.
fn trivial_outcome(start_terms: Terms, t0: Instant, threads: u32, formulation: Formulation) -> SolveOutcome {
    SolveOutcome {
        targets: BTreeMap::new(),
        status: SolveStatus::Trivial,
        gap: 0.0,
        bound: start_terms.total,
        objective: start_terms.total,
        start_objective: start_terms.total,
        terms: start_terms,
        solve_s: t0.elapsed().as_secs_f64(),
        fell_back: false,
        rows: 0,
        cols: 0,
        threads,
        nodes: 0,
        #[cfg(feature = "solver-lab")]
        presolve_retried: false,
        formulation,
    }
}

/// The greedy placement as a start for the column formulations, unless the caller gave a hint.
fn greedy_hint(
    fleet: &Fleet,
    hosts: &[HostId],
    pending: &[VmId],
    settings: &OrigamigSettings,
    control: &SolveControl,
    w: &Weights,
) -> Option<BTreeMap<VmId, Placement>> {
    match (&control.hint, control.formulation) {
        (None, Formulation::Pattern | Formulation::Host) if control.greedy_start => {
            super::greedy::start_with(fleet, hosts, pending, w, settings.arrival_gpu_best_fit)
                .map(|s| s.targets)
        }
        _ => None,
    }
}

/// What one call's HiGHS runs share.
struct Call<'a> {
    fleet: &'a Fleet,
    hosts: &'a [HostId],
    inst: &'a Inst<'a>,
    settings: &'a OrigamigSettings,
    control: &'a SolveControl,
    w: Weights,
    /// Eq. (5) of the current placement (pending VMs rejected).
    start_total: f64,
    /// A placement to start from when it is worth more than the current one.
    hint: Option<&'a BTreeMap<VmId, Placement>>,
    t0: Instant,
}

impl Call<'_> {
    /// With the `solver-lab` feature, HiGHS's presolve may be asked for. It shortens the hard
    /// calls (the root node works on a smaller model), but HiGHS 1.16 has a defect with a MIP
    /// start: when presolve fixes columns of the start to other values and nothing better than
    /// the mapped start turns up, HiGHS reports the mapped start's objective while returning the
    /// original start vector. Such a run is recognised by its placement being worth less, by
    /// Eq. (5) recomputed from the placement, than the objective HiGHS reports (a correct
    /// solution is never worse, §5.3), or by a placement the fleet refuses; the call is then run
    /// again without presolve in the time left. Returns the attempt and whether it was retried.
    #[cfg(feature = "solver-lab")]
    fn attempt_with_presolve_retry(&self) -> anyhow::Result<(Attempt, bool)> {
        if self.control.presolve {
            if let Ok(a) = self.attempt(true) {
                if a.consistent {
                    return Ok((a, false));
                }
            }
        }
        Ok((self.attempt(false)?, self.control.presolve))
    }

    /// One HiGHS run: build the model, start it, run it, read the placement back and evaluate it.
    fn attempt(&self, presolve: bool) -> anyhow::Result<Attempt> {
        let toolkit::Built {
            problem,
            start,
            offset,
            decode,
            integral,
            ..
        } = build(self.inst, self.formulation());
        let start = self.start_vector(&decode, start);
        let highs_model = problem
            .try_into_inner()
            .map_err(|e| anyhow::anyhow!("building the HiGHS model: {e}"))?;
        let opts = self.run_options(presolve, integral);
        let formulation = match &decode {
            Decode::Hosts(_) => Formulation::Host,
            Decode::Patterns(_) => Formulation::Pattern,
            #[cfg(feature = "solver-lab")]
            Decode::Slots { .. } => self.control.formulation,
        };
        let res = run::run(highs_model, &start, &opts, self.control, offset, self.t0, "full")?;
        let status = match res.status {
            HighsModelStatus::Optimal => SolveStatus::Optimal,
            HighsModelStatus::ReachedTimeLimit => SolveStatus::TimeLimit,
            // `mip_max_nodes` is the only solution limit set (outside `solver-lab` options).
            HighsModelStatus::ReachedSolutionLimit => SolveStatus::NodeLimit,
            // The LP-iteration budget interrupts through the callback.
            HighsModelStatus::ReachedInterrupt if res.lp_budget_hit => SolveStatus::NodeLimit,
            HighsModelStatus::ReachedInterrupt => SolveStatus::Cancelled,
            other => anyhow::bail!("HiGHS stopped with status {other:?}"),
        };
        // The solver's placement, or the current one when it has none.
        let mut targets = self.inst.current_targets();
        if let Some(colv) = &res.columns {
            targets = decode.targets(self.inst, colv)?;
        }
        let after = apply(self.fleet, &targets)?;
        let terms = objective::evaluate(self.fleet, &after, self.hosts, &self.w);
        // Recomputing phi, gamma, m, omega and f from the placement can only raise the value
        // (§5.3): a lower value means the returned vector is not the solution HiGHS describes.
        let consistent = res.columns.is_none() || terms.total >= res.objective + offset - 1e-6;
        Ok(Attempt {
            targets,
            terms,
            status,
            consistent,
            bound: res.bound + offset,
            integral,
            rows: res.rows,
            cols: res.cols,
            nodes: res.nodes,
            formulation,
        })
    }

    /// The formulation this call builds: the control's, except that with
    /// `consolidation_patterns` a call without pending VMs that asks for host contents builds
    /// the pattern model directly.
    fn formulation(&self) -> Formulation {
        let pending = self.inst.vms.iter().any(|v| v.old.is_none());
        match self.control.formulation {
            Formulation::Host if self.settings.consolidation_patterns && !pending => Formulation::Pattern,
            f => f,
        }
    }

    /// The model's start vector (the current placement), or the hint's when the hint is a valid
    /// placement worth more and the formulation can encode it.
    fn start_vector(&self, decode: &Decode, start: Vec<f64>) -> Vec<f64> {
        let Some(hint) = self.hint else { return start };
        let Ok(f) = apply(self.fleet, hint) else {
            return start;
        };
        if objective::evaluate(self.fleet, &f, self.hosts, &self.w).total > self.start_total {
            if let Some(v) = decode.start_from(self.inst, hint) {
                return v;
            }
        }
        start
    }

    /// HiGHS's options for one run: the call's limits, threads, presolve and gap.
    fn run_options(&self, presolve: bool, integral: bool) -> run::RunOptions {
        let (wall_s, mut node_limit) = self.control.limit.limits(self.settings);
        if node_limit.is_some() && self.settings.host_scaled_budget && big_hosts(self.fleet, self.hosts) {
            // docs/optimizer.md, "Call budget": on big hosts a simulated call keeps the root's
            // first check (the greedy or current placement).
            node_limit = Some(0);
        }
        run::RunOptions {
            time_limit_s: remaining(wall_s, self.t0),
            node_limit,
            lp_iteration_limit: self.control.limit.lp_iterations(self.settings),
            threads: self.settings.threads,
            presolve,
            abs_gap: if integral { 0.99 } else { 1e-6 },
            verbose: self.control.verbose,
            #[cfg(feature = "solver-lab")]
            extra: self.control.highs_options.clone(),
            #[cfg(not(feature = "solver-lab"))]
            extra: Vec::new(),
        }
    }
}

/// The outcome of a call from its HiGHS run: the current placement when the solver's is worth
/// less (a call never loses value), with the bound and the gap.
fn never_worse_outcome(
    a: Attempt,
    inst: &Inst,
    start_terms: Terms,
    t0: Instant,
    threads: u32,
) -> SolveOutcome {
    let Attempt {
        mut targets,
        mut terms,
        status,
        bound: solver_bound,
        integral,
        rows,
        cols,
        nodes,
        formulation,
        ..
    } = a;
    let mut fell_back = false;
    if terms.total < start_terms.total {
        targets = inst.current_targets();
        terms = start_terms;
        fell_back = true;
    }
    // The solver's bound (HiGHS leaves out the objective constant), never below the value
    // returned. A proven optimum of an integer-valued objective (gap < 1) is exact.
    let bound = if status == SolveStatus::Optimal && integral {
        terms.total
    } else if solver_bound.is_finite() {
        solver_bound.max(terms.total)
    } else {
        f64::INFINITY
    };
    let gap = if bound.is_finite() {
        (bound - terms.total).max(0.0) / terms.total.abs().max(1.0)
    } else {
        f64::INFINITY
    };
    SolveOutcome {
        targets,
        status,
        gap,
        bound,
        objective: terms.total,
        start_objective: start_terms.total,
        terms,
        solve_s: t0.elapsed().as_secs_f64(),
        fell_back,
        rows,
        cols,
        threads,
        nodes,
        #[cfg(feature = "solver-lab")]
        presolve_retried: false,
        formulation,
    }
}

/// Builds the model of `inst` in formulation `form` (`Host` falls back to `Pattern` where the
/// host contents cannot be enumerated within their budget).
fn build(inst: &Inst, form: Formulation) -> toolkit::Built {
    build_with(inst, form, false, false)
}

/// [`build`], optionally as the LP relaxation and with column names (diagnostics).
fn build_with(inst: &Inst, form: Formulation, relax: bool, named: bool) -> toolkit::Built {
    match form {
        Formulation::Host => {
            hostcols::build(inst, relax, named).unwrap_or_else(|_| pattern::build(inst, relax, named))
        }
        Formulation::Pattern => pattern::build(inst, relax, named),
        #[cfg(feature = "solver-lab")]
        Formulation::Plain | Formulation::Tight | Formulation::Config => {
            slots::build(inst, form, relax, named)
        }
    }
}

/// How a model's columns encode a placement: one variant per formulation. It lives here, beside
/// [`build_with`] which picks the formulation, so that the shared toolkit names none of them.
pub(crate) enum Decode {
    /// x per VM and host, y per GI, host, GPU and start (§4).
    #[cfg(feature = "solver-lab")]
    Slots {
        x: Vec<Vec<Option<usize>>>,
        y: slots::YMap,
    },
    /// Placement patterns and GPU configurations ([`pattern`]).
    Patterns(pattern::Decode),
    /// Host contents ([`hostcols`]).
    Hosts(hostcols::Decode),
}

impl Decode {
    /// A start vector for a placement other than the current one (pattern models only).
    pub(crate) fn start_from(&self, inst: &Inst, targets: &BTreeMap<VmId, Placement>) -> Option<Vec<f64>> {
        match self {
            #[cfg(feature = "solver-lab")]
            Decode::Slots { .. } => None,
            Decode::Patterns(d) => d.start_from(inst, targets),
            Decode::Hosts(d) => d.start_from(inst, targets),
        }
    }

    /// The placement of every VM the column values place.
    pub(crate) fn targets(&self, inst: &Inst, colv: &[f64]) -> anyhow::Result<BTreeMap<VmId, Placement>> {
        match self {
            #[cfg(feature = "solver-lab")]
            Decode::Slots { x, y } => slots::extract_slots(inst, x, y, colv),
            Decode::Patterns(d) => d.targets(inst, colv),
            Decode::Hosts(d) => d.targets(inst, colv),
        }
    }
}

/// One HiGHS run of a call, decoded and evaluated.
struct Attempt {
    targets: BTreeMap<VmId, Placement>,
    terms: Terms,
    status: SolveStatus,
    /// The placement is worth at least what HiGHS reported.
    consistent: bool,
    /// HiGHS's bound with the objective constant added.
    bound: f64,
    integral: bool,
    rows: usize,
    cols: usize,
    nodes: u64,
    formulation: Formulation,
}

/// Diagnostics: the LP relaxation of the model of a neighborhood, solved; returns its value and
/// the columns with a non-zero value (name = value), fractional ones first.
#[cfg(feature = "solver-lab")]
pub fn lp_relaxation(
    fleet: &Fleet,
    hosts: &[HostId],
    pending: &[VmId],
    settings: &OrigamigSettings,
    formulation: Formulation,
    fix_on: &[(usize, bool)],
) -> anyhow::Result<(f64, Vec<(String, f64)>)> {
    let w = Weights::from_settings(settings);
    let mut inst = Inst::new(fleet, hosts, pending, w)?;
    inst.budget = settings
        .host_columns_budget
        .clamp(1, crate::limits::MAX_HOST_COLUMNS_BUDGET);
    let built = build_with(&inst, formulation, true, true);
    let offset = built.offset;
    let names = built.names.unwrap_or_default();
    let mut m = built
        .problem
        .try_into_inner()
        .map_err(|e| anyhow::anyhow!("building the HiGHS model: {e}"))?;
    m.set_option("threads", run::process_threads(settings.threads) as i32);
    for &(h, on) in fix_on {
        if let Some(c) = names.iter().position(|n| *n == format!("phi[{h}]")) {
            let v = if on { 1.0 } else { 0.0 };
            // SAFETY: `m` owns a live HiGHS instance and `c` is one of its columns.
            unsafe { highs_sys::Highs_changeColBounds(m.as_mut_ptr(), c as _, v, v) };
        }
    }
    let solved = m.try_solve().map_err(|e| anyhow::anyhow!("LP: {e:?}"))?;
    let sol = solved.get_solution();
    let mut out: Vec<(String, f64)> = sol
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 1e-6)
        .map(|(i, &v)| (names[i].clone(), v))
        .collect();
    out.sort_by(|a, b| {
        let fa = (a.1 - a.1.round()).abs() > 1e-6;
        let fb = (b.1 - b.1.round()).abs() > 1e-6;
        fb.cmp(&fa).then(a.0.cmp(&b.0))
    });
    Ok((solved.objective_value() + offset, out))
}

/// Seconds left of a call's time limit (`limit` <= 0 or not finite: no limit), at least 1 ms.
fn remaining(limit: f64, t0: Instant) -> f64 {
    if limit.is_finite() && limit > 0.0 {
        (limit - t0.elapsed().as_secs_f64()).max(0.001)
    } else {
        f64::INFINITY
    }
}

/// The fleet with the VMs of `targets` at their targets (validated by the fleet's own rules).
fn apply(fleet: &Fleet, targets: &BTreeMap<VmId, Placement>) -> anyhow::Result<Fleet> {
    fleet
        .with_placements(targets)
        .map_err(|(id, e)| anyhow::anyhow!("solver placement of VM {id} is invalid: {e}"))
}
