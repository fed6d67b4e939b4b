//! Request streams for the simulator: the synthetic generator of §6.2 and the replay of the
//! Alibaba GPU pod list mapped to MIG profiles as in §6.5.
//!
//! The generator is lazy: it holds only the next request of each class, so its memory does not
//! grow with the horizon. Each GPU class draws from its own random stream seeded from the scenario
//! seed and the class, so one seed fixes every request whatever the policy does with them.

use crate::catalog::{Catalog, ModelId, ProfileId};
use crate::fleet::{Fleet, GiRequest, Shape, Vm, VmKind};
use crate::scenario::{LifetimeDist, ShapeMix, WorkloadSettings};
use anyhow::{bail, Context};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal, WeightedIndex};
use std::path::Path;
use std::sync::Arc;

/// One VM request as it arrives: what it asks for and how long it runs once admitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Arrival, seconds of simulated time.
    pub arrival: f64,
    pub kind: VmKind,
    /// Lifetime in seconds from admission.
    pub lifetime: f64,
    /// The GIs drawn; for a share or a gang ([`Request::shape`]), the draw its size came from.
    pub gis: Vec<GiRequest>,
    pub cores: u32,
    pub ram_gb: u32,
    /// [`Shape::Mig`] unless `[workload.mix]` made the request a soft share or a gang.
    pub shape: Shape,
}

impl Request {
    /// The request as a fleet VM (not placed) with id `id`: its GIs, or its share or gang.
    pub fn to_vm(&self, id: u64) -> Vm {
        let gis = if self.shape == Shape::Mig {
            self.gis.clone()
        } else {
            Vec::new()
        };
        Vm {
            kind: self.kind,
            arrival: self.arrival,
            lifetime: Some(self.lifetime),
            shape: self.shape,
            ..Vm::job(id, gis, self.cores, self.ram_gb)
        }
    }

    /// Memory slices requested over all GIs.
    pub fn memory_slices(&self, catalog: &Catalog) -> u32 {
        self.gis
            .iter()
            .map(|g| catalog.model(g.model).profiles[g.profile].size as u32)
            .sum()
    }
}

/// SplitMix64: turns (seed, stream) into well-spread seeds for independent random streams.
fn mix_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed
        .wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(stream.wrapping_add(1)))
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Lifetime distribution with the §6.2 means (seconds).
#[derive(Debug, Clone)]
enum Lifetime {
    Exponential {
        job: Exp<f64>,
        tenant: Exp<f64>,
    },
    Lognormal {
        job: LogNormal<f64>,
        tenant: LogNormal<f64>,
    },
}

impl Lifetime {
    fn new(s: &WorkloadSettings) -> anyhow::Result<Self> {
        let (job_s, tenant_s) = (s.job_mean_h * 3600.0, s.tenant_mean_h * 3600.0);
        if !(job_s > 0.0 && tenant_s > 0.0 && job_s.is_finite() && tenant_s.is_finite()) {
            bail!("workload: job_mean_h and tenant_mean_h must be positive");
        }
        Ok(match s.lifetime {
            LifetimeDist::Exponential => Lifetime::Exponential {
                job: Exp::new(1.0 / job_s).context("workload.job_mean_h")?,
                tenant: Exp::new(1.0 / tenant_s).context("workload.tenant_mean_h")?,
            },
            LifetimeDist::Lognormal => {
                let sigma = s.lognormal_sigma;
                if !(sigma > 0.0 && sigma.is_finite()) {
                    bail!("workload.lognormal_sigma must be positive, not {sigma}");
                }
                // Same mean m: mu = ln m - sigma^2 / 2.
                let mu = |m: f64| m.ln() - sigma * sigma / 2.0;
                Lifetime::Lognormal {
                    job: LogNormal::new(mu(job_s), sigma).context("workload.lognormal_sigma")?,
                    tenant: LogNormal::new(mu(tenant_s), sigma).context("workload.lognormal_sigma")?,
                }
            }
        })
    }

    fn draw(&self, kind: VmKind, rng: &mut StdRng) -> f64 {
        match (self, kind) {
            (Lifetime::Exponential { job, .. }, VmKind::Job) => job.sample(rng),
            (Lifetime::Exponential { tenant, .. }, VmKind::Tenant) => tenant.sample(rng),
            (Lifetime::Lognormal { job, .. }, VmKind::Job) => job.sample(rng),
            (Lifetime::Lognormal { tenant, .. }, VmKind::Tenant) => tenant.sample(rng),
        }
    }
}

/// The request stream of one GPU class.
#[derive(Debug, Clone)]
struct ClassStream {
    model: ModelId,
    /// Arrivals per second.
    rate: f64,
    profiles: Vec<ProfileId>,
    weights: WeightedIndex<f64>,
    rng: StdRng,
    next: Request,
}

/// Rate and profile distribution of one class, as the generator derives them (for reports and
/// tests).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRate {
    /// Model whose profiles the class's requests use.
    pub model: String,
    /// GPUs of the class in the fleet, |K_class|.
    pub gpus: usize,
    /// Arrivals per hour.
    pub per_hour: f64,
    /// E[f]: expected share of one GPU's memory slices a VM of the class occupies.
    pub mean_share: f64,
    /// Profiles drawn and their probabilities.
    pub profiles: Vec<(String, f64)>,
}

/// The synthetic workload of §6.2.
#[derive(Debug, Clone)]
pub struct Synthetic {
    streams: Vec<ClassStream>,
    job_share: f64,
    two_gi_prob: f64,
    cores_per_slice: u32,
    ram_per_slice: u32,
    lifetime: Lifetime,
    catalog: &'static Catalog,
    rates: Vec<ClassRate>,
    mix: ShapeMix,
}

/// Mean lifetime E[L] in hours.
pub fn mean_lifetime_h(s: &WorkloadSettings) -> f64 {
    s.job_share * s.job_mean_h + (1.0 - s.job_share) * s.tenant_mean_h
}

/// The profiles a class draws from and their weights (§6.2: uniform over the model's profiles
/// without +me; `profile_mix` replaces the weights; `large_profile_weight` scales the profiles of
/// at least half a GPU).
fn profile_weights(
    catalog: &Catalog,
    m: ModelId,
    s: &WorkloadSettings,
) -> anyhow::Result<Vec<(ProfileId, f64)>> {
    let model = catalog.model(m);
    let mix = s.profile_mix.get(&model.name);
    let mut out = Vec::new();
    for (p, prof) in model.profiles.iter().enumerate() {
        let mut w = match mix {
            Some(mix) => mix.get(&prof.name).copied().unwrap_or(0.0),
            None if prof.media_ext && !s.media_ext => 0.0,
            None => 1.0,
        };
        if !(w >= 0.0 && w.is_finite()) {
            bail!(
                "workload.profile_mix: weight of {} {} must be a non-negative number",
                model.name,
                prof.name
            );
        }
        if 2 * prof.size as u32 >= model.memory_slices as u32 {
            w *= s.large_profile_weight;
        }
        if w > 0.0 {
            out.push((p, w));
        }
    }
    if out.is_empty() {
        bail!("workload: no profile of {} has a positive weight", model.name);
    }
    Ok(out)
}

impl Synthetic {
    /// Builds the generator for `fleet`, with the first arrivals after `t0`.
    ///
    /// Rates: each class carries the offered load rho on its own GPUs,
    /// lambda_class = rho |K_class| / (E[L] E[f_class]) with E[f_class] = E[#GIs] x mean profile
    /// size / |U| (§6.2).
    pub fn new(s: &WorkloadSettings, fleet: &Fleet, t0: f64) -> anyhow::Result<Self> {
        let catalog = fleet.catalog;
        if !(s.load >= 0.0 && s.load.is_finite()) {
            bail!("workload.load must be a non-negative number, not {}", s.load);
        }
        if !(0.0..=1.0).contains(&s.job_share) {
            bail!("workload.job_share must be within 0..1, not {}", s.job_share);
        }
        if !(0.0..=1.0).contains(&s.two_gi_prob) {
            bail!("workload.two_gi_prob must be within 0..1, not {}", s.two_gi_prob);
        }
        if !(s.large_profile_weight >= 0.0 && s.large_profile_weight.is_finite()) {
            bail!("workload.large_profile_weight must be non-negative");
        }
        s.mix.check()?;
        let lifetime = Lifetime::new(s)?;
        let mean_l_s = mean_lifetime_h(s) * 3600.0;
        // GPUs per class, keyed by the first model of the class in catalog order.
        let mut classes: Vec<(ModelId, usize)> = Vec::new();
        for g in fleet.hosts.iter().flat_map(|h| &h.gpus) {
            let rep = (0..catalog.models.len())
                .find(|&m| catalog.same_class(m, g.model))
                .unwrap_or(g.model);
            match classes.iter_mut().find(|(m, _)| *m == rep) {
                Some(c) => c.1 += 1,
                None => classes.push((rep, 1)),
            }
        }
        classes.sort();
        let mut streams = Vec::new();
        let mut rates = Vec::new();
        for (m, gpus) in classes {
            let model = catalog.model(m);
            // A class without MIG (the L40S, the L4) has no profile to draw: its GPUs carry
            // no synthetic stream and take only the shares and holders a scenario places.
            if !model.mig {
                continue;
            }
            let pw = profile_weights(catalog, m, s)?;
            let total: f64 = pw.iter().map(|x| x.1).sum();
            let mean_size: f64 = pw
                .iter()
                .map(|&(p, w)| w * model.profiles[p].size as f64)
                .sum::<f64>()
                / total;
            let mean_share = (1.0 + s.two_gi_prob) * mean_size / model.memory_slices as f64;
            let rate = s.load * gpus as f64 / (mean_l_s * mean_share);
            rates.push(ClassRate {
                model: model.name.clone(),
                gpus,
                per_hour: rate * 3600.0,
                mean_share,
                profiles: pw
                    .iter()
                    .map(|&(p, w)| (model.profiles[p].name.clone(), w / total))
                    .collect(),
            });
            if rate <= 0.0 {
                continue;
            }
            let weights = WeightedIndex::new(pw.iter().map(|x| x.1)).context("workload profile weights")?;
            let rng = StdRng::seed_from_u64(mix_seed(s.seed, m as u64));
            let placeholder = Request {
                arrival: t0,
                kind: VmKind::Job,
                lifetime: 0.0,
                gis: Vec::new(),
                cores: 0,
                ram_gb: 0,
                shape: Shape::Mig,
            };
            streams.push(ClassStream {
                model: m,
                rate,
                profiles: pw.iter().map(|x| x.0).collect(),
                weights,
                rng,
                next: placeholder,
            });
        }
        let mut gen = Synthetic {
            streams,
            job_share: s.job_share,
            two_gi_prob: s.two_gi_prob,
            cores_per_slice: s.cores_per_compute_slice,
            ram_per_slice: s.ram_gb_per_compute_slice,
            lifetime,
            catalog,
            rates,
            mix: s.mix,
        };
        for i in 0..gen.streams.len() {
            gen.draw_next(i, t0);
        }
        Ok(gen)
    }

    /// Draws the request after time `after` for stream `i`; the draws of one request always come
    /// in the same order (gap, kind, lifetime, GI count, profiles).
    fn draw_next(&mut self, i: usize, after: f64) {
        let (job_share, two, cps, rps, mix) = (
            self.job_share,
            self.two_gi_prob,
            self.cores_per_slice,
            self.ram_per_slice,
            self.mix,
        );
        let catalog = self.catalog;
        let st = &mut self.streams[i];
        let gap = Exp::new(st.rate)
            .map(|e| e.sample(&mut st.rng))
            .unwrap_or(f64::INFINITY);
        let kind = if st.rng.gen::<f64>() < job_share {
            VmKind::Job
        } else {
            VmKind::Tenant
        };
        let lifetime = self.lifetime.draw(kind, &mut st.rng);
        let n = if st.rng.gen::<f64>() < two { 2 } else { 1 };
        let model = catalog.model(st.model);
        let mut gis = Vec::with_capacity(n);
        let mut compute = 0u32;
        for _ in 0..n {
            let p = st.profiles[st.weights.sample(&mut st.rng)];
            compute += model.profiles[p].compute as u32;
            gis.push(GiRequest {
                model: st.model,
                profile: p,
            });
        }
        // The shape mix draws only when it is set, so the streams of MIG-only workloads (every
        // figure of the paper) are unchanged.
        let mut shape = Shape::Mig;
        if mix.is_set() {
            let u = st.rng.gen::<f64>();
            let iso = st.rng.gen::<f64>() < mix.isolated;
            if u < mix.share {
                let gb: f64 = gis.iter().map(|g| model.profiles[g.profile].memory_gb).sum();
                let weight = f64::from(compute) / f64::from(model.compute_slices.max(1));
                shape = Shape::Share {
                    model: st.model,
                    gb: (gb.floor() as u32).clamp(1, crate::fleet::gpu_gb(catalog, st.model).max(1)),
                    weight,
                    isolation: iso,
                };
            } else if u < mix.share + mix.gang {
                shape = Shape::Gang {
                    model: st.model,
                    gpus: mix.gang_gpus,
                };
            }
        }
        st.next = Request {
            arrival: after + gap,
            kind,
            lifetime,
            gis,
            cores: cps * compute,
            ram_gb: rps * compute,
            shape,
        };
    }

    fn peek_time(&self) -> Option<f64> {
        self.streams
            .iter()
            .map(|s| s.next.arrival)
            .min_by(|a, b| a.total_cmp(b))
    }

    fn pop(&mut self) -> Option<Request> {
        // The earliest stream; ties go to the lower class.
        let i = (0..self.streams.len()).min_by(|&a, &b| {
            self.streams[a]
                .next
                .arrival
                .total_cmp(&self.streams[b].next.arrival)
                .then(a.cmp(&b))
        })?;
        let req = self.streams[i].next.clone();
        self.draw_next(i, req.arrival);
        Some(req)
    }
}

/// One pod of the trace after the §6.5 mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct TracePod {
    /// Creation time in the trace, seconds.
    pub created: f64,
    /// Deletion minus creation, seconds.
    pub lifetime: f64,
    pub profiles: Vec<ProfileId>,
    /// CSV line (1-based), for messages.
    pub line: usize,
}

/// A parsed and mapped pod list.
#[derive(Debug, Clone)]
pub struct Trace {
    pub model: ModelId,
    /// Pods kept (one or two GPUs, created in the window), by creation time.
    pub pods: Vec<TracePod>,
    /// Start and end of the kept window in trace seconds.
    pub window: (f64, f64),
    /// Pods read in total and pods dropped by the mapping (no GPU, more than two, before window).
    pub read: usize,
    pub dropped: usize,
}

/// The smallest profile of `model` (by memory slices, then compute) with at least
/// ceil(C f) compute slices and ceil(|U| f) memory slices for a share f = milli / 1000 (§6.5).
pub(crate) fn profile_for_share(catalog: &Catalog, model: ModelId, milli: u32) -> Option<ProfileId> {
    let m = catalog.model(model);
    let need_c = (m.compute_slices as u32 * milli).div_ceil(1000);
    let need_m = (m.memory_slices as u32 * milli).div_ceil(1000);
    m.profiles
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.media_ext && p.compute as u32 >= need_c && p.size as u32 >= need_m)
        .min_by_key(|(i, p)| (p.size, p.compute, *i))
        .map(|(i, _)| i)
}

const TRACE_COLUMNS: [&str; 11] = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
];

/// Reads an Alibaba GPU 2023 pod list (`openb_pod_list_*.csv`) and maps it to `model`'s
/// profiles (§6.5). Every line is checked, kept or not; the first malformed one is an error
/// naming the file, the line and the field.
pub fn read_trace(path: &Path, catalog: &Catalog, model: ModelId, window_days: f64) -> anyhow::Result<Trace> {
    let text = crate::fsutil::read_text(path)?;
    parse_trace(&text, &path.display().to_string(), catalog, model, window_days)
}

/// One checked row of a pod list.
struct TraceRow {
    line: usize,
    num_gpu: u32,
    milli: u32,
    created: f64,
    deleted: f64,
}

/// The column indices a pod list needs: num_gpu, gpu_milli, creation_time, deletion_time.
struct TraceColumns<'a> {
    names: Vec<&'a str>,
    gpu: usize,
    milli: usize,
    create: usize,
    delete: usize,
}

/// [`read_trace`] on text; `file` names it in errors.
pub fn parse_trace(
    text: &str,
    file: &str,
    catalog: &Catalog,
    model: ModelId,
    window_days: f64,
) -> anyhow::Result<Trace> {
    if window_days.is_nan() || window_days <= 0.0 {
        bail!("workload.trace_window_days must be positive, not {window_days}");
    }
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        bail!(
            "{file}:1: empty file; expected the header `{}`",
            TRACE_COLUMNS.join(",")
        );
    };
    let names: Vec<&str> = header.trim().split(',').map(str::trim).collect();
    let idx = |name: &str| -> anyhow::Result<usize> {
        names
            .iter()
            .position(|c| *c == name)
            .with_context(|| format!("{file}:1: header has no column `{name}`"))
    };
    let (gpu, milli, create, delete) = (
        idx("num_gpu")?,
        idx("gpu_milli")?,
        idx("creation_time")?,
        idx("deletion_time")?,
    );
    let cols = TraceColumns {
        names,
        gpu,
        milli,
        create,
        delete,
    };
    let mut rows = Vec::new();
    for (i, raw) in lines {
        let line = i + 1;
        if line > crate::limits::MAX_TRACE_ROWS + 1 {
            bail!(
                "{file}:{line}: more than {} pods; split the trace (docs/limits.md)",
                crate::limits::MAX_TRACE_ROWS
            );
        }
        if raw.trim().is_empty() {
            continue;
        }
        rows.push(trace_row(raw, line, file, &cols)?);
    }
    if rows.is_empty() {
        bail!("{file}: no pods");
    }
    trace_of_rows(&rows, file, catalog, model, window_days)
}

/// One line of a pod list, checked field by field.
fn trace_row(raw: &str, line: usize, file: &str, cols: &TraceColumns) -> anyhow::Result<TraceRow> {
    let fields: Vec<&str> = raw.split(',').map(str::trim).collect();
    if fields.len() != cols.names.len() {
        bail!(
            "{file}:{line}: expected {} fields, found {}",
            cols.names.len(),
            fields.len()
        );
    }
    let num = |i: usize| -> anyhow::Result<f64> {
        let v = fields[i];
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => bail!(
                "{file}:{line}: field `{}`: `{v}` is not a non-negative number",
                cols.names[i]
            ),
        }
    };
    let num_gpu = num(cols.gpu)?;
    let milli = num(cols.milli)?;
    let created = num(cols.create)?;
    let deleted = num(cols.delete)?;
    if num_gpu.fract() != 0.0 {
        bail!(
            "{file}:{line}: field `num_gpu`: `{}` is not a whole number",
            fields[cols.gpu]
        );
    }
    if milli.fract() != 0.0 || milli > 1000.0 {
        bail!(
            "{file}:{line}: field `gpu_milli`: `{}` is not a whole number within 0..1000",
            fields[cols.milli]
        );
    }
    if deleted < created {
        bail!("{file}:{line}: field `deletion_time`: {deleted} is before the creation time {created}");
    }
    let lifetime = deleted - created;
    if lifetime > 0.0 && lifetime < crate::limits::MIN_TRACE_LIFETIME_S {
        bail!(
            "{file}:{line}: field `deletion_time`: `{}` makes the pod live {lifetime:.3e} s; a pod that ran lives at least {} s (docs/limits.md)",
            fields[cols.delete],
            crate::limits::MIN_TRACE_LIFETIME_S
        );
    }
    if num_gpu == 1.0 && milli == 0.0 {
        bail!("{file}:{line}: field `gpu_milli`: a pod with one GPU asks for 0 thousandths of it");
    }
    Ok(TraceRow {
        line,
        num_gpu: num_gpu as u32,
        milli: milli as u32,
        created,
        deleted,
    })
}

/// The pods of the last `window_days` with one or two GPUs, mapped to `model`'s profiles (§6.5).
fn trace_of_rows(
    rows: &[TraceRow],
    file: &str,
    catalog: &Catalog,
    model: ModelId,
    window_days: f64,
) -> anyhow::Result<Trace> {
    let end = rows.iter().map(|r| r.deleted.max(r.created)).fold(0.0, f64::max);
    let w0 = end - window_days * 86400.0;
    let full = catalog
        .model(model)
        .profiles
        .iter()
        .position(|p| !p.media_ext && p.size == catalog.model(model).memory_slices);
    let Some(full) = full else {
        bail!(
            "{}: no whole-GPU profile to map pods to",
            catalog.model(model).name
        );
    };
    let mut pods = Vec::new();
    for r in rows {
        if r.num_gpu == 0 || r.num_gpu > 2 || r.created < w0 {
            continue;
        }
        let profiles = if r.num_gpu == 1 && r.milli < 1000 {
            match profile_for_share(catalog, model, r.milli) {
                Some(p) => vec![p],
                None => bail!(
                    "{file}:{}: field `gpu_milli`: no profile fits {}",
                    r.line,
                    r.milli
                ),
            }
        } else {
            vec![full; r.num_gpu as usize]
        };
        pods.push(TracePod {
            created: r.created,
            lifetime: r.deleted - r.created,
            profiles,
            line: r.line,
        });
    }
    if pods.is_empty() {
        bail!("{file}: no pod with one or two GPUs in the last {window_days} days");
    }
    pods.sort_by(|a, b| a.created.total_cmp(&b.created).then(a.line.cmp(&b.line)));
    let dropped = rows.len() - pods.len();
    Ok(Trace {
        model,
        pods,
        window: (w0, end),
        read: rows.len(),
        dropped,
    })
}

/// Replays a trace in a loop, its arrivals compressed so that the offered load on the trace
/// model's GPUs is `load` (§6.5); seed s starts at (s - 1) / 5 of the compressed length.
#[derive(Debug, Clone)]
pub struct TraceReplay {
    trace: Arc<Trace>,
    /// Compressed arrival of each pod within one period, seconds from the window start.
    times: Arc<Vec<f64>>,
    period: f64,
    /// First pod index of the replay and the phase at which it starts.
    first: usize,
    offset: f64,
    t0: f64,
    /// Pods replayed so far.
    served: u64,
    cores_per_slice: u32,
    ram_per_slice: u32,
    catalog: &'static Catalog,
    /// The factor applied to trace time (compressed = factor x original).
    pub factor: f64,
}

impl TraceReplay {
    pub fn new(trace: Arc<Trace>, s: &WorkloadSettings, fleet: &Fleet, t0: f64) -> anyhow::Result<Self> {
        let catalog = fleet.catalog;
        let gpus = fleet
            .hosts
            .iter()
            .flat_map(|h| &h.gpus)
            .filter(|g| catalog.same_class(g.model, trace.model))
            .count();
        if gpus == 0 {
            bail!(
                "workload.trace: the fleet has no {} GPU to replay the trace on",
                catalog.model(trace.model).name
            );
        }
        if !(s.load > 0.0 && s.load.is_finite()) {
            bail!(
                "workload.load must be positive for a trace replay, not {}",
                s.load
            );
        }
        let m = catalog.model(trace.model);
        let work: f64 = trace
            .pods
            .iter()
            .map(|p| {
                let slices: u32 = p.profiles.iter().map(|&q| m.profiles[q].size as u32).sum();
                p.lifetime * slices as f64 / m.memory_slices as f64
            })
            .sum();
        let span = trace.window.1 - trace.window.0;
        // rho = work / (|K| x span x factor)  =>  factor = work / (|K| span rho).
        let factor = work / (gpus as f64 * span * s.load);
        if !(factor > 0.0 && factor.is_finite()) {
            bail!("workload.trace: the pods carry no GPU work to replay");
        }
        let period = span * factor;
        let times: Vec<f64> = trace
            .pods
            .iter()
            .map(|p| (p.created - trace.window.0) * factor)
            .collect();
        let phase = (s.seed.saturating_sub(1) % 5) as f64 / 5.0;
        let offset = phase * period;
        let first = times.partition_point(|&t| t < offset);
        Ok(TraceReplay {
            trace,
            times: Arc::new(times),
            period,
            first,
            offset,
            t0,
            served: 0,
            cores_per_slice: s.cores_per_compute_slice,
            ram_per_slice: s.ram_gb_per_compute_slice,
            catalog,
            factor,
        })
    }

    /// Length of one compressed pass over the trace, seconds.
    pub fn period_s(&self) -> f64 {
        self.period
    }

    fn index(&self, k: u64) -> (usize, f64) {
        let n = self.times.len() as u64;
        let pos = (self.first as u64 + k) % n;
        let wraps = (self.first as u64 + k) / n;
        let t = self.t0 + self.times[pos as usize] - self.offset + wraps as f64 * self.period;
        (pos as usize, t)
    }

    fn peek_time(&self) -> Option<f64> {
        Some(self.index(self.served).1)
    }

    /// The next pod as a request (the replay never ends: it loops over the trace).
    pub fn next_request(&mut self) -> Request {
        let (pos, t) = self.index(self.served);
        self.served += 1;
        self.request(pos, t)
    }

    fn pop(&mut self) -> Option<Request> {
        Some(self.next_request())
    }

    fn request(&self, pos: usize, t: f64) -> Request {
        let pod = &self.trace.pods[pos];
        let m = self.catalog.model(self.trace.model);
        let compute: u32 = pod.profiles.iter().map(|&p| m.profiles[p].compute as u32).sum();
        Request {
            arrival: t,
            kind: VmKind::Job,
            lifetime: pod.lifetime,
            gis: pod
                .profiles
                .iter()
                .map(|&p| GiRequest {
                    model: self.trace.model,
                    profile: p,
                })
                .collect(),
            cores: self.cores_per_slice * compute,
            ram_gb: self.ram_per_slice * compute,
            shape: Shape::Mig,
        }
    }
}

/// Where requests come from.
#[derive(Debug, Clone)]
pub enum Workload {
    /// No arrivals (workload disabled).
    None,
    Synthetic(Box<Synthetic>),
    Trace(TraceReplay),
}

impl Workload {
    /// The workload a scenario asks for, starting after `t0`. A trace is read and checked here,
    /// so a malformed file stops the run before it starts.
    pub fn new(s: &WorkloadSettings, fleet: &Fleet, t0: f64) -> anyhow::Result<Self> {
        if !s.enabled {
            return Ok(Workload::None);
        }
        match &s.trace {
            None => Ok(Workload::Synthetic(Box::new(Synthetic::new(s, fleet, t0)?))),
            Some(path) => {
                let model = fleet.catalog.model_id(&s.trace_model).with_context(|| {
                    format!("workload.trace_model: unknown GPU model `{}`", s.trace_model)
                })?;
                let trace = read_trace(Path::new(path), fleet.catalog, model, s.trace_window_days)?;
                Ok(Workload::Trace(TraceReplay::new(Arc::new(trace), s, fleet, t0)?))
            }
        }
    }

    /// Arrival time of the next request.
    pub fn peek_time(&self) -> Option<f64> {
        match self {
            Workload::None => None,
            Workload::Synthetic(g) => g.peek_time(),
            Workload::Trace(t) => t.peek_time(),
        }
    }

    /// The next request, in arrival order.
    pub fn pop(&mut self) -> Option<Request> {
        match self {
            Workload::None => None,
            Workload::Synthetic(g) => g.pop(),
            Workload::Trace(t) => t.pop(),
        }
    }

    /// Per-class rates of the synthetic generator (empty otherwise).
    pub fn class_rates(&self) -> &[ClassRate] {
        match self {
            Workload::Synthetic(g) => &g.rates,
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests;
