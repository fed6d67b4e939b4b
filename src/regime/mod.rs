//! Kubernetes regimes over simulated time (docs/operations.md, "Regimes"): pods on static
//! layouts with the scheduled layout planner, and dynamic MIG. The paper's regime is the
//! simulator of `crate::sim`.
//!
//! - *static-layouts*: every GPU holds the instances of its layout, free or in use. A pod takes
//!   free instances of its profiles on one node, chosen by the device plugin (first by index or
//!   the fullest node and GPU); with none free it waits, up to an optional timeout. Every period
//!   the layout planner plans each model's GPUs for the demand (pending pods per profile plus the
//!   peak in use over the forecast window) with the greedy planner over the menu; a GPU changes
//!   only after `hysteresis` consecutive identical plans, one node at a time, and never when the
//!   node's pods would have no instance to restart on (unless allowed). A change drains the whole
//!   node: every pod on it is evicted (counted) and waits again; the node serves nothing for the
//!   re-layout time.
//! - *dynamic*: a pod's instances are created when it is allocated, at the default start
//!   (Eq. 3) on the first GPU by index or the fullest GPU with room, and destroyed when it leaves;
//!   pods never move.
//!
//! Events at one instant run in this order: departures, nodes back from a re-layout, arrivals,
//! timeouts, the planner. A restarted pod runs for what was left of its lifetime.

pub mod setup;

use crate::catalog::{Catalog, ModelId, ProfileId};
use crate::mig::{self, Occupancy};
use crate::ops::layout_planner;
use crate::ops::layouts::{self, Layout};
use crate::scenario::{PluginChoice, RegimeKind, RegimeSettings};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// A pod: one instance per entry of `gis`, all on one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    pub id: u64,
    pub gis: Vec<(ModelId, ProfileId)>,
    pub cores: u32,
    pub ram_gb: u32,
    /// Arrival, seconds of simulated time.
    pub arrival: f64,
    /// Seconds of running; `None` runs to the end.
    pub lifetime: Option<f64>,
}

/// One GPU at the start: its model and layout (MIG on or off, instances per profile).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    pub model: ModelId,
    pub mig_enabled: bool,
    pub counts: Vec<u32>,
}

/// One node at the start.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub cores: u32,
    pub ram_gb: u32,
    pub curve: usize,
    pub gpus: Vec<GpuSpec>,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Setup {
    pub catalog: &'static Catalog,
    pub nodes: Vec<NodeSpec>,
    /// The planner's menu per model.
    pub menus: BTreeMap<ModelId, Vec<Layout>>,
    pub settings: RegimeSettings,
    /// The hysteresis in force (the legacy key resolved).
    pub hysteresis: u32,
    /// Pods running at time 0, each with its node and the GPU of each of its GIs.
    pub running: Vec<(Pod, usize, Vec<usize>)>,
    /// Pods arriving (time 0 for the pending queue of a scenario), in any order.
    pub arrivals: Vec<Pod>,
    /// Metrics count from `warmup_s` to `horizon_s`.
    pub warmup_s: f64,
    pub horizon_s: f64,
}

/// A drain as it happened.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Drain {
    pub t: f64,
    pub node: String,
    /// (GPU, layout before, layout after).
    pub gpus: Vec<(usize, String, String)>,
    pub evicted: u32,
    pub resets: u32,
}

/// A restart-based defragmentation pass (dynamic MIG) as it happened.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DefragPass {
    pub t: f64,
    /// Pods restarted on GPUs already in use.
    pub restarts: u32,
    /// GPUs the restarts emptied: (node, GPU).
    pub emptied: Vec<(String, usize)>,
    /// Waiting pods that started right after, on the room the pass made.
    pub pending_started: u32,
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    pub regime: &'static str,
    pub plugin_choice: &'static str,
    pub period_min: f64,
    pub hysteresis: u32,
    pub hours: f64,
    pub pods_arrived: u64,
    pub pods_started: u64,
    pub pods_timed_out: u64,
    pub pods_waiting_at_end: u64,
    /// Pending pod-hours per profile (a pod waiting for two instances counts under each).
    pub pending_pod_hours: BTreeMap<String, f64>,
    pub pending_pod_hours_total: f64,
    /// Wait from arrival to first start of the pods that arrived in the window, in minutes (a pod
    /// that never started counts with its wait until it gave up or the run ended).
    pub wait_p50_min: f64,
    pub wait_p95_min: f64,
    pub drains: u64,
    pub drains_per_day: f64,
    pub evicted_pods: u64,
    pub evicted_per_day: f64,
    /// GPU resets: MIG switched on by a re-layout on a model that needs one (A100, A30).
    pub gpu_resets: u64,
    /// Instances that existed but served no pod (static layouts; 0 when created on allocation).
    pub idle_instance_hours: f64,
    /// Compute slices no pod can use: on a static layout the slices no instance covers, on a
    /// dynamic GPU the free slices when no profile fits.
    pub stranded_compute_slice_hours: f64,
    pub mean_active_hosts: f64,
    pub mean_active_gpus: f64,
    pub energy_kwh: f64,
    /// Restart-based defragmentation (dynamic MIG with `defrag_every_h`): passes in the
    /// window, pods they restarted, GPUs they emptied, waiting pods started right after, and the
    /// restarted pods' downtime.
    pub defrag_every_h: Option<f64>,
    pub defrag_passes: u64,
    pub restarts: u64,
    pub restarts_per_day: f64,
    pub defrag_emptied_gpus: u64,
    pub defrag_pending_started: u64,
    pub restart_downtime_pod_hours: f64,
    /// Every drain of the run (also those before the window).
    #[serde(skip)]
    pub drain_log: Vec<Drain>,
    /// Every defragmentation pass of the run (also those before the window).
    #[serde(skip)]
    pub defrag_log: Vec<DefragPass>,
    /// Each GPU's layout at the end: (node, GPU, layout).
    pub final_layouts: Vec<(String, usize, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Depart = 0,
    NodeUp = 1,
    Arrive = 2,
    Timeout = 3,
    Planner = 4,
    Defrag = 5,
}

#[derive(Debug, Clone, Copy)]
struct Ev {
    t: f64,
    kind: Kind,
    seq: u64,
    /// Pod index, node index or unused.
    arg: usize,
    epoch: u32,
}

impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    /// Reversed: the heap pops the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.t.total_cmp(&self.t)
            .then(o.kind.cmp(&self.kind))
            .then(o.seq.cmp(&self.seq))
    }
}

#[derive(Debug, Clone)]
struct GpuSt {
    model: ModelId,
    mig: bool,
    counts: Vec<u32>,
    /// Static: each instance's profile and the pod using it.
    insts: Vec<(ProfileId, Option<usize>)>,
    /// Dynamic: the occupancy and the pods' instances (pod, profile, start).
    occ: Occupancy,
    used: Vec<(usize, ProfileId, u8)>,
    /// The plan the GPU is heading for and for how many consecutive runs.
    next: Option<(bool, Vec<u32>)>,
    streak: u32,
}

impl GpuSt {
    fn in_use(&self) -> usize {
        self.insts.iter().filter(|(_, p)| p.is_some()).count() + self.used.len()
    }
}

#[derive(Debug, Clone)]
struct NodeSt {
    cores_used: u32,
    ram_used: u32,
    /// Serves nothing before this time (re-layout).
    up_at: f64,
    gpus: Vec<GpuSt>,
}

#[derive(Debug, Clone, Default)]
struct PodSt {
    /// Node and (GPU, instance index or start) per GI while running.
    at: Option<(usize, Vec<(usize, usize)>)>,
    started: Option<f64>,
    first_start: Option<f64>,
    waiting_since: Option<f64>,
    /// Seconds left to run.
    left: Option<f64>,
    epoch: u32,
    gave_up: Option<f64>,
}

/// The per-GPU view the TUI or a test reads: layout name, the plan it heads for, the streak.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuView {
    pub layout: String,
    pub next: Option<String>,
    pub streak: u32,
    pub in_use: usize,
    /// The GPU model's name.
    pub model: String,
    /// Each instance: its profile's name and whether a pod uses it (static layouts: every
    /// instance of the layout; dynamic: the instances created for pods, all in use).
    pub instances: Vec<(String, bool)>,
    /// Compute slices the model has, and those no instance uses.
    pub compute_slices: u32,
    pub free_compute: u32,
}

/// The per-node view: its name, until when a re-layout keeps it from serving, its GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    pub name: String,
    /// Set while the node is being re-laid out: the time it serves again, seconds.
    pub relayout_until: Option<f64>,
    pub pods: usize,
    pub gpus: Vec<GpuView>,
}

/// Pods waiting for one profile now.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRow {
    pub profile: String,
    /// Pods waiting (a pod asking for two instances of it counts once).
    pub pods: usize,
    /// Instances they ask for.
    pub instances: usize,
    /// The longest wait so far, seconds.
    pub oldest_wait_s: f64,
}

/// The simulation of one regime.
pub struct Run {
    s: Setup,
    nodes: Vec<NodeSt>,
    pods: Vec<Pod>,
    st: Vec<PodSt>,
    pending: VecDeque<usize>,
    heap: BinaryHeap<Ev>,
    seq: u64,
    now: f64,
    /// Per model: samples (time, instances in use per profile) over the forecast window.
    usage: BTreeMap<ModelId, VecDeque<(f64, Vec<u32>)>>,
    /// During a defragmentation pass: the GPUs (node, GPU) a restarted pod may go to.
    targets: Option<std::collections::BTreeSet<(usize, usize)>>,
    /// The last epoch given to a pod.
    epochs: u32,
    m: Acc,
}

#[derive(Debug, Clone, Default)]
struct Acc {
    pending_s: BTreeMap<(ModelId, ProfileId), f64>,
    drains: u64,
    evicted: u64,
    resets: u64,
    idle_s: f64,
    stranded_s: f64,
    hosts_s: f64,
    gpus_s: f64,
    joules: f64,
    drain_log: Vec<Drain>,
    defrag_passes: u64,
    restarts: u64,
    defrag_emptied: u64,
    defrag_pending_started: u64,
    restart_downtime_s: f64,
    defrag_log: Vec<DefragPass>,
}

impl Run {
    pub fn new(s: Setup) -> Run {
        let cat = s.catalog;
        let nodes = s
            .nodes
            .iter()
            .map(|n| NodeSt {
                cores_used: 0,
                ram_used: 0,
                up_at: 0.0,
                gpus: n
                    .gpus
                    .iter()
                    .map(|g| {
                        let mut st = GpuSt {
                            model: g.model,
                            mig: g.mig_enabled,
                            counts: g.counts.clone(),
                            insts: Vec::new(),
                            occ: Occupancy::empty(),
                            used: Vec::new(),
                            next: None,
                            streak: 0,
                        };
                        if s.settings.kind == RegimeKind::Dynamic {
                            st.mig = cat.model(g.model).mig;
                            st.counts = vec![0; cat.model(g.model).profiles.len()];
                        } else {
                            st.insts = instances_of(&st.counts);
                        }
                        st
                    })
                    .collect(),
            })
            .collect();
        let mut pods = Vec::new();
        let mut placed = Vec::new();
        for (p, node, gpus) in &s.running {
            placed.push((pods.len(), *node, gpus.clone()));
            pods.push(p.clone());
        }
        let first_arrival = pods.len();
        pods.extend(s.arrivals.iter().cloned());
        let st = pods
            .iter()
            .map(|p| PodSt {
                left: p.lifetime,
                ..PodSt::default()
            })
            .collect();
        let mut run = Run {
            s,
            nodes,
            pods,
            st,
            pending: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0.0,
            usage: BTreeMap::new(),
            targets: None,
            epochs: 0,
            m: Acc::default(),
        };
        for (i, node, gpus) in placed {
            if !run.start_on(i, node, Some(&gpus)) {
                // The starting fleet's pod does not fit its GPUs' layout: it waits like any other.
                run.st[i].waiting_since = Some(0.0);
                run.pending.push_back(i);
            }
        }
        for i in first_arrival..run.pods.len() {
            let t = run.pods[i].arrival;
            run.push(t, Kind::Arrive, i, 0);
        }
        if run.s.settings.kind == RegimeKind::StaticLayouts {
            let p = run.s.settings.period_min * 60.0;
            run.push(p, Kind::Planner, 0, 0);
        }
        if run.s.settings.kind == RegimeKind::Dynamic {
            if let Some(h) = run.s.settings.defrag_every_h {
                run.push(h * 3600.0, Kind::Defrag, 0, 0);
            }
        }
        run
    }

    fn push(&mut self, t: f64, kind: Kind, arg: usize, epoch: u32) {
        self.seq += 1;
        self.heap.push(Ev {
            t,
            kind,
            seq: self.seq,
            arg,
            epoch,
        });
    }

    /// Runs to the horizon and reports.
    pub fn finish(mut self) -> Report {
        self.run_until(self.s.horizon_s);
        self.report()
    }

    /// Runs every event up to and including time `t` (at most the horizon).
    pub fn run_until(&mut self, t: f64) {
        let t = t.min(self.s.horizon_s);
        while let Some(ev) = self.heap.peek().copied() {
            if ev.t > t {
                break;
            }
            self.heap.pop();
            self.advance(ev.t);
            match ev.kind {
                Kind::Depart => self.depart(ev.arg, ev.epoch),
                Kind::NodeUp => self.try_pending(),
                Kind::Arrive => {
                    let i = ev.arg;
                    self.st[i].waiting_since = Some(self.now);
                    if !self.start(i) {
                        self.pending.push_back(i);
                        if let Some(m) = self.s.settings.pending_timeout_min {
                            let e = self.st[i].epoch;
                            self.push(self.now + m * 60.0, Kind::Timeout, i, e);
                        }
                    }
                }
                Kind::Timeout => {
                    let i = ev.arg;
                    if self.st[i].epoch == ev.epoch && self.st[i].first_start.is_none() {
                        if let Some(k) = self.pending.iter().position(|&x| x == i) {
                            self.pending.remove(k);
                            self.st[i].waiting_since = None;
                            self.st[i].gave_up = Some(self.now);
                        }
                    }
                }
                Kind::Planner => {
                    self.plan();
                    let p = self.s.settings.period_min * 60.0;
                    self.push(self.now + p, Kind::Planner, 0, 0);
                }
                Kind::Defrag => {
                    self.defrag();
                    if let Some(h) = self.s.settings.defrag_every_h {
                        self.push(self.now + h * 3600.0, Kind::Defrag, 0, 0);
                    }
                }
            }
        }
        self.advance(t);
    }

    /// Integrates the metrics from the last event to `t`.
    fn advance(&mut self, t: f64) {
        let lo = self.now.max(self.s.warmup_s);
        let hi = t.min(self.s.horizon_s);
        let dt = hi - lo;
        if dt > 0.0 {
            let cat = self.s.catalog;
            let dynamic = self.s.settings.kind == RegimeKind::Dynamic;
            for &i in &self.pending {
                for &g in &self.pods[i].gis {
                    *self.m.pending_s.entry(g).or_default() += dt;
                }
            }
            let mut watts = 0.0;
            for (n, node) in self.nodes.iter().enumerate() {
                let spec = &self.s.nodes[n];
                let mut busy = false;
                for g in &node.gpus {
                    let model = cat.model(g.model);
                    let used = g.in_use();
                    busy |= used > 0;
                    if used > 0 {
                        self.m.gpus_s += dt;
                    }
                    let mut compute = 0u32;
                    for &(p, pod) in &g.insts {
                        if pod.is_some() {
                            compute += model.profiles[p].compute as u32;
                        } else if node.up_at <= self.now {
                            self.m.idle_s += dt;
                        }
                    }
                    for &(_, p, _) in &g.used {
                        compute += model.profiles[p].compute as u32;
                    }
                    let slices = model.compute_slices.max(1) as f64;
                    watts += model.idle_w + (model.max_w - model.idle_w) * (compute as f64 / slices).min(1.0);
                    self.m.stranded_s += dt * stranded(model, g, dynamic) as f64;
                }
                if busy {
                    self.m.hosts_s += dt;
                }
                let load = node.cores_used as f64 / spec.cores.max(1) as f64;
                watts += cat.curves[spec.curve].watts(load);
            }
            self.m.joules += watts * dt;
        }
        self.now = self.now.max(t);
    }

    fn depart(&mut self, i: usize, epoch: u32) {
        if self.st[i].epoch != epoch || self.st[i].at.is_none() {
            return;
        }
        self.release(i);
        self.st[i].left = Some(0.0);
        self.try_pending();
    }

    /// Frees what pod `i` holds; its lifetime left is kept.
    fn release(&mut self, i: usize) {
        let Some((n, gis)) = self.st[i].at.take() else {
            return;
        };
        let pod = &self.pods[i];
        let node = &mut self.nodes[n];
        node.cores_used = node.cores_used.saturating_sub(pod.cores);
        node.ram_used = node.ram_used.saturating_sub(pod.ram_gb);
        for (g, k) in gis {
            let gpu = &mut node.gpus[g];
            if self.s.settings.kind == RegimeKind::Dynamic {
                if let Some(pos) = gpu.used.iter().position(|&(pi, _, z)| pi == i && z as usize == k) {
                    let (_, p, z) = gpu.used.remove(pos);
                    gpu.occ.remove(self.s.catalog.model(gpu.model), p, z);
                }
            } else if let Some(slot) = gpu.insts.get_mut(k) {
                slot.1 = None;
            }
        }
        if let (Some(left), Some(started)) = (self.st[i].left, self.st[i].started) {
            self.st[i].left = Some((left - (self.now - started)).max(0.0));
        }
        self.st[i].started = None;
        // A fresh epoch, never used before: the pod's pending events (its departure) lapse,
        // also after a defragmentation pass puts the pod back as it was.
        self.epochs += 1;
        self.st[i].epoch = self.epochs;
    }

    /// Starts as many waiting pods as find room, oldest first.
    fn try_pending(&mut self) {
        let waiting: Vec<usize> = self.pending.iter().copied().collect();
        for i in waiting {
            if self.start(i) {
                if let Some(k) = self.pending.iter().position(|&x| x == i) {
                    self.pending.remove(k);
                }
            }
        }
    }

    /// Allocates pod `i` where the device plugin puts it; false when nothing has room.
    fn start(&mut self, i: usize) -> bool {
        let order = self.node_order();
        for n in order {
            if self.start_on(i, n, None) {
                return true;
            }
        }
        false
    }

    /// Nodes in the device plugin's order.
    fn node_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        if self.s.settings.plugin_choice == PluginChoice::Packed {
            order.sort_by_key(|&n| {
                std::cmp::Reverse(self.nodes[n].gpus.iter().map(GpuSt::in_use).sum::<usize>())
            });
        }
        order
    }

    /// Allocates pod `i` on node `n` (on the given GPUs when `gpus` is set); false when it does not fit.
    fn start_on(&mut self, i: usize, n: usize, gpus: Option<&[usize]>) -> bool {
        let cat = self.s.catalog;
        let dynamic = self.s.settings.kind == RegimeKind::Dynamic;
        // A defragmentation pass packs: the fullest GPU first.
        let packed = self.s.settings.plugin_choice == PluginChoice::Packed || self.targets.is_some();
        let node = &self.nodes[n];
        let spec = &self.s.nodes[n];
        let pod = &self.pods[i];
        if node.up_at > self.now
            || node.cores_used + pod.cores > spec.cores
            || node.ram_used + pod.ram_gb > spec.ram_gb
        {
            return false;
        }
        let mut trial = node.gpus.clone();
        let mut got: Vec<(usize, usize)> = Vec::new();
        for (k, &(model, p)) in pod.gis.iter().enumerate() {
            let mut cands: Vec<usize> = match gpus {
                Some(gs) => gs.get(k).copied().into_iter().collect(),
                None => (0..trial.len()).collect(),
            };
            cands.retain(|&g| trial.get(g).is_some_and(|x| x.model == model && x.mig));
            if let Some(t) = &self.targets {
                cands.retain(|&g| t.contains(&(n, g)));
            }
            if packed {
                cands.sort_by_key(|&g| std::cmp::Reverse(trial[g].in_use()));
            }
            let mut placed = None;
            for g in cands {
                let gpu = &mut trial[g];
                if dynamic {
                    let m = cat.model(model);
                    if let Some(z) = mig::default_start(m, &gpu.occ, p) {
                        gpu.occ.add(m, p, z);
                        gpu.used.push((i, p, z));
                        placed = Some((g, z as usize));
                        break;
                    }
                } else if let Some(x) = gpu.insts.iter().position(|&(q, pod)| q == p && pod.is_none()) {
                    gpu.insts[x].1 = Some(i);
                    placed = Some((g, x));
                    break;
                }
            }
            match placed {
                Some(pl) => got.push(pl),
                None => return false,
            }
        }
        let node = &mut self.nodes[n];
        node.gpus = trial;
        node.cores_used += pod.cores;
        node.ram_used += pod.ram_gb;
        let st = &mut self.st[i];
        st.at = Some((n, got));
        st.started = Some(self.now);
        st.first_start.get_or_insert(self.now);
        st.waiting_since = None;
        let (left, epoch) = (st.left, st.epoch);
        if let Some(l) = left {
            self.push(self.now + l, Kind::Depart, i, epoch);
        }
        self.sample_usage();
        true
    }

    /// Instances in use per profile of `model`.
    fn in_use(&self, model: ModelId) -> Vec<u32> {
        let mut v = vec![0u32; self.s.catalog.model(model).profiles.len()];
        for node in &self.nodes {
            for g in node.gpus.iter().filter(|g| g.model == model) {
                for &(p, pod) in &g.insts {
                    if pod.is_some() {
                        v[p] += 1;
                    }
                }
                for &(_, p, _) in &g.used {
                    v[p] += 1;
                }
            }
        }
        v
    }

    /// Records the instances in use per model (the forecast's samples) and drops old samples.
    fn sample_usage(&mut self) {
        if self.s.settings.kind != RegimeKind::StaticLayouts {
            return;
        }
        let models: Vec<ModelId> = self.s.menus.keys().copied().collect();
        let window = self.s.settings.forecast_h * 3600.0;
        for m in models {
            let v = self.in_use(m);
            let q = self.usage.entry(m).or_default();
            q.push_back((self.now, v));
            while q.front().is_some_and(|(t, _)| *t < self.now - window) {
                q.pop_front();
            }
        }
    }

    /// The planner's demand for `model`: pending pods per profile plus the peak in use over the
    /// forecast window (at least what is in use now).
    pub fn demand(&self, model: ModelId) -> Vec<u32> {
        let mut d = self.in_use(model);
        let window = self.s.settings.forecast_h * 3600.0;
        if let Some(q) = self.usage.get(&model) {
            for (t, v) in q {
                if *t >= self.now - window {
                    for (a, b) in d.iter_mut().zip(v) {
                        *a = (*a).max(*b);
                    }
                }
            }
        }
        for &i in &self.pending {
            for &(m, p) in &self.pods[i].gis {
                if m == model {
                    d[p] += 1;
                }
            }
        }
        d
    }

    /// The layouts the planner wants for `model`'s GPUs this period (fewer than the GPUs when
    /// some are left free), or none when the menu serves nothing of the demand.
    fn planned(&self, model: ModelId) -> Vec<(bool, Vec<u32>)> {
        let cat = self.s.catalog;
        let m = cat.model(model);
        let Some(menu) = self.s.menus.get(&model) else {
            return Vec::new();
        };
        let refs: Vec<&Layout> = menu.iter().collect();
        let mut demand = self.demand(model);
        // Profiles no layout of the menu holds cannot be planned for: their pods wait.
        for (p, d) in demand.iter_mut().enumerate() {
            if !menu.iter().any(|l| l.counts[p] > 0) {
                *d = 0;
            }
        }
        let gpus: usize = self
            .nodes
            .iter()
            .map(|n| n.gpus.iter().filter(|g| g.model == model).count())
            .sum();
        match layout_planner::greedy(model, m, &refs, &demand, u32::MAX / 2) {
            Ok(plan) => plan
                .gpus
                .into_iter()
                .take(gpus)
                .map(|g| {
                    (
                        menu.iter()
                            .find(|l| l.name == g.name)
                            .is_none_or(|l| l.mig_enabled),
                        g.counts,
                    )
                })
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// One run of the scheduled layout planner: plans, hysteresis, at most one node drained.
    fn plan(&mut self) {
        let models: Vec<ModelId> = self.s.menus.keys().copied().collect();
        for model in models {
            let mut targets = self.planned(model);
            // GPUs of the model: (node, gpu).
            let mut gpus: Vec<(usize, usize)> = Vec::new();
            for (n, node) in self.nodes.iter().enumerate() {
                for (g, x) in node.gpus.iter().enumerate() {
                    if x.model == model {
                        gpus.push((n, g));
                    }
                }
            }
            let mut want: BTreeMap<(usize, usize), (bool, Vec<u32>)> = BTreeMap::new();
            // A GPU that already has a planned layout keeps it.
            for &(n, g) in &gpus {
                let x = &self.nodes[n].gpus[g];
                if let Some(k) = targets
                    .iter()
                    .position(|(mig, c)| *mig == x.mig && *c == x.counts)
                {
                    want.insert((n, g), targets.remove(k));
                }
            }
            // The rest go to the GPUs of the least busy nodes, so changes gather on few nodes;
            // a GPU already heading for a layout keeps heading for it.
            let mut rest: Vec<(usize, usize)> =
                gpus.iter().copied().filter(|k| !want.contains_key(k)).collect();
            for &(n, g) in &rest {
                if let Some(next) = &self.nodes[n].gpus[g].next {
                    if let Some(k) = targets.iter().position(|t| t == next) {
                        want.insert((n, g), targets.remove(k));
                    }
                }
            }
            rest.retain(|k| !want.contains_key(k));
            rest.sort_by_key(|&(n, g)| (self.nodes[n].gpus.iter().map(GpuSt::in_use).sum::<usize>(), n, g));
            for (k, t) in rest.into_iter().zip(targets) {
                want.insert(k, t);
            }
            for &(n, g) in &gpus {
                let x = &mut self.nodes[n].gpus[g];
                match want.remove(&(n, g)) {
                    Some(t) if !(t.0 == x.mig && t.1 == x.counts) => {
                        if x.next.as_ref() == Some(&t) {
                            x.streak += 1;
                        } else {
                            x.next = Some(t);
                            x.streak = 1;
                        }
                    }
                    // Planned as it is, or left free by the plan: it stays.
                    _ => {
                        x.next = None;
                        x.streak = 0;
                    }
                }
            }
        }
        if self.nodes.iter().any(|n| n.up_at > self.now) {
            return; // one node at a time
        }
        let h = self.s.hysteresis;
        for n in 0..self.nodes.len() {
            if !self.nodes[n]
                .gpus
                .iter()
                .any(|g| g.next.is_some() && g.streak >= h)
            {
                continue;
            }
            if !self.s.settings.allow_drain_without_room && !self.room_after_drain(n) {
                continue;
            }
            self.drain(n);
            return;
        }
    }

    /// Whether every pod of node `n` finds an instance of its profiles after a drain: on the
    /// node's layouts after the change, or free on another node that serves.
    fn room_after_drain(&self, n: usize) -> bool {
        let h = self.s.hysteresis;
        let mut need: BTreeMap<(ModelId, ProfileId), u32> = BTreeMap::new();
        for (i, st) in self.st.iter().enumerate() {
            if st.at.as_ref().is_some_and(|(x, _)| *x == n) {
                for &g in &self.pods[i].gis {
                    *need.entry(g).or_default() += 1;
                }
            }
        }
        if need.is_empty() {
            return true;
        }
        let mut have: BTreeMap<(ModelId, ProfileId), u32> = BTreeMap::new();
        for (k, node) in self.nodes.iter().enumerate() {
            for g in &node.gpus {
                if k == n {
                    let (mig, counts) = match &g.next {
                        Some(t) if g.streak >= h => (t.0, &t.1),
                        _ => (g.mig, &g.counts),
                    };
                    if mig {
                        for (p, &c) in counts.iter().enumerate() {
                            *have.entry((g.model, p)).or_default() += c;
                        }
                    }
                } else if node.up_at <= self.now {
                    for &(p, pod) in &g.insts {
                        if pod.is_none() {
                            *have.entry((g.model, p)).or_default() += 1;
                        }
                    }
                }
            }
        }
        need.iter().all(|(k, &c)| have.get(k).copied().unwrap_or(0) >= c)
    }

    /// Drains node `n`: every pod leaves and waits again, the ready GPUs take their new layout,
    /// the node serves nothing for the re-layout time.
    fn drain(&mut self, n: usize) {
        let cat = self.s.catalog;
        let h = self.s.hysteresis;
        let on: Vec<usize> = (0..self.pods.len())
            .filter(|&i| self.st[i].at.as_ref().is_some_and(|(x, _)| *x == n))
            .collect();
        for &i in &on {
            self.release(i);
            self.st[i].waiting_since = Some(self.now);
        }
        // Evicted pods wait ahead of the queue, oldest first.
        for &i in on.iter().rev() {
            self.pending.push_front(i);
        }
        let mut changed = Vec::new();
        let mut resets = 0;
        for (g, gpu) in self.nodes[n].gpus.iter_mut().enumerate() {
            let Some(t) = gpu.next.take().filter(|_| gpu.streak >= h) else {
                continue;
            };
            let model = cat.model(gpu.model);
            let before = name_of(self.s.menus.get(&gpu.model), model, gpu.mig, &gpu.counts);
            if t.0 && !gpu.mig && model.mig_enable_reset {
                resets += 1;
            }
            gpu.mig = t.0;
            gpu.counts = t.1;
            gpu.insts = instances_of(&gpu.counts);
            gpu.streak = 0;
            let after = name_of(self.s.menus.get(&gpu.model), model, gpu.mig, &gpu.counts);
            changed.push((g, before, after));
        }
        let up = self.now + self.s.settings.relayout_s;
        self.nodes[n].up_at = up;
        self.push(up, Kind::NodeUp, n, 0);
        let counted = self.now >= self.s.warmup_s && self.now <= self.s.horizon_s;
        if counted {
            self.m.drains += 1;
            self.m.evicted += on.len() as u64;
            self.m.resets += resets;
        }
        self.m.drain_log.push(Drain {
            t: self.now,
            node: self.s.nodes[n].name.clone(),
            gpus: changed,
            evicted: on.len() as u32,
            resets: resets as u32,
        });
        // Evicted pods take free instances elsewhere at once.
        self.try_pending();
    }

    /// The pods holding an instance on GPU `g` of node `n`.
    fn pods_on(&self, n: usize, g: usize) -> Vec<usize> {
        (0..self.pods.len())
            .filter(|&i| {
                self.st[i]
                    .at
                    .as_ref()
                    .is_some_and(|(x, gis)| *x == n && gis.iter().any(|&(k, _)| k == g))
            })
            .collect()
    }

    /// One restart-based defragmentation pass (dynamic MIG): the GPUs in use, least used first,
    /// are emptied one by one by restarting their pods on other GPUs already in use (the
    /// fullest node and GPU first), within the pass's restart budget. A GPU whose pods do not
    /// all find room keeps them: no pod restarts unless its GPU empties. A restarted pod holds
    /// its new instance at once and runs `restart_s` later. Waiting pods then take the room.
    fn defrag(&mut self) {
        let budget = self.s.settings.defrag_max_restarts_or_default() as usize;
        let down = self.s.settings.restart_s_or_default();
        let mut sources: Vec<(usize, usize, usize, u32)> = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            if node.up_at > self.now {
                continue;
            }
            for (g, x) in node.gpus.iter().enumerate() {
                if !x.used.is_empty() {
                    let m = self.s.catalog.model(x.model);
                    let compute: u32 = x.used.iter().map(|&(_, p, _)| m.profiles[p].compute as u32).sum();
                    sources.push((x.used.len(), compute as usize, n, g as u32));
                }
            }
        }
        sources.sort();
        let mut restarted: Vec<usize> = Vec::new();
        let mut received: std::collections::BTreeSet<(usize, usize)> = Default::default();
        let mut emptied: Vec<(usize, usize)> = Vec::new();
        for (_, _, n, g) in sources {
            let g = g as usize;
            if received.contains(&(n, g)) {
                continue;
            }
            let on = self.pods_on(n, g);
            if on.is_empty() || restarted.len() + on.len() > budget {
                continue;
            }
            let (nodes, st) = (self.nodes.clone(), self.st.clone());
            for &i in &on {
                self.release(i);
            }
            // Targets: GPUs still in use, not emptied in this pass, other than this one.
            let mut targets = std::collections::BTreeSet::new();
            for (k, node) in self.nodes.iter().enumerate() {
                if node.up_at > self.now {
                    continue;
                }
                for (h, x) in node.gpus.iter().enumerate() {
                    if !x.used.is_empty() && (k, h) != (n, g) {
                        targets.insert((k, h));
                    }
                }
            }
            self.targets = Some(targets);
            let mut order: Vec<usize> = (0..self.nodes.len()).collect();
            order.sort_by_key(|&k| {
                std::cmp::Reverse(self.nodes[k].gpus.iter().map(GpuSt::in_use).sum::<usize>())
            });
            let mut all = true;
            for &i in &on {
                // Its work stops for the restart: it departs that much later.
                self.st[i].left = self.st[i].left.map(|l| l + down);
                if !order.iter().any(|&k| self.start_on(i, k, None)) {
                    all = false;
                    break;
                }
            }
            self.targets = None;
            if !all {
                // Put everything back as it was: the departures pushed meanwhile carry epochs
                // no pod holds.
                self.nodes = nodes;
                self.st = st;
                continue;
            }
            for &i in &on {
                if let Some((k, gis)) = &self.st[i].at {
                    for &(h, _) in gis {
                        received.insert((*k, h));
                    }
                }
            }
            restarted.extend(on);
            emptied.push((n, g));
        }
        let waiting = self.pending.len();
        self.try_pending();
        let started = waiting - self.pending.len();
        let counted = self.now >= self.s.warmup_s && self.now <= self.s.horizon_s;
        if counted {
            self.m.defrag_passes += 1;
            self.m.restarts += restarted.len() as u64;
            self.m.defrag_emptied += emptied.len() as u64;
            self.m.defrag_pending_started += started as u64;
            self.m.restart_downtime_s += down * restarted.len() as f64;
        }
        self.m.defrag_log.push(DefragPass {
            t: self.now,
            restarts: restarted.len() as u32,
            emptied: emptied
                .into_iter()
                .map(|(n, g)| (self.s.nodes[n].name.clone(), g))
                .collect(),
            pending_started: started as u32,
        });
    }

    /// The defragmentation passes so far.
    pub fn defrag_passes(&self) -> &[DefragPass] {
        &self.m.defrag_log
    }

    /// Each GPU's state now, node by node.
    pub fn view(&self) -> Vec<Vec<GpuView>> {
        self.nodes
            .iter()
            .map(|node| node.gpus.iter().map(|g| self.gpu_view(g)).collect())
            .collect()
    }

    fn gpu_view(&self, g: &GpuSt) -> GpuView {
        let cat = self.s.catalog;
        let menu = self.s.menus.get(&g.model);
        let model = cat.model(g.model);
        let dynamic = self.s.settings.kind == RegimeKind::Dynamic;
        let pname = |p: ProfileId| model.profiles[p].name.clone();
        let instances: Vec<(String, bool)> = if dynamic {
            g.used.iter().map(|&(_, p, _)| (pname(p), true)).collect()
        } else {
            g.insts
                .iter()
                .map(|&(p, pod)| (pname(p), pod.is_some()))
                .collect()
        };
        let used: u32 = if dynamic {
            g.used
                .iter()
                .map(|&(_, p, _)| model.profiles[p].compute as u32)
                .sum()
        } else {
            g.insts
                .iter()
                .map(|&(p, _)| model.profiles[p].compute as u32)
                .sum()
        };
        GpuView {
            layout: if dynamic && g.mig {
                "dynamic".into()
            } else {
                name_of(menu, model, g.mig, &g.counts)
            },
            next: g.next.as_ref().map(|(mig, c)| name_of(menu, model, *mig, c)),
            streak: g.streak,
            in_use: g.in_use(),
            model: model.name.clone(),
            instances,
            compute_slices: model.compute_slices as u32,
            free_compute: (model.compute_slices as u32).saturating_sub(used),
        }
    }

    /// Each node's state now.
    pub fn nodes_view(&self) -> Vec<NodeView> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(n, node)| NodeView {
                name: self.s.nodes[n].name.clone(),
                relayout_until: (node.up_at > self.now).then_some(node.up_at),
                pods: self
                    .st
                    .iter()
                    .filter(|st| st.at.as_ref().is_some_and(|(x, _)| *x == n))
                    .count(),
                gpus: node.gpus.iter().map(|g| self.gpu_view(g)).collect(),
            })
            .collect()
    }

    /// The pending queue per profile: pods, instances asked for, the longest wait.
    pub fn pending_rows(&self) -> Vec<PendingRow> {
        let mut rows: BTreeMap<String, PendingRow> = BTreeMap::new();
        for &i in &self.pending {
            let wait = self.st[i].waiting_since.map_or(0.0, |t| (self.now - t).max(0.0));
            let mut seen: Vec<String> = Vec::new();
            for &(m, p) in &self.pods[i].gis {
                let name = self.s.catalog.model(m).profiles[p].name.clone();
                let row = rows.entry(name.clone()).or_insert_with(|| PendingRow {
                    profile: name.clone(),
                    pods: 0,
                    instances: 0,
                    oldest_wait_s: 0.0,
                });
                row.instances += 1;
                row.oldest_wait_s = row.oldest_wait_s.max(wait);
                if !seen.contains(&name) {
                    row.pods += 1;
                    seen.push(name);
                }
            }
        }
        rows.into_values().collect()
    }

    /// Pods waiting now.
    pub fn pending_pods(&self) -> usize {
        self.pending.len()
    }

    /// Pods running now.
    pub fn running_pods(&self) -> usize {
        self.st.iter().filter(|st| st.at.is_some()).count()
    }

    /// The time of the next event (arrival, departure, node back, timeout, planner run), if any
    /// before the horizon.
    pub fn next_event_at(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.t).filter(|&t| t <= self.s.horizon_s)
    }

    /// When the layout planner runs next (static layouts).
    pub fn next_planner_at(&self) -> Option<f64> {
        (self.s.settings.kind == RegimeKind::StaticLayouts).then(|| {
            let p = self.s.settings.period_min * 60.0;
            ((self.now / p).floor() + 1.0) * p
        })
    }

    /// When the next restart-based defragmentation pass runs (dynamic MIG with passes).
    pub fn next_defrag_at(&self) -> Option<f64> {
        let h = self.s.settings.defrag_every_h?;
        (self.s.settings.kind == RegimeKind::Dynamic).then(|| {
            let p = h * 3600.0;
            ((self.now / p).floor() + 1.0) * p
        })
    }

    /// The settings the run plays, and the hysteresis in force.
    pub fn settings(&self) -> (&RegimeSettings, u32) {
        (&self.s.settings, self.s.hysteresis)
    }

    /// The end of the warm-up and the horizon, seconds.
    pub fn window(&self) -> (f64, f64) {
        (self.s.warmup_s, self.s.horizon_s)
    }

    /// The report of the run so far (the measured window up to now).
    pub fn report_now(&self) -> Report {
        self.report()
    }

    /// Pods waiting now, per profile name.
    pub fn pending_by_profile(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for &i in &self.pending {
            for &(m, p) in &self.pods[i].gis {
                *out.entry(self.s.catalog.model(m).profiles[p].name.clone())
                    .or_default() += 1;
            }
        }
        out
    }

    /// The drains so far.
    pub fn drains(&self) -> &[Drain] {
        &self.m.drain_log
    }

    /// Simulated time now, seconds.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// When pod `id` first started, if it did.
    pub fn first_start(&self, id: u64) -> Option<f64> {
        self.pods
            .iter()
            .position(|p| p.id == id)
            .and_then(|i| self.st[i].first_start)
    }

    fn report(&self) -> Report {
        let cat = self.s.catalog;
        let set = &self.s.settings;
        let hours = ((self.s.horizon_s - self.s.warmup_s) / 3600.0).max(0.0);
        let days = hours / 24.0;
        let per_day = |x: u64| if days > 0.0 { x as f64 / days } else { 0.0 };
        let mut pending_pod_hours = BTreeMap::new();
        for (&(m, p), &s) in &self.m.pending_s {
            *pending_pod_hours
                .entry(cat.model(m).profiles[p].name.clone())
                .or_insert(0.0) += s / 3600.0;
        }
        // Pods that arrived in the window so far (all of them once the run reached the horizon).
        let in_window = |p: &Pod| p.arrival >= self.s.warmup_s && p.arrival <= self.s.horizon_s.min(self.now);
        let mut waits: Vec<f64> = Vec::new();
        let (mut arrived, mut started, mut gave_up) = (0, 0, 0);
        let waiting = self.pending.len() as u64;
        for (p, st) in self.pods.iter().zip(&self.st) {
            if !in_window(p) {
                continue;
            }
            arrived += 1;
            let end = match (st.first_start, st.gave_up) {
                (Some(t), _) => {
                    started += 1;
                    t
                }
                (None, Some(t)) => {
                    gave_up += 1;
                    t
                }
                (None, None) => self.now,
            };
            waits.push((end - p.arrival).max(0.0) / 60.0);
        }
        waits.sort_by(f64::total_cmp);
        let pct = |q: f64| -> f64 {
            if waits.is_empty() {
                return 0.0;
            }
            let k = ((q * waits.len() as f64).ceil() as usize).clamp(1, waits.len());
            waits[k - 1]
        };
        let span = (self.s.horizon_s - self.s.warmup_s).max(1e-9);
        let mut final_layouts = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            for (g, x) in node.gpus.iter().enumerate() {
                let model = cat.model(x.model);
                let name = if set.kind == RegimeKind::Dynamic {
                    format!("dynamic ({} in use)", x.used.len())
                } else {
                    name_of(self.s.menus.get(&x.model), model, x.mig, &x.counts)
                };
                final_layouts.push((self.s.nodes[n].name.clone(), g, name));
            }
        }
        Report {
            regime: set.kind.name(),
            plugin_choice: set.plugin_choice.name(),
            period_min: set.period_min,
            hysteresis: self.s.hysteresis,
            hours,
            pods_arrived: arrived,
            pods_started: started,
            pods_timed_out: gave_up,
            pods_waiting_at_end: waiting,
            pending_pod_hours_total: pending_pod_hours.values().sum::<f64>() + 0.0,
            pending_pod_hours,
            wait_p50_min: pct(0.5),
            wait_p95_min: pct(0.95),
            drains: self.m.drains,
            drains_per_day: per_day(self.m.drains),
            evicted_pods: self.m.evicted,
            evicted_per_day: per_day(self.m.evicted),
            gpu_resets: self.m.resets,
            idle_instance_hours: self.m.idle_s / 3600.0,
            stranded_compute_slice_hours: self.m.stranded_s / 3600.0,
            mean_active_hosts: self.m.hosts_s / span,
            mean_active_gpus: self.m.gpus_s / span,
            energy_kwh: self.m.joules / 3.6e6,
            drain_log: self.m.drain_log.clone(),
            defrag_every_h: set.defrag_every_h.filter(|_| set.kind == RegimeKind::Dynamic),
            defrag_passes: self.m.defrag_passes,
            restarts: self.m.restarts,
            restarts_per_day: per_day(self.m.restarts),
            defrag_emptied_gpus: self.m.defrag_emptied,
            defrag_pending_started: self.m.defrag_pending_started,
            restart_downtime_pod_hours: self.m.restart_downtime_s / 3600.0,
            defrag_log: self.m.defrag_log.clone(),
            final_layouts,
        }
    }
}

/// One unused instance per count.
fn instances_of(counts: &[u32]) -> Vec<(ProfileId, Option<usize>)> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(p, &c)| std::iter::repeat_n((p, None), c as usize))
        .collect()
}

/// Compute slices of a GPU no pod can use now (see [`Report::stranded_compute_slice_hours`]).
fn stranded(model: &crate::catalog::GpuModel, g: &GpuSt, dynamic: bool) -> u32 {
    if !g.mig {
        return 0;
    }
    if !dynamic {
        // Static: the slices no instance of the layout covers.
        return (model.compute_slices as u32).saturating_sub(layouts::compute_of(model, &g.counts));
    }
    let used: u32 = g
        .used
        .iter()
        .map(|&(_, p, _)| model.profiles[p].compute as u32)
        .sum();
    let fits = (0..model.profiles.len()).any(|p| mig::capacity(model, &g.occ, p) > 0);
    if fits {
        0
    } else {
        (model.compute_slices as u32).saturating_sub(used)
    }
}

/// A layout's name: the menu's, the catalog's layouts', or its instances.
pub fn name_of(
    menu: Option<&Vec<Layout>>,
    model: &crate::catalog::GpuModel,
    mig: bool,
    counts: &[u32],
) -> String {
    if !mig {
        return "MIG disabled".into();
    }
    if let Some(l) = menu.and_then(|m| m.iter().find(|l| l.mig_enabled && l.counts == counts)) {
        return l.name.clone();
    }
    let all = layouts::embedded();
    if let Some(mid) = crate::catalog::embedded().model_id(&model.name) {
        if let Some(n) = all.name_of(mid, counts) {
            return n.to_string();
        }
    }
    layouts::describe_counts(model, counts)
}
