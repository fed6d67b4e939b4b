//! The host-content formulation of the restricted BILP: one column per (host, what the host
//! holds), the Dantzig-Wolfe reformulation of §4 by host. Same feasible placements, same Eq. (5).
//!
//! - VM types. VMs with the same GIs (model and profile), cores and RAM are interchangeable for
//!   every constraint of §4 (Eq. 6-13); they differ only in where they run now, which enters
//!   Eq. (5) through m_i and omega_i alone.
//! - A host's content is a vector of counts per type. Its column X[j, v] carries the best value
//!   any arrangement of those VMs on host j reaches: every pair of GPU configurations of the host
//!   (§3's configuration space, `configs`), every way of cutting their GIs into VMs of the
//!   neighborhood's types, within the host's cores and RAM. The value of an arrangement is
//!   -b_j - e (active GPUs) + w_p CF (the free-start term, Eq. 11 at its optimum) plus, for the
//!   VMs that ran on j before the call, what staying saves against leaving: a VM that leaves
//!   its host pays delta_i (m_i = 1) and delta_i again (omega_i = 1, its GIs are elsewhere); one
//!   that stays on the host with a GI moved pays delta_i once; one that keeps every GI pays nothing
//!   (Eq. 14-15). delta_i is one value per type: delta plus the surcharge of `delta_per_gb`, a
//!   function of the type's GIs and RAM (`Weights::surcharge`). With c of its type on the host, min(c, VMs of that type there now) can stay on
//!   the host (the others come from elsewhere), and the arrangement keeps in place the VMs
//!   whose exact GIs (type, GPU, start) it contains. The constant part (every running VM
//!   leaving, every running VM admitted) is the objective offset.
//! - Rows: sum_v X[j, v] <= 1 per host (= 1 for the hosts `toolkit::forced_on` fixes on); per type,
//!   sum over hosts and contents of count * X = running VMs of the type + admitted pending VMs of
//!   the type (an integer a_t between 0 and the pending ones, rewarded a each, Eq. 5's first
//!   term). Any solution is a placement: give each host its arrangement, keep the VMs that match
//!   exactly, then those of the host's own VMs that fit its remaining slots of their type, then
//!   fill the other slots with the VMs that left their hosts and with the admitted pending VMs
//!   (the type rows make the counts meet); its Eq. (5) is the columns' value. Conversely every
//!   placement is such a solution, worth at most its columns' value (each column is a maximum).
//! - Empty hosts with the same GPUs, cores and RAM have the same columns: they share one integer
//!   column per content, bounded by their number (no symmetric copies for the search to visit).
//!
//! Why: the LP relaxation of the per-VM formulations splits VMs across half-open hosts (hosts at
//! 0.25-0.83, VMs half in place), and HiGHS spends most of a call cutting that off at the root
//! (docs/optimizer.md). Here a fractional solution can only mix whole host contents, so the root
//! bound is the Dantzig-Wolfe bound.
//!
//! It applies when every host's configuration product stays small: A30-24GB hosts (26
//! configurations per GPU, 676 per two-GPU host) or one A100-40GB (723). Two A100-40GB GPUs
//! give 522,729 pairs, too many to enumerate per call; such neighborhoods (and ones with VMs
//! without GIs) return `None` and are built with [`super::pattern`].

use super::configs::{self, Config};
use super::toolkit::{self, finish, sum, Built, Cols};
use super::Inst;
use crate::catalog::{ModelId, ProfileId};
use crate::fleet::{GiSlot, Placement, VmId};
use crate::policy::origamig::objective::Weights;
use good_lp::{constraint, Constraint};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

mod bygpu;

/// Most GPU-configuration combinations enumerated for one host, at budget 1
/// (`policy.origamig.host_columns_budget` multiplies the three limits).
const MAX_LAYOUTS: usize = 20_000;
/// Most steps of cutting arrangements into VMs for one host, at budget 1; beyond it the host's
/// contents are not enumerated and the call uses the pattern model.
const MAX_STEPS: u64 = 400_000;
/// Most content columns in one model, at budget 1.
const MAX_COLUMNS: usize = 60_000;

/// Why a neighborhood is built in the pattern formulation instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// A VM without GIs (the columns hold GI arrangements only).
    NoGis,
    /// A host's configuration combinations exceed the layouts limit.
    Layouts,
    /// A host's cutting steps exceed the steps limit.
    Steps,
    /// The model's content columns exceed the columns limit.
    Columns,
    /// A host that must stay on has no content, or the current placement has no column (cannot
    /// happen for a valid fleet; kept as a refusal rather than a panic).
    NoColumn,
}

/// A VM slot of an arrangement: (type, one GI slot per position of the type key).
type Slot = (usize, Vec<GiSlot>);
/// A group of hosts with the same columns: host positions and (column, content) pairs.
type Group = (Vec<usize>, Vec<(usize, usize)>);

/// Row or objective terms: (coefficient, column).
type Terms = Vec<(f64, usize)>;
/// The exact GIs of a running VM: (type, sorted (profile, GPU, start)).
type Exact = HashSet<ExactGis>;
/// One running VM's exact GIs: (type, sorted (profile, GPU, start)).
type ExactGis = (usize, Vec<(ProfileId, usize, u8)>);
/// A hash map with [`Fx`] hashing, for the count vectors the enumeration looks up at every
/// arrangement it finds.
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// A multiply-rotate hasher (the one rustc uses internally): the maps here are keyed by short
/// count vectors built by this module, for which SipHash's flooding resistance buys nothing and
/// costs a large share of the enumeration. Map iteration order never reaches the model: contents
/// are sorted by counts before they become columns.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Interchangeable VMs: GIs as sorted (model, profile), cores, RAM.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct TypeKey {
    gis: Vec<(ModelId, ProfileId)>,
    cores: u32,
    ram: u32,
    /// The surcharge of delta_i (`VmRec::surcharge`), as bits: VMs alike but for it (a job
    /// beside a tenant with `delta_job_extra`) are not interchangeable.
    surcharge: u64,
}

/// One content of a host: VMs per type, value, and the arrangement that reaches it.
#[derive(Debug, Clone)]
struct Content {
    counts: Vec<u16>,
    value: f64,
    /// (type, one slot per GI of the type key, in key order).
    slots: Vec<Slot>,
}

/// Reads a placement out of a host-content model.
pub(crate) struct Decode {
    /// Type of each VM of `inst.vms`.
    type_of: Vec<usize>,
    /// Per VM: position in the type key of each of its GIs.
    key_pos: Vec<Vec<usize>>,
    /// Per type: the profile at each position of its key.
    key_profiles: Vec<Vec<ProfileId>>,
    /// Per host position: the group it belongs to.
    group_of: Vec<usize>,
    /// Groups: host positions (one for a host with VMs) and their columns (column, content).
    groups: Vec<Group>,
    /// Column per group and count vector.
    by_counts: Vec<FxMap<Vec<u16>, usize>>,
    contents: Vec<Content>,
    /// a_t column per type with pending VMs.
    admit: Vec<Option<usize>>,
    ntypes: usize,
    ncols: usize,
}

/// Builds the host-content model, or why the neighborhood is outside its reach within the
/// budget `inst.budget` (see the module notes).
pub(crate) fn build(inst: &Inst, relax: bool, named: bool) -> Result<Built, Over> {
    if inst.vms.iter().any(|v| v.gis.is_empty()) {
        return Err(Over::NoGis);
    }
    let types = Types::of(inst);
    let forced = toolkit::forced_on(inst);
    let (mut groups, group_of) = host_groups(inst, &forced);
    let (contents, per_group) = group_contents(inst, &types, &groups)?;
    // The current placement, as counts per host.
    let current = inst.current_targets();
    let mut cols = Cols::new(relax, named);
    let mut obj: Vec<(f64, usize)> = Vec::new();
    let mut rows: Vec<Constraint> = Vec::new();
    let nt = types.keys.len();
    let mut per_type: Vec<Vec<(f64, usize)>> = vec![Vec::new(); nt];
    let by_counts = content_columns(
        inst,
        &forced,
        &mut groups,
        (&contents, &per_group),
        &mut cols,
        (&mut obj, &mut rows, &mut per_type),
    )?;
    let admit = type_rows(inst, &types, &mut cols, per_type, (&mut obj, &mut rows));
    let offset = types.offset(&inst.w);
    let Types {
        keys,
        type_of,
        key_pos,
        ..
    } = types;
    let decode = Decode {
        type_of,
        key_pos,
        key_profiles: keys.iter().map(|k| k.gis.iter().map(|g| g.1).collect()).collect(),
        group_of,
        groups,
        by_counts,
        contents,
        admit,
        ntypes: nt,
        ncols: cols.len(),
    };
    let start = decode.start_from(inst, &current).ok_or(Over::NoColumn)?;
    let mut built = finish(
        cols,
        &obj,
        offset,
        rows,
        super::Decode::Hosts(decode),
        inst.w.integral(),
    );
    built.start = start;
    Ok(built)
}

/// The neighborhood's VM types ([`types`]) with their running and pending VMs and the
/// surcharge of delta_i per type.
struct Types {
    keys: Vec<TypeKey>,
    type_of: Vec<usize>,
    key_pos: Vec<Vec<usize>>,
    running: Vec<u32>,
    pending: Vec<u32>,
    /// Running plus pending, per type.
    total: Vec<u32>,
    /// The surcharge of delta_i per type: a function of the GIs and RAM of the type key
    /// (`Weights::surcharge`), so equal for every VM of a type.
    extra: Vec<f64>,
}

impl Types {
    fn of(inst: &Inst) -> Types {
        let (keys, type_of, key_pos) = types(inst);
        let nt = keys.len();
        let mut running = vec![0u32; nt];
        let mut pending = vec![0u32; nt];
        for (i, vm) in inst.vms.iter().enumerate() {
            if vm.old.is_some() {
                running[type_of[i]] += 1;
            } else {
                pending[type_of[i]] += 1;
            }
        }
        let total: Vec<u32> = (0..nt).map(|t| running[t] + pending[t]).collect();
        let mut extra = vec![0.0f64; nt];
        for (i, vm) in inst.vms.iter().enumerate() {
            extra[type_of[i]] = vm.surcharge;
        }
        debug_assert!(inst
            .vms
            .iter()
            .enumerate()
            .all(|(i, vm)| vm.surcharge == extra[type_of[i]]));
        Types {
            keys,
            type_of,
            key_pos,
            running,
            pending,
            total,
            extra,
        }
    }

    /// The objective constant: every running VM admitted (a each) and leaving its host (delta_i
    /// twice: m_i and omega_i; delta_i = delta + the surcharge of its type).
    fn offset(&self, w: &Weights) -> f64 {
        let nt = self.keys.len();
        let nrun: u32 = self.running.iter().sum();
        let surcharges: f64 = (0..nt).map(|t| self.running[t] as f64 * self.extra[t]).sum();
        nrun as f64 * (w.admit - 2.0 * w.delta_running) - 2.0 * surcharges
    }
}

/// Groups of hosts with the same columns: every host with VMs, a fixing or a forced `phi` alone;
/// empty hosts with the same GPUs, cores and RAM together. Returns the groups and the group of
/// each host position.
fn host_groups(inst: &Inst, forced: &[bool]) -> (Vec<Group>, Vec<usize>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of = vec![usize::MAX; inst.hosts.len()];
    let mut sig_group: HashMap<(Vec<ModelId>, u32, u32), usize> = HashMap::new();
    for (h, &hid) in inst.hosts.iter().enumerate() {
        let host = &inst.fleet.hosts[hid];
        let shared = host.vms.is_empty() && inst.phi_fix[h].is_none() && !forced[h];
        if shared {
            let sig = (
                host.gpus.iter().map(|g| g.model).collect(),
                host.cores,
                host.ram_gb,
            );
            if let Some(&g) = sig_group.get(&sig) {
                groups[g].0.push(h);
                group_of[h] = g;
                continue;
            }
            sig_group.insert(sig, groups.len());
        }
        group_of[h] = groups.len();
        groups.push((vec![h], Vec::new()));
    }
    (groups, group_of)
}

/// The contents of every group's first host ([`memo_enumerate`]), or which limit the
/// neighborhood passes. Returns every content, and per group the indices of its contents.
fn group_contents(
    inst: &Inst,
    types: &Types,
    groups: &[Group],
) -> Result<(Vec<Content>, Vec<Vec<usize>>), Over> {
    let fleet = inst.fleet;
    let nt = types.keys.len();
    // The hosts likeliest to pass the budget first (most configuration combinations of their
    // GPUs, then most GIs now): a neighborhood that falls back to the pattern model then stops
    // before enumerating the others. The contents are put together in group order below, so the
    // model does not depend on this order.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_cached_key(|&g| {
        let host = &fleet.hosts[inst.hosts[groups[g].0[0]]];
        let layouts = host.gpus.iter().fold(1usize, |n, gpu| {
            n.saturating_mul(configs::of_model(fleet.catalog.model(gpu.model)).len())
        });
        let gis: usize = host.gpus.iter().map(|gpu| gpu.gis.len()).sum();
        (std::cmp::Reverse(layouts), std::cmp::Reverse(gis), g)
    });
    let mut lists: Vec<Vec<Content>> = vec![Vec::new(); groups.len()];
    let mut ncontents = 0usize;
    for g in order {
        let h = groups[g].0[0];
        if inst.phi_fix[h] == Some(false) {
            continue;
        }
        let (own, exact) = own_vms(inst, h, &types.type_of, nt);
        lists[g] = memo_enumerate(&HostIn {
            inst,
            h,
            keys: &types.keys,
            total: &types.total,
            own: &own,
            exact: &exact,
            delta: inst.w.delta_running,
            extra: &types.extra,
        })?;
        ncontents += lists[g].len();
        if ncontents > MAX_COLUMNS.saturating_mul(inst.budget as usize) {
            return Err(Over::Columns);
        }
    }
    let mut contents: Vec<Content> = Vec::new();
    let mut per_group: Vec<Vec<usize>> = Vec::with_capacity(groups.len());
    for list in lists {
        let ids: Vec<usize> = (contents.len()..contents.len() + list.len()).collect();
        contents.extend(list);
        per_group.push(ids);
    }
    Ok((contents, per_group))
}

/// The X columns of every group (a binary for one host, an integer up to the group's size for
/// shared empty hosts) with their values, and each group's row: sum_v X[j, v] <= the group's
/// size, = 1 for a host fixed or forced on. Adds each column's counts to `per_type`'s rows and
/// the columns to `groups`; returns per group the column of each count vector.
fn content_columns(
    inst: &Inst,
    forced: &[bool],
    groups: &mut [Group],
    (contents, per_group): (&[Content], &[Vec<usize>]),
    cols: &mut Cols,
    (obj, rows, per_type): (&mut Terms, &mut Vec<Constraint>, &mut [Terms]),
) -> Result<Vec<FxMap<Vec<u16>, usize>>, Over> {
    let mut by_counts: Vec<FxMap<Vec<u16>, usize>> = Vec::with_capacity(groups.len());
    for (g, (members, gcols)) in groups.iter_mut().enumerate() {
        let n = members.len() as u32;
        let mut map = FxMap::default();
        let mut row: Vec<(f64, usize)> = Vec::new();
        for &c in &per_group[g] {
            let ct = &contents[c];
            let col = if n == 1 {
                cols.bin(false, || format!("X[{}]{:?}", members[0], ct.counts))
            } else {
                cols.int(n, || format!("X[g{g}]{:?}", ct.counts))
            };
            obj.push((ct.value, col));
            for (t, &k) in ct.counts.iter().enumerate() {
                if k > 0 {
                    per_type[t].push((k as f64, col));
                }
            }
            row.push((1.0, col));
            map.insert(ct.counts.clone(), col);
            gcols.push((col, c));
        }
        let h = members[0];
        let must = n == 1 && (forced[h] || inst.phi_fix[h] == Some(true));
        if must {
            if row.is_empty() {
                return Err(Over::NoColumn);
            }
            rows.push(constraint::eq(sum(cols, &row), 1.0));
        } else if !row.is_empty() {
            rows.push(constraint::leq(sum(cols, &row), n as f64));
        }
        by_counts.push(map);
    }
    Ok(by_counts)
}

/// The a_t column of each type with pending VMs (rewarded a each, Eq. 5's first term) and each
/// type's row: its count over the X columns = running VMs + a_t. Returns the a_t columns.
fn type_rows(
    inst: &Inst,
    types: &Types,
    cols: &mut Cols,
    mut per_type: Vec<Terms>,
    (obj, rows): (&mut Terms, &mut Vec<Constraint>),
) -> Vec<Option<usize>> {
    let nt = types.keys.len();
    let mut admit = vec![None; nt];
    for t in 0..nt {
        let mut row = std::mem::take(&mut per_type[t]);
        if types.pending[t] > 0 {
            let c = cols.int(types.pending[t], || format!("a[{t}]"));
            obj.push((inst.w.admit, c));
            row.push((-1.0, c));
            admit[t] = Some(c);
        }
        rows.push(constraint::eq(sum(cols, &row), types.running[t] as f64));
    }
    admit
}

/// The VM types of the neighborhood: their keys, the type of each VM of `inst.vms`, and per VM
/// the position in its type key of each of its GIs.
fn types(inst: &Inst) -> (Vec<TypeKey>, Vec<usize>, Vec<Vec<usize>>) {
    let mut keys: Vec<TypeKey> = Vec::new();
    let mut type_of = Vec::with_capacity(inst.vms.len());
    let mut key_pos = Vec::with_capacity(inst.vms.len());
    for vm in &inst.vms {
        let mut order: Vec<usize> = (0..vm.gis.len()).collect();
        order.sort_by_key(|&g| (vm.gis[g].model, vm.gis[g].profile));
        let key = TypeKey {
            gis: order
                .iter()
                .map(|&g| (vm.gis[g].model, vm.gis[g].profile))
                .collect(),
            cores: vm.cores,
            ram: vm.ram,
            surcharge: vm.surcharge.to_bits(),
        };
        let t = match keys.iter().position(|k| *k == key) {
            Some(t) => t,
            None => {
                keys.push(key);
                keys.len() - 1
            }
        };
        type_of.push(t);
        let mut pos = vec![0; vm.gis.len()];
        for (r, &g) in order.iter().enumerate() {
            pos[g] = r;
        }
        key_pos.push(pos);
    }
    (keys, type_of, key_pos)
}

/// The running VMs of host position `h`: how many of each type, and their exact GIs.
fn own_vms(inst: &Inst, h: usize, type_of: &[usize], nt: usize) -> (Vec<u16>, Exact) {
    let mut own = vec![0u16; nt];
    let mut exact: Exact = HashSet::new();
    for (i, vm) in inst.vms.iter().enumerate() {
        if let Some((oh, slots)) = &vm.old {
            if *oh == h {
                own[type_of[i]] += 1;
                let mut e: Vec<_> = vm
                    .gis
                    .iter()
                    .zip(slots)
                    .map(|(g, s)| (g.profile, s.gpu, s.start))
                    .collect();
                e.sort_unstable();
                exact.insert((type_of[i], e));
            }
        }
    }
    (own, exact)
}

/// The input of [`enumerate`] for host position `h` of `inst`: the neighborhood's VM types and
/// their totals, the host's own running VMs per type and their exact GIs, delta and the
/// surcharge of delta_i per type (a running VM of type t has delta_i = delta + extra[t]).
#[derive(Clone, Copy)]
struct HostIn<'a, 'f> {
    inst: &'a Inst<'f>,
    h: usize,
    keys: &'a [TypeKey],
    total: &'a [u32],
    own: &'a [u16],
    exact: &'a Exact,
    delta: f64,
    extra: &'a [f64],
}

/// Everything [`enumerate`] reads for one host: the catalog, the host's GPUs with the GIs they
/// hold now, its cores and RAM, the neighborhood's types and their totals, the host's own VMs
/// per type and their exact GIs, and the weights. Equal keys give equal contents.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EnumKey {
    catalog: usize,
    gpus: Vec<(ModelId, Vec<(ProfileId, u8)>)>,
    cores: u32,
    ram: u32,
    keys: Vec<TypeKey>,
    total: Vec<u32>,
    own: Vec<u16>,
    exact: Vec<ExactGis>,
    /// host, gpu, free_start, delta and delta_per_gb, as bits (the surcharges per type are a
    /// function of the type keys, the catalog and delta_per_gb).
    weights: [u64; 5],
    budget: u32,
    by_gpu: bool,
}

/// Most contents kept in the memo of [`memo_enumerate`] (about 200 bytes each); it is emptied
/// when full.
const MEMO_CONTENTS: usize = 400_000;

/// The memo of [`memo_enumerate`]: contents (or why not: outside the budget) per key, and the
/// number of contents it holds.
type Memo = (FxMap<EnumKey, Result<Vec<Content>, Over>>, usize);

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = std::cell::RefCell::new((FxMap::default(), 0));
}

/// [`enumerate`]'s contents sorted by counts, memoised per thread: consecutive calls of a
/// simulation see mostly the same hosts with the same VMs, whose contents need not be
/// enumerated again. The memo holds the function's whole input as its key, so a hit returns
/// exactly what enumerating would.
fn memo_enumerate(x: &HostIn) -> Result<Vec<Content>, Over> {
    let HostIn {
        inst,
        h,
        keys,
        total,
        own,
        exact,
        delta,
        extra: _,
    } = *x;
    let host = &inst.fleet.hosts[inst.hosts[h]];
    let mut ex: Vec<_> = exact.iter().cloned().collect();
    ex.sort_unstable();
    let key = EnumKey {
        catalog: inst.fleet.catalog as *const crate::catalog::Catalog as usize,
        gpus: host
            .gpus
            .iter()
            .map(|g| (g.model, g.gis.iter().map(|x| (x.profile, x.start)).collect()))
            .collect(),
        cores: host.cores,
        ram: host.ram_gb,
        keys: keys.to_vec(),
        total: total.to_vec(),
        own: own.to_vec(),
        exact: ex,
        weights: [
            inst.w.host_of(host, inst.fleet.catalog).to_bits(),
            inst.w.gpu.to_bits(),
            inst.w.free_start.to_bits(),
            delta.to_bits(),
            inst.w.delta_per_gb.to_bits(),
        ],
        budget: inst.budget,
        by_gpu: inst.by_gpu,
    };
    if let Some(hit) = MEMO.with(|m| m.borrow().0.get(&key).cloned()) {
        return hit;
    }
    if let Some(over) = known_over(x, &key) {
        return Err(over);
    }
    let list = enumerate(x).map(|found| {
        let mut list: Vec<Content> = found.into_values().collect();
        list.sort_by(|a, b| a.counts.cmp(&b.counts));
        list
    });
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        let n = list.as_ref().map_or(1, |l| l.len().max(1));
        if m.1 + n > MEMO_CONTENTS {
            m.0.clear();
            m.1 = 0;
        }
        if n <= MEMO_CONTENTS {
            m.1 += n;
            m.0.insert(key.clone(), list.clone());
        }
    });
    if let Err(Over::Layouts | Over::Steps) = list {
        if !key.by_gpu {
            OVER.with(|o| {
                let mut o = o.borrow_mut();
                if o.len() >= OVER_KEEP {
                    o.remove(0);
                }
                o.push(Passed::of(&key));
            });
        }
    }
    list
}

/// A host whose cut search ([`cut_arrangements`]) passed the layouts or steps limit: the host
/// (catalog, GPUs with their GIs, cores, RAM), the budget, and the neighborhood's types with
/// their totals.
///
/// Both limits only grow with the types and their totals. With more types or a larger total of
/// a type, every GPU's configuration list ([`gpu_configs`]: configurations within the profile
/// counts the types give, the dominated ones dropped among configurations of equal counts) is a
/// superset of the smaller one's, so the combinations are at least as many; and every node of
/// the smaller search tree (one choice of (type, position) per GI, each within cores, RAM and
/// the type's total) is a node of the larger one, so the steps are at least as many. A host
/// that passed a limit with types T and totals t therefore passes one with any T' ⊇ T and
/// t' ≥ t on T: [`known_over`] answers such hosts without searching.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Passed {
    catalog: usize,
    gpus: Vec<(ModelId, Vec<(ProfileId, u8)>)>,
    cores: u32,
    ram: u32,
    budget: u32,
    types: Vec<(TypeKey, u32)>,
}

impl Passed {
    fn of(key: &EnumKey) -> Passed {
        Passed {
            catalog: key.catalog,
            gpus: key.gpus.clone(),
            cores: key.cores,
            ram: key.ram,
            budget: key.budget,
            types: key.keys.iter().cloned().zip(key.total.iter().copied()).collect(),
        }
    }

    /// Whether the host of `key` with `key`'s types and totals has at least this one's.
    fn covered_by(&self, key: &EnumKey) -> bool {
        self.catalog == key.catalog
            && self.cores == key.cores
            && self.ram == key.ram
            && self.budget == key.budget
            && self.gpus == key.gpus
            && self
                .types
                .iter()
                .all(|(t, n)| key.keys.iter().zip(&key.total).any(|(k, m)| k == t && m >= n))
    }
}

/// Most hosts kept in [`OVER`] (the oldest is dropped).
const OVER_KEEP: usize = 256;

thread_local! {
    /// Hosts whose cut search passed a limit ([`Passed`]), per thread.
    static OVER: std::cell::RefCell<Vec<Passed>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What [`enumerate`] returns for a host that some [`Passed`] entry covers: it passes a limit
/// again, the layouts limit when its configuration combinations exceed it (the first check of
/// [`cut_arrangements`]), the steps limit otherwise. `None` when no entry covers the host or
/// when hosts past the limits are enumerated GPU by GPU (`by_gpu`, which may succeed).
fn known_over(x: &HostIn, key: &EnumKey) -> Option<Over> {
    if key.by_gpu || !OVER.with(|o| o.borrow().iter().any(|p| p.covered_by(key))) {
        return None;
    }
    let per_gpu = gpu_configs(x.inst, x.h, x.keys, x.total);
    let layouts = per_gpu.iter().fold(1usize, |n, l| n.saturating_mul(l.len()));
    Some(if layouts > MAX_LAYOUTS.saturating_mul(x.inst.budget as usize) {
        Over::Layouts
    } else {
        Over::Steps
    })
}

/// Every content of host position `h` with its best arrangement, or which limit (scaled by
/// `inst.budget`) the host exceeds. The arrangements are cut GI by GI ([`Search`]); a host past
/// the layouts or steps limit whose VM types all have one GI is enumerated GPU by GPU instead
/// ([`bygpu`]), with the same contents and values.
fn enumerate(x: &HostIn) -> Result<FxMap<Vec<u16>, Content>, Over> {
    let per_gpu = gpu_configs(x.inst, x.h, x.keys, x.total);
    match cut_arrangements(x, &per_gpu) {
        Err(Over::Layouts | Over::Steps) if x.inst.by_gpu && bygpu::applies(x.keys) => {
            bygpu::enumerate(x, &per_gpu)
        }
        r => r,
    }
}

/// Per GPU of host position `h`: the configurations made only of GIs the neighborhood's VMs can
/// put there, no more of a profile than the neighborhood has, none dominated within equal counts
/// (`configs::undominated`), sorted by GIs.
fn gpu_configs(inst: &Inst, h: usize, keys: &[TypeKey], total: &[u32]) -> Vec<Vec<&'static Config>> {
    let cat = inst.fleet.catalog;
    let host = &inst.fleet.hosts[inst.hosts[h]];
    let mut per_gpu: Vec<Vec<&'static Config>> = Vec::with_capacity(host.gpus.len());
    for gpu in &host.gpus {
        let m = cat.model(gpu.model);
        let mut have = vec![0u32; m.profiles.len()];
        for (t, k) in keys.iter().enumerate() {
            for &(gm, p) in &k.gis {
                if cat.same_class(gm, gpu.model) && p < have.len() {
                    have[p] += total[t];
                }
            }
        }
        // Configurations within the neighborhood's profile counts, none dominated within equal
        // counts (`configs::undominated`).
        let now: Vec<(ProfileId, u8)> = gpu.gis.iter().map(|g| (g.profile, g.start)).collect();
        let mut cand: Vec<configs::Candidate<Vec<u32>>> = Vec::new();
        for c in configs::of_model(m) {
            let mut n = vec![0u32; have.len()];
            for g in &c.gis {
                n[g.0] += 1;
            }
            if n.iter().zip(&have).any(|(a, b)| a > b) {
                continue;
            }
            let kept: Vec<(ProfileId, u8)> = c.gis.iter().copied().filter(|g| now.contains(g)).collect();
            cand.push((c, n, kept));
        }
        let mut list: Vec<&'static Config> = configs::undominated(cand).into_iter().map(|e| e.0).collect();
        list.sort_by(|a, b| a.gis.cmp(&b.gis));
        per_gpu.push(list);
    }
    per_gpu
}

/// Class of a model: the first model of the catalog with its class string, so that two models
/// are of the same class exactly when their class ids are equal.
fn class_id(cat: &crate::catalog::Catalog, m: ModelId) -> usize {
    (0..cat.models.len()).find(|&o| cat.same_class(o, m)).unwrap_or(m)
}

/// Per type: (class id, profile) of each position of its key.
fn key_classes(cat: &crate::catalog::Catalog, keys: &[TypeKey]) -> Vec<Vec<(usize, ProfileId)>> {
    keys.iter()
        .map(|k| k.gis.iter().map(|&(m, p)| (class_id(cat, m), p)).collect())
        .collect()
}

/// [`enumerate`] by cutting every combination of the GPUs' configurations `per_gpu` into VMs,
/// GI by GI.
fn cut_arrangements(x: &HostIn, per_gpu: &[Vec<&'static Config>]) -> Result<FxMap<Vec<u16>, Content>, Over> {
    let inst = x.inst;
    let layouts = per_gpu.iter().fold(1usize, |n, l| n.saturating_mul(l.len()));
    if layouts > MAX_LAYOUTS.saturating_mul(inst.budget as usize) {
        return Err(Over::Layouts);
    }
    let max_steps = MAX_STEPS.saturating_mul(inst.budget as u64);
    // One search that builds the arrangements and stops at the limit. (A first pass that only
    // counted the steps, to refuse a host past the limit before building anything, cost 11 % of
    // a paper-128 simulation's CPU: most hosts are within the limit, and those past it are
    // remembered by `known_over`.)
    let (out, steps) = cut_search(x, per_gpu, max_steps);
    if steps > max_steps {
        return Err(Over::Steps);
    }
    Ok(out)
}

/// The search of [`cut_arrangements`] over every combination of `per_gpu`: the best arrangement
/// per content and the steps taken (calls of `Search::cut`); it stops after the combination in
/// which the steps pass `max_steps`.
fn cut_search(
    x: &HostIn,
    per_gpu: &[Vec<&'static Config>],
    max_steps: u64,
) -> (FxMap<Vec<u16>, Content>, u64) {
    let (out, steps, _) = cut_search_with(x, per_gpu, max_steps, true);
    (out, steps)
}

/// [`cut_search`], with the states of the search memoised (`Search::cut`) or not (`memo`),
/// and the states it did not search again.
fn cut_search_with(
    x: &HostIn,
    per_gpu: &[Vec<&'static Config>],
    max_steps: u64,
    memo: bool,
) -> (FxMap<Vec<u16>, Content>, u64, u64) {
    let HostIn {
        inst,
        h,
        keys,
        total,
        own,
        exact,
        delta,
        extra,
    } = *x;
    let cat = inst.fleet.catalog;
    let w = &inst.w;
    let host = &inst.fleet.hosts[inst.hosts[h]];
    let gpu_class: Vec<usize> = host.gpus.iter().map(|g| class_id(cat, g.model)).collect();
    let key_class = key_classes(cat, keys);
    // Per (class, profile) of a GI: the (type, position) pairs the first unused GI can take in
    // `Search::cut`, in the order it tries them (by type, then position; the first of equal
    // positions only).
    let mut cand_of: Vec<(usize, ProfileId)> = Vec::new();
    let mut cands: Vec<Vec<(usize, usize)>> = Vec::new();
    for (k, list) in per_gpu.iter().enumerate() {
        for c in list.iter() {
            for &(p, _) in &c.gis {
                let cp = (gpu_class[k], p);
                if cand_of.contains(&cp) {
                    continue;
                }
                let mut v = Vec::new();
                for (t, key) in keys.iter().enumerate() {
                    for (a, &kc) in key_class[t].iter().enumerate() {
                        if (a == 0 || key.gis[a - 1] != key.gis[a]) && kc == cp {
                            v.push((t, a));
                        }
                    }
                }
                cand_of.push(cp);
                cands.push(v);
            }
        }
    }
    let exact_list: Vec<ExactGis> = exact.iter().cloned().collect();
    let mut idx = vec![0usize; per_gpu.len()];
    let mut st = Search {
        keys,
        key_class: &key_class,
        cands: &cands,
        gi_cands: Vec::new(),
        cores_of: keys.iter().map(|k| k.cores).collect(),
        ram_of: keys.iter().map(|k| k.ram).collect(),
        total,
        cores: host.cores,
        ram: host.ram_gb,
        gis: Vec::new(),
        used: Vec::new(),
        counts: vec![0; keys.len()],
        slots: Vec::new(),
        depth: 0,
        kept: 0,
        kept_extra: 0.0,
        own,
        exact: &exact_list,
        scratch: Vec::new(),
        slot_pool: Vec::new(),
        base: 0.0,
        delta,
        extra,
        out: FxMap::default(),
        steps: 0,
        max_steps,
        seen: FxMap::default(),
        mask: 0,
        ckey: 0,
        memoise: false,
        memo_on: false,
        pruned: 0,
    };
    // The states of the search can be memoised when their key packs into `StateKey`: every
    // GI in the mask's 64 bits, every count in `COUNT_BITS` bits.
    // (A path's value rises with `kept` and `kept_extra` only while delta and the surcharges
    // are not negative, which the scenario's checks ensure; the search does not rely on it.)
    st.memoise = memo && nt_fits(keys.len(), total) && delta >= 0.0 && extra.iter().all(|&x| x >= 0.0);
    loop {
        let mut active = 0u32;
        let mut cf = 0u32;
        st.gis.clear();
        for (k, list) in per_gpu.iter().enumerate() {
            let c = list[idx[k]];
            if !c.gis.is_empty() {
                active += 1;
                cf += c.cf;
            }
            st.gis.extend(c.gis.iter().map(|&(p, z)| (k, gpu_class[k], p, z)));
        }
        st.gi_cands.clear();
        for &(_, class, p, _) in &st.gis {
            let i = cand_of.iter().position(|&cp| cp == (class, p)).unwrap_or(0);
            st.gi_cands.push(i);
        }
        if !st.gis.is_empty() {
            st.base = -w.host_of(host, cat) - w.gpu * active as f64 + w.free_start * cf as f64;
            st.used.clear();
            st.used.resize(st.gis.len(), false);
            st.seen.clear();
            st.mask = 0;
            st.ckey = 0;
            st.memo_on = st.memoise && st.gis.len() <= 64;
            st.cut(0, 0, 0);
            if st.steps > st.max_steps {
                break;
            }
        }
        if !toolkit::next_combination(&mut idx, per_gpu) {
            break;
        }
    }
    (st.out, st.steps, st.pruned)
}

/// What the surcharges of delta_i add to a content's value: per type, extra[t] for each of the
/// host's own VMs that can stay (min of the count and the own VMs, as kh) plus `kept_extra`, the
/// surcharges of the VMs that keep their exact GIs. Exactly 0 when every surcharge is 0.
fn stay_surcharges(extra: &[f64], counts: &[u16], own: &[u16], kept_extra: f64) -> f64 {
    let mut v = kept_extra;
    for ((&x, &c), &o) in extra.iter().zip(counts).zip(own) {
        if x != 0.0 {
            v += x * c.min(o) as f64;
        }
    }
    v
}

/// Cuts one arrangement's GIs into VMs of the neighborhood's types, and keeps the best
/// arrangement of each content in `out`.
struct Search<'a> {
    keys: &'a [TypeKey],
    /// Per type: (class id, profile) of each position of its key.
    key_class: &'a [Vec<(usize, ProfileId)>],
    /// Candidate (type, position) lists, and the list of each GI of `gis`.
    cands: &'a [Vec<(usize, usize)>],
    gi_cands: Vec<usize>,
    cores_of: Vec<u32>,
    ram_of: Vec<u32>,
    total: &'a [u32],
    cores: u32,
    ram: u32,
    /// (GPU, its class id, profile, start) of every GI of the arrangement.
    gis: Vec<(usize, usize, ProfileId, u8)>,
    used: Vec<bool>,
    counts: Vec<u16>,
    /// The VMs cut so far are `slots[..depth]`; the entries past `depth` are buffers kept for
    /// reuse (no GI vector is allocated or moved per VM).
    slots: Vec<(usize, Vec<GiSlot>)>,
    depth: usize,
    /// How many of `slots` hold exactly the GIs of one of the host's running VMs, and the sum
    /// of their types' surcharges.
    kept: u32,
    kept_extra: f64,
    /// The host's own running VMs per type, and their exact GIs.
    own: &'a [u16],
    exact: &'a [ExactGis],
    /// Buffers reused across the search: a slot's sorted GIs, and open VM slots.
    scratch: Vec<(ProfileId, usize, u8)>,
    slot_pool: Vec<Vec<Option<usize>>>,
    /// Value of the arrangement's GPU configurations (hosts, GPUs, free starts).
    base: f64,
    delta: f64,
    /// The surcharge of delta_i per type.
    extra: &'a [f64],
    /// Best arrangement found so far per content.
    out: FxMap<Vec<u16>, Content>,
    /// Calls of `cut` so far, and the most allowed (the work budget).
    steps: u64,
    max_steps: u64,
    /// The states of the current combination's search already searched from ([`StateKey`]):
    /// the `kept` and `kept_extra` of the path that reached them first (or of a later one that
    /// was better in both), and the steps their search took.
    seen: FxMap<StateKey, (u32, f64, u64)>,
    /// The GIs used (bit g for `used[g]`) and the counts packed as in [`StateKey`].
    mask: u64,
    ckey: u128,
    /// Whether the types' counts pack into a key (`nt_fits`), and whether the current
    /// combination is memoised (also at most 64 GIs).
    memoise: bool,
    memo_on: bool,
    /// States reached again and not searched again.
    pruned: u64,
}

/// A state of the cut search: the GIs used (one bit each) and the VMs cut so far per type
/// (`COUNT_BITS` bits each). The cores and RAM used follow from the counts, and the first
/// unused GI from the mask, so the search below a state is the same wherever it is reached.
type StateKey = (u64, u128);

/// Bits of one type's count in [`StateKey`].
const COUNT_BITS: usize = 6;

/// Whether `nt` types with at most `total` VMs each pack into [`StateKey`].
fn nt_fits(nt: usize, total: &[u32]) -> bool {
    nt * COUNT_BITS <= 128 && total.iter().all(|&n| n < (1 << COUNT_BITS))
}

impl Search<'_> {
    #[inline]
    fn fits(&self, key: (usize, ProfileId), gi: usize) -> bool {
        let (_, class, p, _) = self.gis[gi];
        key.1 == p && key.0 == class
    }

    /// Whether the VM cut at depth `d` (of type `t`) holds exactly the GIs of one of the host's running
    /// VMs.
    fn is_exact(&mut self, t: usize, d: usize) -> bool {
        if self.exact.is_empty() {
            return false;
        }
        let e = &mut self.scratch;
        e.clear();
        e.extend(
            self.keys[t]
                .gis
                .iter()
                .zip(&self.slots[d].1)
                .map(|(g, s)| (g.1, s.gpu, s.start)),
        );
        e.sort_unstable();
        self.exact.iter().any(|(et, x)| *et == t && x == e)
    }

    /// Every GI is assigned: the content in `counts` with the arrangement in `slots`. Its value
    /// counts the VMs that can stay on the host (min of the type's count and the host's own
    /// VMs of the type) and the slots that keep a VM's exact GIs; the first arrangement of the
    /// best value is kept.
    fn found(&mut self) {
        let kh: u32 = self
            .counts
            .iter()
            .zip(self.own)
            .map(|(&c, &o)| c.min(o) as u32)
            .sum();
        let value = self.base
            + self.delta * (kh as f64 + self.kept as f64)
            + stay_surcharges(self.extra, &self.counts, self.own, self.kept_extra);
        match self.out.get(self.counts.as_slice()) {
            Some(c) if c.value >= value => {}
            _ => {
                self.out.insert(
                    self.counts.clone(),
                    Content {
                        counts: self.counts.clone(),
                        value,
                        slots: self.slots[..self.depth].to_vec(),
                    },
                );
            }
        }
    }

    /// Assigns every GI from the first unused one on; `cores`/`ram` are those used so far.
    ///
    /// A state reached again ([`StateKey`]) by a path that keeps no more VMs' exact GIs, with
    /// no more of their surcharges, than the path that searched it leads only to arrangements
    /// worth no more than the ones that search found first for the same contents, which
    /// `found` keeps (the first of equal values): it is not searched again, and its steps are
    /// counted as that search took them, so the work budget ends the search where the full
    /// search would.
    fn cut(&mut self, from: usize, cores: u32, ram: u32) {
        self.steps += 1;
        if self.steps > self.max_steps {
            return;
        }
        if !self.memo_on {
            return self.cut_from(from, cores, ram);
        }
        let key = (self.mask, self.ckey);
        if let Some(&(k, x, n)) = self.seen.get(&key) {
            if self.kept <= k && self.kept_extra <= x {
                self.steps += n - 1;
                self.pruned += 1;
                return;
            }
        }
        let before = self.steps;
        self.cut_from(from, cores, ram);
        let n = self.steps - before + 1;
        let (kept, extra) = (self.kept, self.kept_extra);
        match self.seen.get_mut(&key) {
            Some(e) if kept >= e.0 && extra >= e.1 => *e = (kept, extra, n),
            Some(_) => {}
            None => {
                self.seen.insert(key, (kept, extra, n));
            }
        }
    }

    /// [`Search::cut`] once the state is searched.
    fn cut_from(&mut self, from: usize, cores: u32, ram: u32) {
        let Some(first) = (from..self.gis.len()).find(|&g| !self.used[g]) else {
            self.found();
            return;
        };
        // The first unused GI takes one position of a type (the first of equal ones). One slot
        // buffer serves every candidate (`fill` leaves it as it found it): taking a buffer from
        // the pool per candidate read back the one just returned, a store-to-load stall that
        // took a sixth of this function's time.
        let cands = self.cands;
        let mut slot = self.slot_pool.pop().unwrap_or_default();
        for &(t, a) in &cands[self.gi_cands[first]] {
            let (kc, kr) = (self.cores_of[t], self.ram_of[t]);
            if self.counts[t] as u32 >= self.total[t] || cores + kc > self.cores || ram + kr > self.ram {
                continue;
            }
            slot.clear();
            slot.resize(self.keys[t].gis.len(), None);
            slot[a] = Some(first);
            self.used[first] = true;
            self.fill(t, &mut slot, 0, first, cores + kc, ram + kr);
            self.used[first] = false;
        }
        self.slot_pool.push(slot);
    }

    /// Fills the remaining positions of a VM of type `t` with unused GIs after `first`; equal
    /// positions take GIs in increasing order.
    fn fill(
        &mut self,
        t: usize,
        slot: &mut Vec<Option<usize>>,
        pos: usize,
        first: usize,
        cores: u32,
        ram: u32,
    ) {
        if pos == slot.len() {
            let d = self.depth;
            if d == self.slots.len() {
                self.slots.push((t, Vec::new()));
            }
            let gis = &self.gis;
            let (st, s) = &mut self.slots[d];
            *st = t;
            s.clear();
            s.extend(slot.iter().map(|g| {
                let (k, _, _, z) = gis[g.expect("filled")];
                GiSlot { gpu: k, start: z }
            }));
            let exact = self.is_exact(t, d) as u32;
            self.counts[t] += 1;
            self.kept += exact;
            self.kept_extra += self.extra[t] * exact as f64;
            self.depth += 1;
            let (mask, ckey) = (self.mask, self.ckey);
            if self.memo_on {
                for g in slot.iter().flatten() {
                    self.mask |= 1 << g;
                }
                self.ckey += 1 << (COUNT_BITS * t);
            }
            self.cut(first + 1, cores, ram);
            (self.mask, self.ckey) = (mask, ckey);
            self.depth -= 1;
            self.kept -= exact;
            self.kept_extra -= self.extra[t] * exact as f64;
            self.counts[t] -= 1;
            return;
        }
        if slot[pos].is_some() {
            return self.fill(t, slot, pos + 1, first, cores, ram);
        }
        let key = self.keys[t].gis[pos];
        let class = self.key_class[t][pos];
        // Equal positions before this one (already filled) bound the GI index from below.
        let lo = (0..pos)
            .filter(|&b| self.keys[t].gis[b] == key)
            .filter_map(|b| slot[b])
            .max()
            .map_or(first + 1, |g| g.max(first) + 1);
        for g in lo..self.gis.len() {
            if self.used[g] || !self.fits(class, g) {
                continue;
            }
            self.used[g] = true;
            slot[pos] = Some(g);
            self.fill(t, slot, pos + 1, first, cores, ram);
            slot[pos] = None;
            self.used[g] = false;
        }
    }
}

impl Decode {
    /// The start vector of the placement `targets` (every running VM of the neighborhood and the
    /// admitted pending ones), or `None` when a host's content has no column.
    pub(crate) fn start_from(&self, inst: &Inst, targets: &BTreeMap<VmId, Placement>) -> Option<Vec<f64>> {
        let mut v = vec![0.0; self.ncols];
        let pos: HashMap<usize, usize> = inst.hosts.iter().enumerate().map(|(i, &h)| (h, i)).collect();
        let mut counts = vec![vec![0u16; self.ntypes]; inst.hosts.len()];
        let mut admitted = vec![0.0; self.ntypes];
        for (i, vm) in inst.vms.iter().enumerate() {
            let Some(t) = targets.get(&vm.id) else {
                if vm.old.is_some() {
                    return None;
                }
                continue;
            };
            counts[*pos.get(&t.host)?][self.type_of[i]] += 1;
            if vm.old.is_none() {
                admitted[self.type_of[i]] += 1.0;
            }
        }
        for (h, c) in counts.iter().enumerate() {
            if c.iter().all(|&n| n == 0) {
                continue;
            }
            let col = *self.by_counts[self.group_of[h]].get(c)?;
            v[col] += 1.0;
        }
        for (t, a) in admitted.iter().enumerate() {
            if *a > 0.0 {
                v[self.admit[t]?] = *a;
            }
        }
        Some(v)
    }

    pub(crate) fn targets(&self, inst: &Inst, colv: &[f64]) -> anyhow::Result<BTreeMap<VmId, Placement>> {
        // The content of each host position.
        let mut content: Vec<Option<usize>> = vec![None; inst.hosts.len()];
        for (members, gcols) in &self.groups {
            let mut next = members.iter();
            for &(col, c) in gcols {
                let n = colv[col].round().max(0.0) as usize;
                for _ in 0..n {
                    let h = next.next().ok_or_else(|| {
                        anyhow::anyhow!("solver gave a host group more contents than hosts")
                    })?;
                    content[*h] = Some(c);
                }
            }
        }
        let mut done = vec![false; inst.vms.len()];
        let mut out = BTreeMap::new();
        // Open slots per type: (host position, GIs in key order).
        let mut open: Vec<Vec<(usize, Vec<GiSlot>)>> = vec![Vec::new(); self.ntypes];
        for (h, c) in content.iter().enumerate() {
            let Some(c) = c else { continue };
            let mut slots: Vec<Option<&(usize, Vec<GiSlot>)>> =
                self.contents[*c].slots.iter().map(Some).collect();
            let own: Vec<usize> = (0..inst.vms.len())
                .filter(|&i| inst.vms[i].old.as_ref().is_some_and(|(oh, _)| *oh == h))
                .collect();
            // VMs that keep every GI (compared as sets: GIs of one profile are interchangeable
            // within a VM).
            for &i in &own {
                let (_, old) = inst.vms[i].old.as_ref().expect("own VMs run");
                let t = self.type_of[i];
                let mut want: Vec<(ProfileId, GiSlot)> = inst.vms[i]
                    .gis
                    .iter()
                    .map(|g| g.profile)
                    .zip(old.iter().copied())
                    .collect();
                want.sort_unstable();
                let found = slots.iter().position(|s| {
                    s.is_some_and(|(st, gis)| {
                        let mut have: Vec<(ProfileId, GiSlot)> = self.key_profiles[t]
                            .iter()
                            .copied()
                            .zip(gis.iter().copied())
                            .collect();
                        have.sort_unstable();
                        *st == t && have == want
                    })
                });
                if let Some(p) = found {
                    slots[p] = None;
                    done[i] = true;
                    out.insert(
                        inst.vms[i].id,
                        Placement {
                            host: inst.hosts[h],
                            gis: old.clone(),
                        },
                    );
                }
            }
            // Then the host's other VMs, in slots of their type.
            for &i in &own {
                if done[i] {
                    continue;
                }
                let t = self.type_of[i];
                if let Some(p) = slots.iter().position(|s| s.is_some_and(|(st, _)| *st == t)) {
                    let (_, gis) = slots[p].take().expect("found above");
                    done[i] = true;
                    out.insert(inst.vms[i].id, self.placement(inst, i, h, gis));
                }
            }
            for (t, gis) in slots.into_iter().flatten() {
                open[*t].push((h, gis.clone()));
            }
        }
        // The VMs that left their host, then the pending ones in the caller's order.
        for i in (0..inst.vms.len()).filter(|&i| inst.vms[i].old.is_some() && !done[i]) {
            let (h, gis) = open[self.type_of[i]]
                .pop()
                .ok_or_else(|| anyhow::anyhow!("solver left running VM {} unplaced", inst.vms[i].id))?;
            out.insert(inst.vms[i].id, self.placement(inst, i, h, &gis));
        }
        for i in (0..inst.vms.len()).filter(|&i| inst.vms[i].old.is_none()) {
            if let Some((h, gis)) = open[self.type_of[i]].pop() {
                out.insert(inst.vms[i].id, self.placement(inst, i, h, &gis));
            }
        }
        if let Some(t) = open.iter().position(|o| !o.is_empty()) {
            anyhow::bail!("solver opened more slots of type {t} than the neighborhood has VMs");
        }
        Ok(out)
    }

    /// VM `i` on host position `h` in a slot (GIs in key order).
    fn placement(&self, inst: &Inst, i: usize, h: usize, gis: &[GiSlot]) -> Placement {
        Placement {
            host: inst.hosts[h],
            gis: self.key_pos[i].iter().map(|&r| gis[r]).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::embedded;
    use crate::fleet::{Fleet, GiRequest, Host, Vm};
    use crate::policy::origamig::objective::Weights;
    use std::hash::BuildHasher;

    /// Two hosts with two A30-24GB each: three VMs running on the first, two pending.
    fn fleet() -> (Fleet, Vec<VmId>) {
        let c = embedded();
        let a30 = c.model_id("a30-24gb").unwrap();
        let mut f = Fleet::new(
            c,
            (0..2)
                .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a30, a30], 0))
                .collect(),
        );
        let vm = |p: &[&str], cores| Vm::job(0, GiRequest::named(c, "a30-24gb", p).unwrap(), cores, 32);
        for (p, cores) in [(&["1g.6gb"][..], 8), (&["2g.12gb"][..], 16), (&["1g.6gb"][..], 8)] {
            let v = vm(p, cores);
            let pl = f.ff_placement(&v).unwrap();
            f.add_placed(v, pl).unwrap();
        }
        let pending = vec![
            f.add_pending(vm(&["1g.6gb", "1g.6gb"], 8)).unwrap(),
            f.add_pending(vm(&["4g.24gb"], 40)).unwrap(),
        ];
        (f, pending)
    }

    fn clear_memo() {
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            m.0.clear();
            m.1 = 0;
        });
    }

    #[test]
    fn a_memo_hit_builds_the_same_model() {
        let (f, pending) = fleet();
        let inst = Inst::new(&f, &[0, 1], &pending, Weights::default()).unwrap();
        clear_memo();
        let fresh = build(&inst, false, true).expect("A30 hosts are within reach");
        assert!(MEMO.with(|m| m.borrow().0.len()) >= 2, "both hosts memoised");
        let n = MEMO.with(|m| m.borrow().0.len());
        let again = build(&inst, false, true).expect("memoised");
        assert_eq!(
            MEMO.with(|m| m.borrow().0.len()),
            n,
            "the second build hit the memo"
        );
        let (a, b) = (decode(fresh).contents, decode(again).contents);
        assert!(!a.is_empty());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    fn decode(b: Built) -> Decode {
        match b.decode {
            super::super::Decode::Hosts(d) => d,
            _ => panic!("a host-content model"),
        }
    }

    #[test]
    fn contents_are_arrangements_within_the_totals() {
        let (f, pending) = fleet();
        let inst = Inst::new(&f, &[0, 1], &pending, Weights::default()).unwrap();
        clear_memo();
        let d = decode(build(&inst, false, false).unwrap());
        let mut totals = vec![0u16; d.ntypes];
        for &t in &d.type_of {
            totals[t] += 1;
        }
        for c in &d.contents {
            let mut n = vec![0u16; d.ntypes];
            let mut gis = Vec::new();
            for (t, s) in &c.slots {
                n[*t] += 1;
                assert_eq!(s.len(), d.key_profiles[*t].len());
                gis.extend(s.iter().copied());
            }
            assert_eq!(n, c.counts, "the arrangement holds the content");
            assert!(
                n.iter().zip(&totals).all(|(a, b)| a <= b),
                "{n:?} within {totals:?}"
            );
            let len = gis.len();
            gis.sort_unstable();
            gis.dedup();
            assert_eq!(gis.len(), len, "no GI slot used twice");
        }
        // The host's own VMs staying where they are is a content of the first host, worth
        // more than the same counts rearranged elsewhere.
        let own = &d.by_counts[d.group_of[0]];
        let mut now = vec![0u16; d.ntypes];
        for (i, v) in inst.vms.iter().enumerate() {
            if v.old.is_some() {
                now[d.type_of[i]] += 1;
            }
        }
        assert!(own.contains_key(&now));
    }

    /// The search's size with a neighborhood's types and totals: configuration combinations,
    /// and the steps of the cut search capped just above `cap`.
    fn search_size(inst: &Inst, cap: u64) -> (usize, u64, Vec<Vec<&'static Config>>) {
        with_host_in(inst, |x| {
            let per_gpu = gpu_configs(inst, 0, x.keys, x.total);
            let layouts = per_gpu.iter().fold(1usize, |n, l| n.saturating_mul(l.len()));
            let (_, steps) = cut_search(x, &per_gpu, cap);
            (layouts, steps.min(cap + 1), per_gpu)
        })
    }

    /// Runs `f` on host 0 of `inst` as the host-content build sees it: the neighborhood's
    /// types and their totals, the host's own VMs, no extra reward.
    fn with_host_in<R>(inst: &Inst, f: impl FnOnce(&HostIn) -> R) -> R {
        with_host_in_extra(inst, |nt| vec![0.0; nt], f)
    }

    /// [`with_host_in`] with the surcharge per type that `extra` gives for the number of types.
    fn with_host_in_extra<R>(
        inst: &Inst,
        extra: impl FnOnce(usize) -> Vec<f64>,
        f: impl FnOnce(&HostIn) -> R,
    ) -> R {
        let (keys, type_of, _) = types(inst);
        let nt = keys.len();
        let mut total = vec![0u32; nt];
        for &t in &type_of {
            total[t] += 1;
        }
        let (own, exact) = own_vms(inst, 0, &type_of, nt);
        let extra = extra(nt);
        f(&HostIn {
            inst,
            h: 0,
            keys: &keys,
            total: &total,
            own: &own,
            exact: &exact,
            delta: inst.w.delta_running,
            extra: &extra,
        })
    }

    /// One host (two A100-40GB, one A100-40GB or two A30-24GB) with a few VMs placed first fit
    /// and pending VMs of a few random types (one or two GIs, random cores and RAM).
    fn random_neighborhood(seed: u64) -> (Fleet, Vec<VmId>) {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(seed);
        let c = embedded();
        let (name, n) = [("a100-40gb", 2), ("a100-40gb", 1), ("a30-24gb", 2)][rng.gen_range(0..3)];
        let model = c.model_id(name).unwrap();
        let mut f = Fleet::new(
            c,
            vec![Host::new(
                "h0",
                rng.gen_range(16..=96),
                rng.gen_range(64..=512),
                vec![model; n],
                0,
            )],
        );
        let profiles: Vec<usize> = (0..c.model(model).profiles.len())
            .filter(|&p| !c.model(model).profiles[p].media_ext)
            .collect();
        let kinds: Vec<(Vec<usize>, u32, u32)> = (0..rng.gen_range(1..=5))
            .map(|_| {
                let gis = if rng.gen_bool(0.3) { 2 } else { 1 };
                let small = |rng: &mut StdRng| {
                    profiles[rng
                        .gen_range(0..profiles.len())
                        .min(rng.gen_range(0..profiles.len()))]
                };
                (
                    (0..gis).map(|_| small(&mut rng)).collect(),
                    [2, 4, 8][rng.gen_range(0..3)],
                    [8, 16, 32][rng.gen_range(0..3)],
                )
            })
            .collect();
        let vm = |k: &(Vec<usize>, u32, u32)| {
            Vm::job(
                0,
                k.0.iter().map(|&profile| GiRequest { model, profile }).collect(),
                k.1,
                k.2,
            )
        };
        for _ in 0..rng.gen_range(0..=4) {
            let v = vm(&kinds[rng.gen_range(0..kinds.len())]);
            if let Some(pl) = f.ff_placement(&v) {
                f.add_placed(v, pl).unwrap();
            }
        }
        let pending = (0..rng.gen_range(1..=14))
            .map(|_| f.add_pending(vm(&kinds[rng.gen_range(0..kinds.len())])).unwrap())
            .collect();
        (f, pending)
    }

    /// The claim behind [`known_over`], by brute force: with more pending VMs (more types, or
    /// larger totals of the same types) a host's configuration lists only grow, and so do its
    /// configuration combinations and the steps of its cut search.
    #[test]
    fn the_search_only_grows_with_the_types_and_their_totals() {
        const CAP: u64 = 20_000;
        let (mut grew, mut passed) = (0, 0);
        for seed in 0..400 {
            let (f, pending) = random_neighborhood(seed);
            let cut = 1 + (seed as usize % pending.len().max(1));
            let small = Inst::new(&f, &[0], &pending[..cut.min(pending.len())], Weights::default()).unwrap();
            let big = Inst::new(&f, &[0], &pending, Weights::default()).unwrap();
            let (l0, s0, c0) = search_size(&small, CAP);
            let (l1, s1, c1) = search_size(&big, CAP);
            for (a, b) in c0.iter().zip(&c1) {
                for c in a {
                    assert!(
                        b.iter().any(|d| std::ptr::eq(*c, *d)),
                        "seed {seed}: a configuration was lost"
                    );
                }
            }
            assert!(l1 >= l0, "seed {seed}: combinations {l0} -> {l1}");
            assert!(s1 >= s0, "seed {seed}: steps {s0} -> {s1}");
            grew += usize::from(s1 > s0);
            passed += usize::from(s0 > CAP);
        }
        // The cases are not all trivial: the search grew in many, and some passed the cap.
        assert!(grew >= 30, "{grew} grew");
        assert!(passed >= 3, "{passed} passed the cap");
    }

    /// The memoised cut search returns what the full search returns: the same contents, each
    /// with the same value and the same arrangement (the first of the best), the same steps,
    /// and the same verdict at every steps limit; on random hosts with running VMs and
    /// surcharges on some types.
    #[test]
    fn the_memoised_search_finds_what_the_full_search_finds() {
        use rand::{Rng, SeedableRng};
        let mut pruned_somewhere = 0;
        let mut compared = 0;
        for seed in 0..160u64 {
            let (f, pending) = random_neighborhood(seed);
            let inst = Inst::new(&f, &[0], &pending, Weights::default()).unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
            let extra = |nt: usize| (0..nt).map(|_| [0.0, 15.0, 7.0][rng.gen_range(0..3)]).collect();
            let Some(pruned) = with_host_in_extra(&inst, extra, |x| {
                let per_gpu = gpu_configs(&inst, 0, x.keys, x.total);
                let (full, steps, none) = cut_search_with(x, &per_gpu, 2_000_000, false);
                assert_eq!(none, 0);
                if steps > 2_000_000 {
                    return None;
                }
                let (memo, msteps, pruned) = cut_search_with(x, &per_gpu, 2_000_000, true);
                assert_eq!(msteps, steps, "seed {seed}: steps");
                assert_eq!(memo.len(), full.len(), "seed {seed}: contents");
                for (counts, a) in &full {
                    let b = &memo[counts];
                    assert_eq!(a.value, b.value, "seed {seed}: value of {counts:?}");
                    assert_eq!(a.slots, b.slots, "seed {seed}: arrangement of {counts:?}");
                }
                for cap in [steps / 3, steps / 2, steps.saturating_sub(1), steps] {
                    let (_, s_full, _) = cut_search_with(x, &per_gpu, cap, false);
                    let (_, s_memo, _) = cut_search_with(x, &per_gpu, cap, true);
                    assert_eq!(s_full > cap, s_memo > cap, "seed {seed}: verdict at {cap}");
                }
                Some(pruned)
            }) else {
                continue;
            };
            compared += 1;
            pruned_somewhere += usize::from(pruned > 0);
        }
        assert!(compared >= 100, "{compared} hosts compared");
        assert!(
            pruned_somewhere >= 20,
            "states searched once only on {pruned_somewhere} hosts"
        );
    }

    /// A host past the steps limit with three one-GI types is answered from [`OVER`] when a
    /// fourth type joins, with what enumerating it returns; a host with fewer types is not.
    #[test]
    fn a_host_past_a_limit_stays_past_it_with_more_types() {
        let c = embedded();
        let a100 = c.model_id("a100-40gb").unwrap();
        let mut f = Fleet::new(c, vec![Host::new("h0", 256, 1024, vec![a100, a100], 0)]);
        let one = GiRequest::named(c, "a100-40gb", &["1g.5gb"]).unwrap();
        let mut pending = Vec::new();
        for cores in [2, 3, 4, 5] {
            for _ in 0..6 {
                pending.push(f.add_pending(Vm::job(0, one.clone(), cores, 8)).unwrap());
            }
        }
        let w = Weights::default();
        let three = Inst::new(&f, &[0], &pending[..18], w).unwrap();
        let four = Inst::new(&f, &[0], &pending, w).unwrap();
        let two = Inst::new(&f, &[0], &pending[..12], w).unwrap();
        let host_in = |inst: &Inst, run: &mut dyn FnMut(&HostIn, &EnumKey) -> Option<Over>| {
            with_host_in(inst, |x| {
                let key = EnumKey {
                    catalog: c as *const crate::catalog::Catalog as usize,
                    gpus: vec![(a100, vec![]), (a100, vec![])],
                    cores: 256,
                    ram: 1024,
                    keys: x.keys.to_vec(),
                    total: x.total.to_vec(),
                    own: x.own.to_vec(),
                    exact: Vec::new(),
                    weights: [0; 5],
                    budget: inst.budget,
                    by_gpu: false,
                };
                run(x, &key)
            })
        };
        clear_memo();
        OVER.with(|o| o.borrow_mut().clear());
        // Three types pass the steps limit, and the memo records the host.
        let first = host_in(&three, &mut |x, _| memo_enumerate(x).err());
        assert_eq!(first, Some(Over::Steps));
        assert_eq!(OVER.with(|o| o.borrow().len()), 1);
        // Four types: answered without searching, as enumerating answers.
        let known = host_in(&four, &mut |x, key| known_over(x, key));
        let searched = host_in(&four, &mut |x, _| enumerate(x).err());
        assert!(known.is_some());
        assert_eq!(known, searched);
        // Two types are not covered (fewer types than the recorded host).
        assert_eq!(host_in(&two, &mut |x, key| known_over(x, key)), None);
    }

    #[test]
    fn fx_hashes_equal_keys_alike_and_tells_short_vectors_apart() {
        let h = BuildHasherDefault::<Fx>::default();
        let one = |v: &Vec<u16>| h.hash_one(v);
        assert_eq!(one(&vec![1, 2, 3]), one(&vec![1, 2, 3]));
        let mut seen = HashSet::new();
        for a in 0..8u16 {
            for b in 0..8u16 {
                for c in 0..8u16 {
                    seen.insert(one(&vec![a, b, c]));
                }
            }
        }
        assert_eq!(seen.len(), 512);
        assert_ne!(one(&vec![0]), one(&vec![0, 0]));
    }
}
