//! Running one HiGHS model: options, the warm start, and a MIP callback that reports progress and
//! honours a cancel flag. good_lp builds the model; `into_inner()` hands us the `highs` model, on
//! which the options and the start must be set (good_lp's own `solve` would forget the achieved
//! gap and bound).
//!
//! The callback goes through the raw C API (`highs-sys`, which the `highs` crate is built on):
//! `Highs_setCallback` with the MIP-interrupt and improving-solution callbacks. HiGHS calls them
//! from the thread that runs the solve, so the progress sink runs on that thread.

use super::{Progress, SolveControl};
use highs::{HighsModelStatus, HighsSolutionStatus};
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

/// What one HiGHS run returned.
pub(crate) struct RunResult {
    pub status: HighsModelStatus,
    /// Column values of the final incumbent (the start when HiGHS kept it), if any.
    pub columns: Option<Vec<f64>>,
    /// Objective of the incumbent in the model's units (without the constant offset).
    pub objective: f64,
    /// Best bound in the model's units (without the offset).
    pub bound: f64,
    /// Branch-and-bound nodes HiGHS explored.
    pub nodes: u64,
    /// The LP-iteration budget (`RunOptions::lp_iteration_limit`) stopped the run.
    pub lp_budget_hit: bool,
    pub rows: usize,
    pub cols: usize,
}

/// Options of one run.
pub(crate) struct RunOptions {
    /// Wall-clock seconds (infinite: none).
    pub time_limit_s: f64,
    /// Branch-and-bound nodes (`mip_max_nodes`; `None`: none). Deterministic: the same model
    /// stops at the same node on any machine.
    pub node_limit: Option<u64>,
    /// Simplex iterations of the whole MIP solve (`None`: none), checked at HiGHS's own limit
    /// checks (each root cut round, each node): deterministic like `node_limit`, and it also
    /// bounds the root's cut rounds, which no node limit does.
    pub lp_iteration_limit: Option<u64>,
    pub threads: u32,
    pub presolve: bool,
    /// Absolute gap at which HiGHS may stop (0.99 for an integer-valued objective: proves the
    /// optimum exactly).
    pub abs_gap: f64,
    pub verbose: bool,
    /// Extra options: integers, floats and booleans are parsed, anything else is a string.
    pub extra: Vec<(String, String)>,
}

/// HiGHS's thread pool is global to the process: the first thread count used wins and a later
/// different value makes the solve fail. Every run uses the first value.
pub(crate) fn process_threads(requested: u32) -> u32 {
    static THREADS: OnceLock<u32> = OnceLock::new();
    *THREADS.get_or_init(|| requested.max(1))
}

struct CbCtx<'a> {
    control: &'a SolveControl,
    offset: f64,
    t0: Instant,
    last_report: f64,
    last_incumbent: f64,
    last_bound: f64,
    phase: &'static str,
    lp_iteration_limit: Option<u64>,
    lp_budget_hit: bool,
}

impl CbCtx<'_> {
    fn report(&mut self, incumbent: f64, bound: f64, nodes: i64, force: bool) {
        let Some(sink) = &self.control.progress else {
            return;
        };
        let elapsed = self.t0.elapsed().as_secs_f64();
        let changed = incumbent != self.last_incumbent || bound != self.last_bound;
        let since = elapsed - self.last_report;
        if !(force || (changed && since >= 0.02) || since >= 0.25) {
            return;
        }
        self.last_report = elapsed;
        self.last_incumbent = incumbent;
        self.last_bound = bound;
        let finite = |v: f64| (v.is_finite() && v.abs() < 1e20).then_some(v + self.offset);
        let inc = finite(incumbent);
        let bd = finite(bound);
        let gap = match (inc, bd) {
            (Some(i), Some(b)) => Some(((b - i).max(0.0)) / i.abs().max(1.0)),
            _ => None,
        };
        sink(&Progress {
            elapsed_s: elapsed,
            incumbent: inc,
            bound: bd,
            gap,
            nodes: nodes.max(0) as u64,
            phase: self.phase,
        });
    }
}

unsafe extern "C" fn highs_callback(
    kind: c_int,
    _message: *const c_char,
    out: *const highs_sys::HighsCallbackDataOut,
    inp: *mut highs_sys::HighsCallbackDataIn,
    user: *mut c_void,
) {
    if user.is_null() || out.is_null() {
        return;
    }
    // SAFETY: `user` is the `CbCtx` that `run` registered and keeps alive (and does not touch)
    // for the whole `Highs_run`; `out` and `inp` are valid for the duration of the call.
    let ctx = unsafe { &mut *(user as *mut CbCtx) };
    let out = unsafe { &*out };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let force = kind == highs_sys::kHighsCallbackMipImprovingSolution as c_int;
        ctx.report(
            out.mip_primal_bound,
            out.mip_dual_bound,
            out.mip_node_count,
            force,
        );
        let over = kind == highs_sys::kHighsCallbackMipInterrupt as c_int
            && ctx
                .lp_iteration_limit
                .is_some_and(|n| out.mip_total_lp_iterations.max(0) as u64 >= n);
        if over {
            ctx.lp_budget_hit = true;
        }
        over || ctx.control.cancel.load(Ordering::Relaxed)
    }));
    let cancel = result.unwrap_or(true);
    if cancel && kind == highs_sys::kHighsCallbackMipInterrupt as c_int && !inp.is_null() {
        // SAFETY: HiGHS passes a valid input record with the interrupt callback.
        unsafe { (*inp).user_interrupt = 1 };
    }
}

fn set_option<V: highs::HighsOptionValue>(
    model: &mut highs::Model,
    key: &str,
    value: V,
) -> anyhow::Result<()> {
    model
        .try_set_option(key, value)
        .map_err(|e| anyhow::anyhow!("HiGHS refused option {key}: {e:?}"))
}

/// Solves `model` from the complete start vector `start`; `offset` is the objective constant the
/// model leaves out (only used for progress reports).
pub(crate) fn run(
    mut model: highs::Model,
    start: &[f64],
    opts: &RunOptions,
    control: &SolveControl,
    offset: f64,
    t0: Instant,
    phase: &'static str,
) -> anyhow::Result<RunResult> {
    let rows = model.num_rows();
    let cols = model.num_cols();
    set_option(&mut model, "time_limit", opts.time_limit_s)?;
    if let Some(n) = opts.node_limit {
        set_option(&mut model, "mip_max_nodes", n.min(i32::MAX as u64) as i32)?;
    }
    set_option(&mut model, "threads", process_threads(opts.threads) as i32)?;
    set_option(
        &mut model,
        "presolve",
        if opts.presolve { "choose" } else { "off" },
    )?;
    set_option(&mut model, "mip_rel_gap", 0.0)?;
    set_option(&mut model, "mip_abs_gap", opts.abs_gap)?;
    // Every call starts from a complete feasible vector (the current placement, or a better
    // greedy one), so HiGHS's feasibility jump heuristic, which searches for a first feasible
    // solution before the root LP, only costs time: it took 18 % of a paper-128 simulation's CPU
    // (docs/results/speed-notes.md). Off, the calls prove the same optima; among equal optima
    // HiGHS may return another one.
    set_option(&mut model, "mip_heuristic_run_feasibility_jump", false)?;
    // Symmetry detection looks for permutations of interchangeable columns to branch on; the
    // host-content model already folds identical empty hosts into one integer column, and almost
    // every call ends at the root. It took 3-4 % of a paper-128 simulation's CPU (`perf`);
    // off, six paper-32 and paper-128 runs gave the same figures 6-9 % faster.
    set_option(&mut model, "mip_detect_symmetry", false)?;
    for (k, v) in &opts.extra {
        if let Ok(i) = v.parse::<i32>() {
            set_option(&mut model, k, i)?;
        } else if let Ok(f) = v.parse::<f64>() {
            set_option(&mut model, k, f)?;
        } else if let Ok(b) = v.parse::<bool>() {
            set_option(&mut model, k, b)?;
        } else {
            set_option(&mut model, k, v.as_str())?;
        }
    }
    if opts.verbose {
        let _ = model.try_set_option("output_flag", true);
        let _ = model.try_set_option("log_to_console", true);
    }
    if start.len() != cols {
        anyhow::bail!("start vector has {} values for {cols} columns", start.len());
    }
    model
        .try_set_solution(Some(start), None, None, None)
        .map_err(|e| anyhow::anyhow!("HiGHS refused the start: {e:?}"))?;

    let mut ctx = CbCtx {
        control,
        offset,
        t0,
        last_report: f64::NEG_INFINITY,
        last_incumbent: f64::NAN,
        last_bound: f64::NAN,
        phase,
        lp_iteration_limit: opts.lp_iteration_limit,
        lp_budget_hit: false,
    };
    {
        let ptr = model.as_mut_ptr();
        // SAFETY: `ptr` is the live HiGHS instance owned by `model`; `ctx` outlives the solve
        // below (it is dropped after `try_solve` returns and the callback is never called again).
        unsafe {
            highs_sys::Highs_setCallback(ptr, Some(highs_callback), &mut ctx as *mut CbCtx as *mut c_void);
            highs_sys::Highs_startCallback(ptr, highs_sys::kHighsCallbackMipInterrupt as _);
            highs_sys::Highs_startCallback(ptr, highs_sys::kHighsCallbackMipImprovingSolution as _);
        }
    }
    if control.cancel.load(Ordering::Relaxed) {
        return Ok(RunResult {
            status: HighsModelStatus::ReachedInterrupt,
            columns: None,
            objective: f64::NAN,
            bound: f64::NAN,
            nodes: 0,
            lp_budget_hit: false,
            rows,
            cols,
        });
    }
    let solved = model
        .try_solve()
        .map_err(|e| anyhow::anyhow!("HiGHS failed to solve the model: {e:?}"))?;
    let status = solved.status();
    let has_solution = solved.primal_solution_status() == HighsSolutionStatus::Feasible;
    let objective = solved.objective_value();
    let bound = solved
        .double_info_value(c"mip_dual_bound")
        .unwrap_or(f64::INFINITY);
    let columns = has_solution.then(|| solved.get_solution().columns().to_vec());
    let mut nodes: i64 = 0;
    // SAFETY: `solved` owns a live HiGHS instance; `mip_node_count` is an int64 info value
    // and `nodes` outlives the call.
    let got = unsafe {
        highs_sys::Highs_getInt64InfoValue(solved.as_ptr(), c"mip_node_count".as_ptr(), &mut nodes)
    };
    if got != highs_sys::STATUS_OK {
        nodes = 0;
    }
    ctx.report(objective, bound, 0, true);
    Ok(RunResult {
        status,
        columns,
        objective,
        bound,
        nodes: nodes.max(0) as u64,
        lp_budget_hit: ctx.lp_budget_hit,
        rows,
        cols,
    })
}
