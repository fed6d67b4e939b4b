//! The settings of each placement policy, one type per policy: [`OrigamigSettings`] (also read by
//! OPT, which is OrigaMIG over the whole fleet, and by packing's defragmentation calls),
//! [`TcSettings`] and [`PackingSettings`]. A scenario file writes them under `[policy.origamig]`,
//! `[policy.tc]` and `[policy.packing]`; the arrival policy, the preset and what every policy
//! shares stay in `[policy]` ([`crate::scenario::PolicySettings`]). A leaf module: the policies
//! read their own type from here and never the scenario file's schema.

use serde::{Deserialize, Serialize};

/// OrigaMIG's settings (`[policy.origamig]`, §5 and §6.1 defaults): the weights of Eq. (5), the
/// neighborhood limits, the triggers and the call budget.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OrigamigSettings {
    /// a_i: reward per admitted VM.
    pub weight_admit: f64,
    /// b_j: cost of an active host.
    pub weight_host: f64,
    /// e_jk: cost of an active GPU.
    pub weight_gpu: f64,
    /// w_p: reward per free permitted start.
    pub weight_free_start: f64,
    /// delta_i: migration penalty of a running VM.
    pub delta: f64,
    /// Penalty per GB a migration copies (§7): with X > 0 a running VM i costs
    /// δ_i = δ + round(X × GB_i) per move, GB_i its RAM plus its GIs' memory
    /// ([`crate::fleet::Vm::migration_gb`]). 0 (the default) charges δ to every VM; at most
    /// `limits::MAX_DELTA_PER_GB`. Saves leave out 0.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub delta_per_gb: f64,
    /// What δ_i adds for a running VM declared a job (`kind = "job"`; §6.2: jobs live 2 h on
    /// average, tenants 24 h), so a call moves a job only where it pays this much more. The
    /// default is 15 (docs/results/origamig-candidate-128-grid.md); 0 (`preset = "paper"`)
    /// charges jobs and tenants alike. Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_job_extra")]
    pub delta_job_extra: f64,
    /// Mmax (§5.2): the most hosts of a call's M̂; 6 by default, 16 (§6.1) under
    /// `preset = "paper"`. Calls over 6 hosts keep as few hosts as over 16 on the paper's
    /// fleets and cost a fraction (docs/results/speed-44.md, round 5). With
    /// `host_scaled_limits`, on a fleet whose largest MIG host has more than two GPUs,
    /// `m_max_gpus` counts the limit in GPUs instead.
    pub m_max: usize,
    /// With `host_scaled_limits`, on hosts of g > 2 GPUs: M̂ holds ceil(m_max_gpus / g) hosts,
    /// at least 2. 24 (the default): 3 eight-GPU nodes, with the compaction settings below it
    /// met the big-nodes goal in 94 % of 80 paired runs and 93 % of 30 held out where 32 (4
    /// nodes) met it in 86 % and 83 % (docs/results/big-nodes-variants.md, seventh round).
    /// Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_m_max_gpus")]
    pub m_max_gpus: usize,
    pub n_max: usize,
    /// Wall-clock limit in seconds of an optimizer call a user waits for (`migplan solve`, the
    /// planner's solve, `experiment`'s OPT snapshots). Simulated calls are bounded by
    /// `node_limit` and `sim_time_limit_s` instead (docs/optimizer.md, "Call budget").
    pub time_limit_s: f64,
    /// The deterministic budget of a simulated call (policies `origamig`, `opt`, `packing`):
    /// HiGHS branch-and-bound nodes per call (`mip_max_nodes`). It ends a call at the same point
    /// on any machine at any load, so a seed gives the same figures everywhere. 0 stops at the
    /// root node's first check (the start placement or the greedy one is returned). Saves leave
    /// out the default.
    #[serde(skip_serializing_if = "is_default_node_limit")]
    pub node_limit: u64,
    /// Wall-clock safety limit in seconds of a simulated call of the planner's play (a user
    /// watches it), far above what the work budget takes. A batch run's calls (`simulate`,
    /// `sweep`, `experiment`) consult no wall clock. A call that reaches it is counted
    /// (`calls_wall_limited`). Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_sim_time_limit")]
    pub sim_time_limit_s: f64,
    /// The second half of a simulated call's deterministic work budget: HiGHS simplex
    /// iterations per call, counted over the whole MIP solve (root cut rounds included, which
    /// `node_limit` does not bound) and checked at HiGHS's own limit checks, so a call ends at
    /// the same point on any machine. Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_lp_iteration_limit")]
    pub lp_iteration_limit: u64,
    pub threads: u32,
    /// Consolidation threshold theta on the gap Gamma_h.
    pub theta: i64,
    /// Seconds between trigger checks.
    pub check_every_s: f64,
    /// Algorithm 1, lines 21-22: a source removed from S stays in M̂ as a receiver (the
    /// default, with δ = 15) instead of leaving M̂ with it (as written; `preset = "paper"`).
    /// Figures: docs/results/origamig-default.md.
    pub keep_removed_sources: bool,
    /// OrigaMIG partitions: the fleet splits into this many contiguous host ranges in fleet order
    /// (racks), each with its own OrigaMIG instance (triggers, calls, neighborhoods within its
    /// hosts); calls of different partitions run in parallel. 1 (the default) is one instance over
    /// the whole fleet, as in the paper. Only `origamig` reads it; saves leave out the default.
    #[serde(skip_serializing_if = "is_one")]
    pub partitions: usize,
    /// OrigaMIG partitions given by size instead of count: a fleet of n hosts splits into
    /// ceil(n / N) partitions (sizes as equal as possible, none above N). 0 (the default) leaves
    /// the count to `partitions`; setting both is refused. Saves leave out the default.
    #[serde(skip_serializing_if = "is_zero")]
    pub partition_hosts: usize,
    /// With partitions: `true` (the default) interleaves them (partition i of k holds hosts i,
    /// i + k, ...), so that every partition holds hosts from every part of first fit's fill
    /// order and has room to consolidate into; `false` (`preset = "paper"`) cuts contiguous
    /// ranges (racks), where first fit leaves the front partitions full and the back ones
    /// empty. At 4096 hosts in 32 partitions: 4.48 % fewer active hosts than FF against 1.26 %
    /// (docs/results/fig7-scale.md). Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub partition_interleaved: bool,
    /// OrigaMIG's host-content budget, a multiplier (1 ..= `limits::MAX_HOST_COLUMNS_BUDGET`) of
    /// the enumeration's limits per call (configuration combinations and cutting steps per host,
    /// content columns per model); a call over it builds the pattern formulation instead
    /// (docs/optimizer.md). Both formulations are exact, but ties may resolve differently, so
    /// figures can change with it. Saves leave out the default 1.
    #[serde(skip_serializing_if = "is_one_u32")]
    pub host_columns_budget: u32,
    /// Whether OrigaMIG's calls without pending VMs (consolidation) build the pattern
    /// formulation directly (`true`, the default) instead of trying host contents first
    /// (`false`, `preset = "paper"`); calls with pending VMs try host contents first either
    /// way. Both are exact models of the same BILP (§4), so a call solved to optimality reaches
    /// the same Eq. (5); ties may resolve differently, so figures change with it. On paper-128
    /// (48 h + 72 h) it cut OrigaMIG's CPU from 73.69 s to 51.32 s and the planner's day from
    /// 18.93 to 11.85 CPU s (docs/optimizer.md, "Host contents or patterns"). Saves leave out
    /// the default.
    #[serde(skip_serializing_if = "is_true")]
    pub consolidation_patterns: bool,
    /// OrigaMIG's merge neighborhood (docs/policies.md): when Algorithm 1 finds no source for a
    /// consolidation call, the call takes the `merge_hosts` least-loaded active hosts of the
    /// class, each a source and a receiver, so the BILP may empty one into the others; the
    /// consolidation trigger then also counts the active hosts above what the placed slices need.
    /// 0 is off; otherwise 2 ..= `limits::MAX_MERGE_HOSTS`. The default is 4
    /// (docs/results/origamig-variants.md); `preset = "paper"` sets 0. Saves leave out 4.
    #[serde(skip_serializing_if = "is_default_merge")]
    pub merge_hosts: usize,
    /// OrigaMIG's neighborhoods bounded by their VMs instead of their hosts (§7): when > 0, a
    /// call takes hosts until its VMs would exceed this many (it replaces both `m_max` and
    /// `n_max`; a consolidation call still takes at most ½`m_max` sources). 0 (the default) is
    /// off; otherwise 1 ..= `limits::MAX_NEIGHBORHOOD_VMS`. Saves leave out 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub neighborhood_vms: usize,
    /// When a class whose consolidation call changed nothing is enabled again (docs/policies.md):
    /// `room` (the default) when Γh rises or the departures from M̂ could make switching off one
    /// of its hosts pay under Eq. (5) ([`Reenable::Room`]); `neighborhood` when Γh rises or a VM
    /// leaves a host of that call's neighborhood M̂; `departure` (`preset = "paper"`) when Γh
    /// rises or any VM of the class leaves. Saves leave out the default.
    #[serde(skip_serializing_if = "Reenable::is_default")]
    pub reenable: Reenable,
    /// With `reenable = "room"`: the share of the lightest host's memory slices that departures
    /// from M̂ must free to enable the class again ([`Reenable::Room`]); 1 (the default) is
    /// that host's slices, smaller is looser, larger stricter. At least 0. Saves leave out 1.
    #[serde(skip_serializing_if = "is_one_f64")]
    pub reenable_room_share: f64,
    /// How far Γh (Eq. 17-18) must rise above its lowest value since a consolidation call that
    /// changed nothing to enable the class again, whatever `reenable` ("rises above" in
    /// [`Reenable`]): 1 (`preset = "paper"`) is any rise. An arrival that opens a GPU raises Γh
    /// by 1 and leaves the neighborhood the call proved unchanged as it was, so 3 (the default,
    /// with `m_max = 6`; 2 before, with 16 hosts a call) waits for a rise that one or two such
    /// arrivals do not make (docs/policies.md; docs/results/speed-44.md, round 5). 1 ..=
    /// `limits::MAX_REENABLE_GAP_RISE`. Saves leave out the default.
    #[serde(skip_serializing_if = "is_three")]
    pub reenable_gap_rise: usize,
    /// A class of fewer MIG GPUs than this on the instance's hosts waits for a rise of at most
    /// 2, whatever `reenable_gap_rise`: a rise of 3 GPUs is a large share of a small fleet's
    /// class, and on 8 hosts it left 8.6 % more active hosts than OPT instead of 1.8 % (§6.8;
    /// docs/results/speed-44.md, round 5). 64 by default (the paper's 32 two-GPU hosts); a
    /// fleet of that size or more keeps the larger rise. Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_rise_min_gpus")]
    pub reenable_gap_rise_min_gpus: usize,
    /// OrigaMIG's saturation hold (docs/policies.md): no consolidation call within this many
    /// seconds of simulated time after a trigger check found the pending queue Q not empty (the
    /// arrival rule could not place a request, so a host switched off now would soon be needed
    /// again). 0 (the default) is off. Saves leave out 0.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub consolidation_hold_s: f64,
    /// OrigaMIG's arrival rule (§5.1 places an arrival by FF): with `true`, FF tries the active
    /// hosts first, in host order, and switches a host on only when none has room, so a host a
    /// call emptied is not switched on again while an active host could take the request. TC's
    /// best fit already prefers active hosts. On by default; `false` (`preset = "paper"`) is FF
    /// over every host in fleet order. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub ff_active_first: bool,
    /// b_j from the host's power (docs/policies.md, "Weights from power"): with `true` (the
    /// default) the cost of an active host is `weight_host` × its curve's idle watts / the idle
    /// watts of the catalog's default curve (the paper's server, 127 W), rounded: 50 on the
    /// paper's hosts, about 266 on a DGX A100 without its GPUs. `false` (`preset = "paper"`)
    /// charges every host `weight_host`. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub host_weight_from_power: bool,
    /// Neighborhood limits that count GPUs instead of hosts (docs/policies.md, "Limits that
    /// scale with the host"): on a fleet whose largest MIG host has g GPUs, g > 2, a call takes
    /// at most ceil(`m_max` × 2 / g) hosts (the GPUs of `m_max` two-GPU hosts) and `n_max` × g / 2
    /// VMs, and a merge call takes ceil(`merge_hosts` × 2 / g) hosts, at least 2. Two-GPU fleets are unchanged. On by default; `false` (`preset = "paper"`) keeps
    /// `m_max` and `n_max` as written. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub host_scaled_limits: bool,
    /// The simulated call's work budget on big hosts (docs/optimizer.md, "Call budget"): with
    /// `true` (the default) a simulated call whose neighborhood holds a host of more than two
    /// GPUs stops at the root's first check (a node budget of 0): the greedy placement, or the
    /// current one, evaluated by Eq. (5) and applied when better. Deterministic, and about 80
    /// times cheaper there than the full search, whose root cut rounds reached the 10 s safety
    /// clock on eight-GPU nodes (docs/results/big-nodes-variants.md). Calls a user waits for
    /// and two-GPU fleets are unchanged; `false` (`preset = "paper"`) keeps `node_limit`
    /// everywhere. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub host_scaled_budget: bool,
    /// OrigaMIG's arrival rule on hosts of more than two GPUs: FF chooses the host (§5.1, with
    /// `ff_active_first`), and with `true` (the default) the VM's GIs go to that host's GPUs by
    /// best fit (TC's rule: the GPU whose joint slice utilization after the GI is the largest, at
    /// the default start) instead of the first GPU where they fit, so that arrivals fill
    /// partly used GPUs and leave whole GPUs free; a call's greedy placement puts the VMs it
    /// admits or moves on such hosts by the same rule. Two-GPU hosts keep FF's GPU order; `false`
    /// (`preset = "paper"`) keeps it everywhere. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub arrival_gpu_best_fit: bool,
    /// OrigaMIG's arrival rule on fleets with a host of more than two GPUs: with `true` (the
    /// default) the host too is chosen by TC's best fit among the active hosts (the largest mean
    /// joint utilization of the GPUs the VM would use), and FF switches a host on only when no
    /// active host has room (docs/results/big-nodes-variants.md). Fleets of two-GPU hosts keep
    /// FF; `false` (`preset = "paper"`) keeps it everywhere. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub arrival_host_best_fit: bool,
    /// With `arrival_host_best_fit` and `arrival_gpu_best_fit`: `true` (the default) applies
    /// both to fleets and hosts of two GPUs or fewer as well (the paper's hosts), so that an
    /// arrival goes to the fullest active host it fits; `false` (`preset = "paper"`) keeps FF
    /// there. With `host_emptying_vms` it won the paper's fleets
    /// (docs/results/big-nodes-variants.md, fifth round). Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub arrival_best_fit_small: bool,
    /// With `arrival_host_best_fit` or `arrival_gpu_best_fit`: `true` places an arrival's GIs on
    /// GPUs in use that hold VMs of its kind only (a job with jobs, a tenant with tenants, §6.2)
    /// before GPUs in use that hold others, best fit within each, so that GPUs whose VMs leave at
    /// about the same time empty whole. `false` (the default) is TC's best fit. Saves leave out
    /// `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub arrival_kind_affinity: bool,
    /// With `arrival_host_best_fit` or `arrival_gpu_best_fit`: the weight w of the expected
    /// fragmentation in the arrival's best fit. Each GI's GPU scores its joint utilization
    /// after the GI less w times the rise of its expected fragmentation (over the profiles
    /// without +me, the mean free memory slices that no free start of the profile covers;
    /// docs/policies.md), and hosts compare by their best-fit score less w times the rises of
    /// the VM's GIs. On fleets with a host of more than two GPUs only: fleets of two-GPU hosts
    /// keep TC's best fit (on paper-32 the weight cost one run of fewer hosts than TC in ten).
    /// 0.3 (the default): on the big-nodes grid, with exact fills, it leaves whole GPUs free
    /// within 0.05 of TC's (docs/results/big-nodes-variants.md, twelfth round); 0 is TC's best
    /// fit. Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_arrival_fragmentation")]
    pub arrival_fragmentation: f64,
    /// With `gpu_compaction` and without `gpu_compaction_small`: every `host_emptying_min` of
    /// simulated time, an active host of two GPUs or fewer that runs
    /// at most this many VMs is emptied onto GPUs in use on other such hosts when they all fit
    /// (TC's best fit), so that every move switches a host off. 2 (the default): on paper-32 and
    /// paper-128 it keeps fewer hosts than TC in 11 of 12 runs with 31-71 % fewer moves
    /// (docs/results/big-nodes-variants.md, fifth round); 0 (`preset = "paper"`) is off. Saves
    /// leave out the default.
    #[serde(skip_serializing_if = "is_two")]
    pub host_emptying_vms: usize,
    /// With `host_emptying_vms`: the most VMs one host emptying moves (0: no limit). Saves leave
    /// out 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub host_emptying_budget: usize,
    /// With `gpu_compaction`: at a GPU compaction of the hosts of more than two GPUs that moves
    /// nothing, an active such host that runs at most this many VMs is emptied onto GPUs in use
    /// on the other such hosts, as `host_emptying_vms` does on two-GPU hosts. 0 (the default) is
    /// off. Saves leave out 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub host_emptying_big_vms: usize,
    /// The period of `host_emptying_vms` in minutes of simulated time. 0 turns it off. Saves
    /// leave out the default.
    #[serde(skip_serializing_if = "is_default_host_emptying_min")]
    pub host_emptying_min: f64,
    /// OrigaMIG's GPU compaction on hosts of more than two GPUs: with `true` (the default),
    /// every `gpu_compaction_min` of simulated time when no call runs, TC's compaction (§6.3) of the
    /// GPUs of each such host within the host: the least utilized GPUs are vacated when their
    /// VMs' GIs fit, by best fit, on the host's other active GPUs (a VM keeps its host; nothing
    /// is copied across the network), so that sparse GPUs become whole free GPUs (for 7g
    /// requests and gangs). Hosts of a running call are left alone. Fleets of two-GPU hosts are
    /// unchanged; `false` (`preset = "paper"`) is off everywhere. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub gpu_compaction: bool,
    /// With `gpu_compaction`: a GPU that holds at most this many VMs may send them to another
    /// active host of more than two GPUs (by TC's best fit over those hosts, its own host
    /// included); a GPU with more VMs is vacated within its host only. 2 (the default, with
    /// `gpu_compaction_across_budget = 1`): a GPU of one or two VMs, at most one of them sent to
    /// another host per compaction; 0 keeps every VM on its host. Saves leave out the default.
    #[serde(skip_serializing_if = "is_two")]
    pub gpu_compaction_across: usize,
    /// With `gpu_compaction`: `true` compacts the GPUs of hosts of two GPUs or fewer as well
    /// (the paper's hosts); `false` (the default) leaves them to the optimizer. Saves leave out
    /// `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gpu_compaction_small: bool,
    /// The period of `gpu_compaction` in minutes of simulated time: 1 by default (TC's own
    /// period, `compaction_min`, is 15; 2 before the fourteenth round); with
    /// `gpu_compaction_moves_per_departure` the moves follow the departures, and a short period
    /// lets them follow closely (docs/results/big-nodes-variants.md, seventh and fourteenth
    /// rounds). 0 turns the compaction off. Saves leave out the default.
    #[serde(skip_serializing_if = "is_one_f64")]
    pub gpu_compaction_min: f64,
    /// With `gpu_compaction`: a GPU that holds at most this many VMs, one of them a tenant
    /// (`kind = "tenant"`), may send them to another host, as `gpu_compaction_across` allows for
    /// any GPU (the larger of the two applies to such a GPU). A tenant lives 24 h on average
    /// against a job's 2 h (§6.2), so its GPU would stay busy far longer without the moves.
    /// 0 (the default) adds nothing to `gpu_compaction_across`. Saves leave out 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub gpu_compaction_across_tenant: usize,
    /// With `gpu_compaction`: `true` (the default) sends a VM across hosts only to a host that
    /// held more memory slices than its own before the compaction (ties: the lower host index),
    /// so the compaction's moves across hosts go the way a consolidation goes; without it the
    /// seventh round's settings moved more than TC in 30 of 80 runs. Saves leave out the
    /// default.
    #[serde(skip_serializing_if = "is_true")]
    pub gpu_compaction_toward_fuller: bool,
    /// With `gpu_compaction_toward_fuller`: `true` (the default) also lets a VM sent across
    /// hosts go to a host that is not fuller when every GPU its GIs land on is then full (an
    /// exact fill: the move vacates a GPU and closes a hole), except to the
    /// `gpu_compaction_exact_fill_spare` emptiest active hosts, the next to be switched off
    /// (docs/results/big-nodes-variants.md, twelfth round). Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub gpu_compaction_exact_fill: bool,
    /// With `gpu_compaction_exact_fill`: how many of the active big hosts holding the fewest
    /// memory slices take no exact fill from an emptier host. 1 (the default). Saves leave out
    /// the default.
    #[serde(skip_serializing_if = "is_one")]
    pub gpu_compaction_exact_fill_spare: usize,
    /// With `gpu_compaction`: where the compaction of big hosts sends a VM among the GPUs that
    /// take it, each GI's GPU scores its joint utilization after the GI less this weight times
    /// the rise of its expected fragmentation (as `arrival_fragmentation` does at arrivals), and
    /// a host's score is lowered by the weight times the rises summed over the VM's GIs. 1 (the
    /// default): over 640 paired runs (20 seeds, four phases of the compaction's clock), 0.03
    /// more whole GPUs free than TC's best fit (0) at the same moves
    /// (docs/results/big-nodes-variants.md, fourteenth round). Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_compaction_fragmentation")]
    pub gpu_compaction_fragmentation: f64,
    /// With `gpu_compaction`: the most VMs one compaction sends across hosts (GPUs are tried
    /// least utilized first; one whose vacating would send more stays). 2 (the default; 1 in
    /// the fourth round, docs/results/big-nodes-variants.md): with the rate of moves
    /// (`gpu_compaction_moves_per_departure`) the account bounds the moves, and a GPU of two
    /// VMs can cross in one compaction. 0 is no limit. Saves leave out the default.
    #[serde(skip_serializing_if = "is_two")]
    pub gpu_compaction_across_budget: usize,
    /// With `gpu_compaction_small`: the period in minutes of the compaction of the hosts of two
    /// GPUs or fewer (those of more GPUs keep `gpu_compaction_min`). 0 turns it off. Saves leave
    /// out the default.
    #[serde(skip_serializing_if = "is_default_small_min")]
    pub gpu_compaction_small_min: f64,
    /// With `gpu_compaction_small`: `true` vacates a GPU of a host of two GPUs or fewer only
    /// when that switches the host off (its one GPU holding VMs, at most `gpu_compaction_across`
    /// of them, all sent to other active hosts); no move within such a host. Saves leave out
    /// `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gpu_compaction_small_empty_host: bool,
    /// With `gpu_compaction`: `true` (the default) tries the GPUs of big hosts holding the
    /// fewest VMs first (then the least utilized, TC's order), so that each move is more likely
    /// to vacate a GPU. `false` is TC's order. Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub gpu_compaction_fewest_vms_first: bool,
    /// With `gpu_compaction`: `true` (the default since the fourteenth round of
    /// docs/results/big-nodes-variants.md) lets the compaction of big hosts, when some GPU could
    /// not be vacated, take an idle GPU of an active host as a receiver, one host at a time,
    /// keeping the further moves only if they vacate at least two more GPUs (TC's idle GPU,
    /// within active hosts). Saves leave out the default.
    #[serde(skip_serializing_if = "is_true")]
    pub gpu_compaction_idle_gpu: bool,
    /// With `gpu_compaction`: `true` holds the hosts of a compaction of big hosts from arrivals
    /// until its moves end, as §5.4 holds a call's M̂. `false` (the default since the fifteenth
    /// round of docs/results/big-nodes-variants.md) holds only the GPUs its moves leave (their VMs
    /// run there until their copy ends); the rest of those hosts take arrivals meanwhile. Saves
    /// leave out the default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gpu_compaction_hold_hosts: bool,
    /// With `gpu_compaction`: a rate of moves for the compaction of big hosts, in moves per VM
    /// that leaves such a host. Each departure adds this much to an account (at most
    /// `gpu_compaction_moves_cap`); a compaction makes at most the whole moves in it, within and
    /// across hosts, and spends them. 0.41 (the default since the fifteenth round of
    /// docs/results/big-nodes-variants.md, with `gpu_compaction_hold_hosts = false`; 0.4 before,
    /// 0.5 before the exact fills of the twelfth round): moves follow the churn that fragments
    /// GPUs, so they stay below TC's in most big-nodes runs (seventh round). 0 is no such limit.
    /// Saves leave out the default.
    #[serde(skip_serializing_if = "is_default_moves_per_departure")]
    pub gpu_compaction_moves_per_departure: f64,
    /// With `gpu_compaction_moves_per_departure`: the most moves the account holds. Saves leave
    /// out the default.
    #[serde(skip_serializing_if = "is_default_moves_cap")]
    pub gpu_compaction_moves_cap: f64,
}

/// The default `arrival_fragmentation`.
pub const DEFAULT_ARRIVAL_FRAGMENTATION: f64 = 0.3;

fn is_default_arrival_fragmentation(x: &f64) -> bool {
    *x == DEFAULT_ARRIVAL_FRAGMENTATION
}

/// The default `gpu_compaction_fragmentation`.
pub const DEFAULT_GPU_COMPACTION_FRAGMENTATION: f64 = 1.0;

fn is_default_compaction_fragmentation(x: &f64) -> bool {
    *x == DEFAULT_GPU_COMPACTION_FRAGMENTATION
}

/// The default `gpu_compaction_moves_per_departure`.
pub const DEFAULT_GPU_COMPACTION_MOVES_PER_DEPARTURE: f64 = 0.41;

fn is_default_moves_per_departure(x: &f64) -> bool {
    *x == DEFAULT_GPU_COMPACTION_MOVES_PER_DEPARTURE
}

/// The default `gpu_compaction_moves_cap`.
pub const DEFAULT_GPU_COMPACTION_MOVES_CAP: f64 = 4.0;

fn is_default_moves_cap(x: &f64) -> bool {
    *x == DEFAULT_GPU_COMPACTION_MOVES_CAP
}

/// The default `host_emptying_min`.
pub const DEFAULT_HOST_EMPTYING_MIN: f64 = 10.0;

fn is_default_host_emptying_min(x: &f64) -> bool {
    *x == DEFAULT_HOST_EMPTYING_MIN
}

/// The default `gpu_compaction_small_min`.
pub const DEFAULT_GPU_COMPACTION_SMALL_MIN: f64 = 15.0;

fn is_default_small_min(x: &f64) -> bool {
    *x == DEFAULT_GPU_COMPACTION_SMALL_MIN
}

/// TC's settings (`[policy.tc]`, §6.3).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcSettings {
    /// TC's compaction period in minutes.
    pub compaction_min: f64,
}

impl Default for TcSettings {
    fn default() -> Self {
        TcSettings { compaction_min: 15.0 }
    }
}

/// The packing policy's settings (`[policy.packing]`, docs/policies.md): the weights of its score
/// and its defragmentation trigger. Its trigger's calls are OrigaMIG's, with [`OrigamigSettings`].
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PackingSettings {
    /// Packing policy weight w1: placing the GI leaves its GPU with no free capacity.
    pub finish_gpu: f64,
    /// Packing policy weight w2: the host already runs work (finish a host before opening one).
    pub finish_host: f64,
    /// Packing policy weight w3: penalty for taking a host whose GPUs are all free (kept for
    /// whole-host gangs).
    pub protect_host: f64,
    /// Packing policy's defragmentation trigger: when, for a GPU model, this share
    /// (0..1) or more of the free memory slices is stranded for the model's largest profile (a
    /// whole-GPU request cannot use it without moving anything), the policy asks OrigaMIG for a
    /// consolidation of that class. 0 turns the trigger off.
    pub defrag_stranded_share: f64,
}

impl Default for PackingSettings {
    fn default() -> Self {
        PackingSettings {
            finish_gpu: 1.0,
            finish_host: 1.0,
            protect_host: 2.0,
            defrag_stranded_share: 0.0,
        }
    }
}

/// When OrigaMIG enables again a class whose consolidation call changed nothing
/// (`[policy.origamig] reenable`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reenable {
    /// When Γh rises above its lowest value since, or any VM of the class leaves the fleet
    /// (the paper's reading, `preset = "paper"`).
    Departure,
    /// When Γh rises above its lowest value since, or a VM leaves a host of the neighborhood M̂
    /// of the call that changed nothing.
    Neighborhood,
    /// When Γh rises above its lowest value since, or the VMs that left M̂ since the call could
    /// make switching off one of its hosts pay under Eq. (5), where a host j is worth b_j + e
    /// per active GPU and each of its VMs costs δ_i per move, 2δ_i across hosts for a VM with
    /// GIs (m_i + ω_i): either a departure leaves a host of M̂ whose moves now cost less than it
    /// is worth and did not at the call (cost side), or the departures from M̂ have freed, in
    /// memory slices of the class (cores for M0), `reenable_room_share` × what the lightest
    /// host of M̂ worth its moves at the call held (room side). The call proved that no host
    /// of M̂ had both; arrivals only add VMs and take room, so only these departures can make
    /// a call on M̂ change something. The default since it halved the calls of a long paper-128
    /// run with `reenable_gap_rise = 2` (docs/results/speed-44.md).
    #[default]
    Room,
}

impl Reenable {
    fn is_default(&self) -> bool {
        *self == Reenable::Room
    }

    /// The name a scenario file gives it.
    pub fn name(self) -> &'static str {
        match self {
            Reenable::Departure => "departure",
            Reenable::Neighborhood => "neighborhood",
            Reenable::Room => "room",
        }
    }
}

/// The default `[policy] migration_gbps`: live-migration bandwidth in Gbit/s.
pub(crate) const DEFAULT_MIGRATION_GBPS: f64 = 12.5;

/// The default `merge_hosts`.
pub const DEFAULT_MERGE_HOSTS: usize = 4;

/// The default `node_limit`: HiGHS nodes per simulated call (docs/optimizer.md, "Call budget").
pub const DEFAULT_NODE_LIMIT: u64 = 10_000;

/// Default `reenable_gap_rise_min_gpus`: the GPUs of the paper's 32 two-GPU hosts.
pub const DEFAULT_REENABLE_GAP_RISE_MIN_GPUS: usize = 64;

/// Default `m_max_gpus`: three eight-GPU nodes (docs/results/big-nodes-variants.md, seventh
/// round).
pub const DEFAULT_M_MAX_GPUS: usize = 24;

/// The default `sim_time_limit_s`: the wall-clock safety limit of a simulated call of the
/// planner's play, the paper's 10 s per call (§6.1). Batch runs have the work budget only
/// (`node_limit`, `lp_iteration_limit`).
pub const DEFAULT_SIM_TIME_LIMIT_S: f64 = 10.0;

fn is_default_node_limit(n: &u64) -> bool {
    *n == DEFAULT_NODE_LIMIT
}

/// The default `lp_iteration_limit`: HiGHS simplex iterations per simulated call
/// (docs/optimizer.md, "Call budget").
pub const DEFAULT_LP_ITERATION_LIMIT: u64 = 50_000;

fn is_default_lp_iteration_limit(n: &u64) -> bool {
    *n == DEFAULT_LP_ITERATION_LIMIT
}

fn is_default_sim_time_limit(s: &f64) -> bool {
    *s == DEFAULT_SIM_TIME_LIMIT_S
}

fn is_default_merge(n: &usize) -> bool {
    *n == DEFAULT_MERGE_HOSTS
}

fn is_default_m_max_gpus(n: &usize) -> bool {
    *n == DEFAULT_M_MAX_GPUS
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The default `delta_job_extra`.
pub const DEFAULT_DELTA_JOB_EXTRA: f64 = 15.0;

fn is_default_job_extra(x: &f64) -> bool {
    *x == DEFAULT_DELTA_JOB_EXTRA
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

fn is_one_f64(x: &f64) -> bool {
    *x == 1.0
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_one_u32(n: &u32) -> bool {
    *n == 1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn is_default_rise_min_gpus(n: &usize) -> bool {
    *n == DEFAULT_REENABLE_GAP_RISE_MIN_GPUS
}

fn is_three(n: &usize) -> bool {
    *n == 3
}

fn is_two(n: &usize) -> bool {
    *n == 2
}

/// Named sets of OrigaMIG settings (`[policy] preset`), fixing keys of `[policy.origamig]`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// The defaults of [`OrigamigSettings`]: removed sources stay receivers, δ = 15 (30 for a
    /// job), merge neighborhoods of 4 hosts, FF over active hosts first.
    #[default]
    Default,
    /// Algorithm 1 as written (lines 21-22 drop a removed source from M̂) with the paper's δ = 10
    /// for every VM and §5.1's FF over all hosts.
    Paper,
}

impl Preset {
    /// No preset (saves leave it out).
    pub(crate) fn is_default(&self) -> bool {
        *self == Preset::Default
    }

    /// The settings the preset fixes, as (key, value) of the scenario's `[policy.origamig]` table.
    pub fn keys(self) -> Vec<(&'static str, PresetValue)> {
        match self {
            Preset::Default => Vec::new(),
            Preset::Paper => PRESET_FIELDS.iter().map(|f| (f.key, f.paper)).collect(),
        }
    }
}

/// A value a preset gives a setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PresetValue {
    Bool(bool),
    Number(f64),
    Count(usize),
    Reenable(Reenable),
}

impl PresetValue {
    /// The value as the scenario file writes it.
    fn to_toml(self) -> toml::Value {
        match self {
            PresetValue::Bool(b) => b.into(),
            PresetValue::Number(x) => x.into(),
            PresetValue::Count(n) => (n as i64).into(),
            PresetValue::Reenable(r) => r.name().into(),
        }
    }
}

/// A setting that a preset fixes: its `[policy.origamig]` key, its value under `preset = "paper"`, and how
/// to read and write it in [`OrigamigSettings`].
struct PresetField {
    key: &'static str,
    paper: PresetValue,
    get: fn(&OrigamigSettings) -> PresetValue,
    set: fn(&mut OrigamigSettings, PresetValue),
}

/// One [`PresetField`]: the key, the [`PresetValue`] variant, the field of [`OrigamigSettings`]
/// (named like the key) and its value under `preset = "paper"`.
macro_rules! preset_field {
    ($field:ident, $variant:ident, $paper:expr) => {
        PresetField {
            key: stringify!($field),
            paper: PresetValue::$variant($paper),
            get: |s| PresetValue::$variant(s.$field),
            set: |s, v| {
                if let PresetValue::$variant(x) = v {
                    s.$field = x;
                }
            },
        }
    };
}

/// The settings a preset fixes, listed once: [`Preset::keys`], [`OrigamigSettings::apply_preset`],
/// [`OrigamigSettings::preset_key_values`] (saves) and [`OrigamigSettings::reset_preset_keys`]
/// (`--preset default`) all read this table. A setting added here is handled by all four.
const PRESET_FIELDS: [PresetField; 19] = [
    preset_field!(keep_removed_sources, Bool, false),
    preset_field!(delta, Number, 10.0),
    preset_field!(merge_hosts, Count, 0),
    preset_field!(neighborhood_vms, Count, 0),
    preset_field!(reenable, Reenable, Reenable::Departure),
    preset_field!(reenable_gap_rise, Count, 1),
    preset_field!(delta_job_extra, Number, 0.0),
    preset_field!(ff_active_first, Bool, false),
    preset_field!(host_weight_from_power, Bool, false),
    preset_field!(host_scaled_budget, Bool, false),
    preset_field!(host_scaled_limits, Bool, false),
    preset_field!(arrival_gpu_best_fit, Bool, false),
    preset_field!(arrival_host_best_fit, Bool, false),
    preset_field!(gpu_compaction, Bool, false),
    preset_field!(partition_interleaved, Bool, false),
    preset_field!(arrival_best_fit_small, Bool, false),
    preset_field!(host_emptying_vms, Count, 0),
    preset_field!(consolidation_patterns, Bool, false),
    preset_field!(m_max, Count, 16),
];

impl OrigamigSettings {
    /// The literal reading of Algorithm 1 with the paper's δ (`preset = "paper"`), the other
    /// settings at their defaults.
    pub fn paper() -> Self {
        let mut s = OrigamigSettings::default();
        s.apply_preset(Preset::Paper, &|_| false);
        s
    }

    /// Every setting that a preset fixes, with its value here, as the scenario file writes it.
    pub fn preset_key_values(&self) -> Vec<(&'static str, toml::Value)> {
        PRESET_FIELDS
            .iter()
            .map(|f| (f.key, (f.get)(self).to_toml()))
            .collect()
    }

    /// Gives every setting that a preset fixes its default value (`--preset default` on a
    /// scenario written with another preset).
    pub fn reset_preset_keys(&mut self) {
        let d = OrigamigSettings::default();
        for f in &PRESET_FIELDS {
            (f.set)(self, (f.get)(&d));
        }
    }

    /// Sets the values `preset` fixes, leaving out the keys for which `written` is true
    /// (settings written beside the preset win).
    pub(crate) fn apply_preset(&mut self, preset: Preset, written: &dyn Fn(&str) -> bool) {
        if preset == Preset::Paper {
            for f in PRESET_FIELDS.iter().filter(|f| !written(f.key)) {
                (f.set)(self, f.paper);
            }
        }
    }
}

impl Default for OrigamigSettings {
    fn default() -> Self {
        OrigamigSettings {
            weight_admit: 100.0,
            weight_host: 50.0,
            weight_gpu: 20.0,
            weight_free_start: 1.0,
            delta: 15.0,
            delta_per_gb: 0.0,
            delta_job_extra: DEFAULT_DELTA_JOB_EXTRA,
            m_max: 6,
            m_max_gpus: DEFAULT_M_MAX_GPUS,
            n_max: 64,
            time_limit_s: 10.0,
            node_limit: DEFAULT_NODE_LIMIT,
            sim_time_limit_s: DEFAULT_SIM_TIME_LIMIT_S,
            lp_iteration_limit: DEFAULT_LP_ITERATION_LIMIT,
            threads: 1,
            theta: 1,
            check_every_s: 10.0,
            keep_removed_sources: true,
            partitions: 1,
            partition_hosts: 0,
            partition_interleaved: true,
            host_columns_budget: 1,
            consolidation_patterns: true,
            merge_hosts: DEFAULT_MERGE_HOSTS,
            neighborhood_vms: 0,
            reenable: Reenable::Room,
            reenable_room_share: 1.0,
            reenable_gap_rise: 3,
            reenable_gap_rise_min_gpus: DEFAULT_REENABLE_GAP_RISE_MIN_GPUS,
            consolidation_hold_s: 0.0,
            ff_active_first: true,
            host_weight_from_power: true,
            host_scaled_limits: true,
            host_scaled_budget: true,
            arrival_gpu_best_fit: true,
            arrival_host_best_fit: true,
            arrival_kind_affinity: false,
            arrival_fragmentation: DEFAULT_ARRIVAL_FRAGMENTATION,
            gpu_compaction: true,
            gpu_compaction_across: 2,
            gpu_compaction_small: false,
            gpu_compaction_min: 1.0,
            gpu_compaction_across_tenant: 0,
            gpu_compaction_toward_fuller: true,
            gpu_compaction_exact_fill: true,
            gpu_compaction_exact_fill_spare: 1,
            gpu_compaction_fragmentation: DEFAULT_GPU_COMPACTION_FRAGMENTATION,
            gpu_compaction_across_budget: 2,
            gpu_compaction_small_min: DEFAULT_GPU_COMPACTION_SMALL_MIN,
            gpu_compaction_small_empty_host: false,
            gpu_compaction_fewest_vms_first: true,
            gpu_compaction_idle_gpu: true,
            gpu_compaction_hold_hosts: false,
            gpu_compaction_moves_per_departure: DEFAULT_GPU_COMPACTION_MOVES_PER_DEPARTURE,
            gpu_compaction_moves_cap: DEFAULT_GPU_COMPACTION_MOVES_CAP,
            arrival_best_fit_small: true,
            host_emptying_vms: 2,
            host_emptying_budget: 0,
            host_emptying_min: DEFAULT_HOST_EMPTYING_MIN,
            host_emptying_big_vms: 0,
        }
    }
}
