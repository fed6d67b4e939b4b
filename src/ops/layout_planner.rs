//! The layout planner: how many GPUs of one model get each layout so that a demand of
//! instances per profile is met with the fewest GPUs.
//!
//! - [`greedy`] is the usual greedy rule: repeatedly take the menu layout with the most
//!   *useful* compute slices (instances that serve unmet demand, counted in compute slices), ties
//!   broken by the number of distinct unmet profiles it serves, then by the alphabetically first
//!   name; fail when no layout serves the remaining demand or more GPUs than available are needed.
//! - [`exact`] minimizes the number of GPUs with an integer program solved by HiGHS through
//!   good_lp. Beyond the fixed menu it may use any placeable layout (every maximal placeable
//!   multiset of the demanded profiles, [`layouts::maximal_layouts`]); among plans with the fewest
//!   GPUs it prefers the fewest idle compute slices, then layouts that are on file.

use super::layouts::{self, compute_of, Layout, Menu, Origin};
use crate::catalog::{GpuModel, ModelId, ProfileId};
use good_lp::{constraint, variable, Expression, ProblemVariables, Solution, SolverModel};
use std::collections::BTreeMap;

/// Instances wanted per profile (indexed by the model's profile ids).
pub(crate) type Demand = Vec<u32>;

/// Why a demand text does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemandError {
    #[error("empty demand: expected PROFILE=N[,PROFILE=N...]")]
    Empty,
    #[error("`{0}` is not PROFILE=N")]
    NotPair(String),
    #[error("unknown profile `{name}` for {model} (known: {known})")]
    UnknownProfile {
        name: String,
        model: String,
        known: String,
    },
    #[error("`{count}` in `{part}` is not a whole number of instances")]
    BadCount { count: String, part: String },
}

/// Why a planner found no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("no layout of the menu serves the remaining demand {0}")]
    Unserved(String),
    #[error("the demand needs more than {0} GPUs with the greedy planner")]
    TooManyGpus(u32),
    #[error("no placeable layout holds the demanded profiles")]
    NoCandidates,
    #[error("the demand does not fit on {0} GPUs (proved by the exact planner)")]
    Infeasible(u32),
    #[error("the exact planner failed: {0}")]
    Solver(String),
    #[error("the exact planner returned no feasible plan within its time limit")]
    NoFeasiblePlan,
}

/// Parses `PROFILE=N[,PROFILE=N...]` for `model`. Repeated profiles add up.
pub fn parse_demand(model: &GpuModel, text: &str) -> Result<Demand, DemandError> {
    let mut d = vec![0u32; model.profiles.len()];
    if text.trim().is_empty() {
        return Err(DemandError::Empty);
    }
    for part in text.split(',') {
        let part = part.trim();
        let Some((name, n)) = part.split_once('=') else {
            return Err(DemandError::NotPair(part.to_string()));
        };
        let (name, n) = (name.trim(), n.trim());
        let Some(p) = model.profile(name) else {
            return Err(DemandError::UnknownProfile {
                name: name.to_string(),
                model: model.name.clone(),
                known: model.profile_names(),
            });
        };
        let Ok(n) = n.parse::<u32>() else {
            return Err(DemandError::BadCount {
                count: n.to_string(),
                part: part.to_string(),
            });
        };
        d[p] = d[p].saturating_add(n);
    }
    Ok(d)
}

/// One GPU of a plan: the layout it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedGpu {
    pub name: String,
    pub origin: Origin,
    pub counts: Vec<u32>,
}

/// Which planner produced a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Planner {
    Greedy,
    Exact,
}

/// A layout plan: one layout per GPU used, and what it leaves over.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutPlan {
    pub planner: Planner,
    pub model: ModelId,
    /// One entry per GPU used, in the order chosen (greedy) or by name (exact).
    pub gpus: Vec<PlannedGpu>,
    /// GPUs available to the plan.
    pub available: u32,
    /// Instances per profile that serve no demand.
    pub idle: Vec<u32>,
    /// For the exact planner: whether HiGHS proved the plan optimal.
    pub proven_optimal: bool,
}

impl LayoutPlan {
    pub fn gpus_used(&self) -> u32 {
        self.gpus.len() as u32
    }

    /// Names of the layouts, one per GPU used.
    pub fn names(&self) -> Vec<&str> {
        self.gpus.iter().map(|g| g.name.as_str()).collect()
    }

    /// Idle compute slices (instances that serve no demand).
    pub fn idle_compute(&self, model: &GpuModel) -> u32 {
        compute_of(model, &self.idle)
    }

    /// Idle instances by profile name (only profiles with idle instances).
    pub(crate) fn idle_by_name(&self, model: &GpuModel) -> BTreeMap<String, u32> {
        self.idle
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(p, &n)| (model.profiles[p].name.clone(), n))
            .collect()
    }
}

fn idle_of(gpus: &[PlannedGpu], demand: &[u32]) -> Vec<u32> {
    let mut supply = vec![0u32; demand.len()];
    for g in gpus {
        for (p, &n) in g.counts.iter().enumerate() {
            supply[p] += n;
        }
    }
    supply
        .iter()
        .zip(demand)
        .map(|(&s, &d)| s.saturating_sub(d))
        .collect()
}

/// The greedy planner over `menu` (see the module documentation).
pub fn greedy(
    model_id: ModelId,
    model: &GpuModel,
    menu: &[&Layout],
    demand: &[u32],
    gpus: u32,
) -> Result<LayoutPlan, PlanError> {
    // Sorted by name, and `max` keeps the first of equal keys: ties go to the first name, as in
    // `max(sorted(LAYOUTS), key=...)`.
    let mut sorted: Vec<&Layout> = menu.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut need: Vec<u32> = demand.to_vec();
    let mut chosen: Vec<PlannedGpu> = Vec::new();
    while need.iter().any(|&n| n > 0) {
        let useful = |l: &Layout| -> u32 {
            l.counts
                .iter()
                .enumerate()
                .map(|(p, &n)| n.min(need[p]) * model.profiles[p].compute as u32)
                .sum()
        };
        let served = |l: &Layout| -> u32 {
            l.counts
                .iter()
                .zip(&need)
                .filter(|(&n, &d)| n > 0 && d > 0)
                .count() as u32
        };
        let mut best: Option<(&Layout, (u32, u32))> = None;
        for &l in &sorted {
            let key = (useful(l), served(l));
            if best.is_none_or(|(_, k)| key > k) {
                best = Some((l, key));
            }
        }
        let Some((best, (u, _))) = best.filter(|(_, (u, _))| *u > 0) else {
            return Err(PlanError::Unserved(layouts::describe_counts(model, &need)));
        };
        debug_assert!(u > 0);
        for (p, &n) in best.counts.iter().enumerate() {
            need[p] = need[p].saturating_sub(n);
        }
        chosen.push(PlannedGpu {
            name: best.name.clone(),
            origin: best.origin,
            counts: best.counts.clone(),
        });
        if chosen.len() as u32 > gpus {
            return Err(PlanError::TooManyGpus(gpus));
        }
    }
    let idle = idle_of(&chosen, demand);
    Ok(LayoutPlan {
        planner: Planner::Greedy,
        model: model_id,
        gpus: chosen,
        available: gpus,
        idle,
        proven_optimal: false,
    })
}

/// Solver limits of the exact planner.
#[derive(Debug, Clone, Copy)]
pub struct ExactSettings {
    pub time_limit_s: f64,
    pub threads: u32,
}

impl Default for ExactSettings {
    fn default() -> Self {
        ExactSettings {
            time_limit_s: 10.0,
            threads: 1,
        }
    }
}

/// The candidate layouts of the exact planner: the maximal placeable multisets of the demanded
/// profiles, named after a layout on file where one has the same instances.
pub(crate) fn exact_candidates(
    menu: &Menu,
    model_id: ModelId,
    model: &GpuModel,
    demand: &[u32],
) -> Vec<PlannedGpu> {
    let profiles: Vec<ProfileId> = (0..demand.len()).filter(|&p| demand[p] > 0).collect();
    let mut out: Vec<PlannedGpu> = layouts::maximal_layouts(model, &profiles)
        .into_iter()
        .filter(|c| c.iter().any(|&n| n > 0))
        .map(|counts| match menu.name_of(model_id, &counts) {
            Some(name) => {
                let origin = menu
                    .get(model_id, name)
                    .map(|l| l.origin)
                    .unwrap_or(Origin::Generated);
                PlannedGpu {
                    name: name.to_string(),
                    origin,
                    counts,
                }
            }
            None => PlannedGpu {
                name: generated_name(model, &counts),
                origin: Origin::Generated,
                counts,
            },
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `custom:1g.10gb=4,3g.40gb=1`: the name of a layout that is not on file.
pub(crate) fn generated_name(model: &GpuModel, counts: &[u32]) -> String {
    let parts: Vec<String> = layouts::named_counts(model, counts)
        .map(|(name, n)| format!("{name}={n}"))
        .collect();
    format!("custom:{}", parts.join(","))
}

/// The exact planner: fewest GPUs, then fewest idle compute slices, then fewest layouts not on
/// file (see the module documentation). `Err` when no plan fits in `gpus` GPUs.
pub fn exact(
    menu: &Menu,
    model_id: ModelId,
    model: &GpuModel,
    demand: &[u32],
    gpus: u32,
    settings: ExactSettings,
) -> Result<LayoutPlan, PlanError> {
    let done = |chosen: Vec<PlannedGpu>, optimal: bool| {
        let idle = idle_of(&chosen, demand);
        LayoutPlan {
            planner: Planner::Exact,
            model: model_id,
            gpus: chosen,
            available: gpus,
            idle,
            proven_optimal: optimal,
        }
    };
    if demand.iter().all(|&n| n == 0) {
        return Ok(done(Vec::new(), true));
    }
    let cands = exact_candidates(menu, model_id, model, demand);
    // A demanded profile that no candidate holds cannot be served (e.g. over its instance limit
    // on a GPU is fine, but a profile of another model is not); the candidates cover every
    // demanded profile by construction, so this only guards against an empty model.
    if cands.is_empty() {
        return Err(PlanError::NoCandidates);
    }
    // Lexicographic objective as one integer objective: a GPU outweighs every idle slice, an idle
    // slice outweighs every layout not on file.
    let n = gpus as f64;
    let w_generated = 1.0;
    let w_idle = n + 1.0;
    let w_gpu = w_idle * (model.compute_slices as f64 * n + 1.0) + n + 1.0;
    let mut vars = ProblemVariables::new();
    let y: Vec<_> = cands
        .iter()
        .map(|_| vars.add(variable().integer().min(0).max(n)))
        .collect();
    let mut objective = Expression::from(0.0);
    let mut total_gpus = Expression::from(0.0);
    for (c, &v) in cands.iter().zip(&y) {
        let generated = if c.origin == Origin::Generated {
            w_generated
        } else {
            0.0
        };
        objective += (w_gpu + w_idle * compute_of(model, &c.counts) as f64 + generated) * v;
        total_gpus += v;
    }
    let mut constraints = vec![constraint!(total_gpus <= n)];
    for (p, &d) in demand.iter().enumerate() {
        if d == 0 {
            continue;
        }
        let mut supply = Expression::from(0.0);
        for (c, &v) in cands.iter().zip(&y) {
            if c.counts[p] > 0 {
                supply += c.counts[p] as f64 * v;
            }
        }
        constraints.push(constraint!(supply >= d as f64));
    }
    // Idle compute = supplied compute - demanded compute (a constant), so minimizing the compute
    // supplied per layout minimizes the idle slices.
    // The objective is integral: an absolute gap below one proves the lexicographic optimum (the
    // default relative gap would let the secondary terms slip).
    let mut problem = vars
        .minimise(objective)
        .using(good_lp::solvers::highs::highs)
        .set_time_limit(settings.time_limit_s)
        .set_threads(settings.threads.max(1))
        .set_mip_rel_gap(0.0)
        .and_then(|p| p.set_mip_abs_gap(0.5))
        .map_err(|e| PlanError::Solver(e.to_string()))?;
    problem.set_verbose(false);
    for c in constraints {
        problem = problem.with(c);
    }
    let solution = match problem.solve() {
        Ok(s) => s,
        Err(good_lp::ResolutionError::Infeasible) => {
            return Err(PlanError::Infeasible(gpus));
        }
        Err(e) => return Err(PlanError::Solver(e.to_string())),
    };
    let optimal = matches!(solution.status(), good_lp::solvers::SolutionStatus::Optimal);
    let mut chosen = Vec::new();
    for (c, &v) in cands.iter().zip(&y) {
        let k = solution.value(v).round().max(0.0) as u32;
        for _ in 0..k {
            chosen.push(c.clone());
        }
    }
    // Check the solution against the demand rather than trusting the solver's tolerances.
    let mut supply = vec![0u32; demand.len()];
    for g in &chosen {
        for (p, &k) in g.counts.iter().enumerate() {
            supply[p] += k;
        }
    }
    if chosen.len() as u32 > gpus || supply.iter().zip(demand).any(|(s, d)| s < d) {
        return Err(PlanError::NoFeasiblePlan);
    }
    Ok(done(chosen, optimal))
}
