//! The host contents of [`super::enumerate`], GPU by GPU. It applies to neighborhoods whose VM
//! types have one or two GIs (the paper's workload) and, when a type has two GIs, to hosts of at
//! most two GPUs.
//!
//! A VM of one GI lies on one GPU; a VM of two GIs lies on one GPU (a *whole* VM there) or on two
//! (one *piece* on each, one per position of its type key). An arrangement of the host is then one
//! arrangement per GPU of wholes and pieces, with the pieces of the two GPUs paired into VMs: the
//! pieces of a type's first position on one GPU equal those of its second position on the other
//! (for a type whose two GIs are of one profile, the pieces on the two GPUs are equal in number).
//! The host's content is the sum of the wholes plus the paired VMs. The value of an arrangement
//! (`Search::found`) splits the same way:
//!
//!   value = -b - e × (active GPUs) + w_p × CF + delta × (kh + kept)
//!           + Σ_t extra_t × (kh_t + kept_t)
//!
//! (extra_t: what delta_i adds to delta for a running VM of type t, `policy.origamig.delta_per_gb`; all 0
//! by default). The sums below carry the extra terms beside the counts they weigh.
//!
//! - the active GPUs and the CF are sums over the GPUs, and so is `kept` (VMs whose slots are a
//!   running VM's exact GIs) for the running VMs on one GPU: only a whole VM on that GPU keeps
//!   one. A running VM across the two GPUs is kept when each GPU gives its exact GI there to a
//!   piece of its type: the tables carry one flag per such VM and GPU, and the pairing of the
//!   two GPUs adds the VMs flagged on both;
//! - kh = Σ_t min(c_t, own_t), the VMs of the host's own that can stay on it, depends on the
//!   host's counts c alone, not on how they split between GPUs; so does -b;
//! - cores, RAM and the neighborhood's totals per type bound the host's counts alone.
//!
//! So the best value of a content c is -b + delta × kh(c) + the best, over the splits of c into
//! GPUs' wholes and pieces, of Σ_k g_k(GPU k's counts), where g_k is GPU k's best
//! -e × active + w_p × CF + delta × kept over its configurations. Within one configuration the GIs
//! of a profile are interchangeable but for `kept`: with c_t wholes of type t and e_t running VMs
//! of type t whose exact GIs are all in the configuration, min(c_t, e_t) of them keep their GIs
//! (give each type its VMs' exact GIs first: the exact GIs of different VMs are different GIs, and
//! the profile counts are the same whichever GIs each VM takes) and no arrangement keeps more. So
//! each configuration needs only its compositions of counts, not every way of cutting it, and the
//! GPUs are combined by a max-plus sum of their (counts -> best) tables, pruned by cores, RAM and
//! totals. The contents and values are those of the GI-by-GI search (tested on random hosts
//! within its budget); among arrangements of equal value another one may be kept.

use super::{class_id, key_classes, Content, Exact, FxMap, HostIn, Over, TypeKey, MAX_STEPS};
use crate::fleet::GiSlot;
use crate::policy::origamig::bilp::configs::Config;

/// Most (partial content, GPU content) pairs combined for one host, at budget 1.
const MAX_PAIRS: u64 = 4_000_000;

/// Whether every VM type has one or two GIs.
pub(super) fn applies(keys: &[TypeKey]) -> bool {
    keys.iter().all(|k| (1..=2).contains(&k.gis.len()))
}

/// What takes a GPU's GIs: a whole VM of a type, or the piece of a two-GI type's VM at one
/// position of its key (the other piece on the other GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Whole(usize),
    Piece(usize, usize),
}

/// The best of one GPU's arrangements with given counts: the integer parts of its value and
/// the configuration that reaches it.
#[derive(Debug, Clone, Copy)]
struct Part {
    /// -e × active + w_p × CF + delta × kept + kept_extra, for comparing parts of equal counts.
    score: f64,
    active: u32,
    cf: u32,
    kept: u32,
    /// The surcharges (extra_t) of the VMs counted in `kept`.
    kept_extra: f64,
    /// The configuration's index in the GPU's list.
    config: usize,
}

/// A partial sum over the first GPUs: the integer parts of its value, its score, and the part
/// of each GPU (an index into that GPU's table).
#[derive(Debug, Clone)]
struct Acc {
    score: f64,
    active: u32,
    cf: u32,
    kept: u32,
    kept_extra: f64,
    parts: Vec<u32>,
}

/// [`super::enumerate`] for a host where [`applies`] holds, or which limit (scaled by
/// `inst.budget`) it exceeds: the per-GPU compositions (steps) or the pairs combined. A host of
/// more than two GPUs with a two-GI type in the neighborhood is refused as over the steps.
pub(super) fn enumerate(
    x: &HostIn,
    per_gpu: &[Vec<&'static Config>],
) -> Result<FxMap<Vec<u16>, Content>, Over> {
    let two = x.keys.iter().any(|k| k.gis.len() == 2);
    if two && per_gpu.len() > 2 {
        return Err(Over::Steps);
    }
    let by = ByGpu::new(*x, per_gpu)?;
    let tables = by.gpu_tables()?;
    let acc = by.max_plus_sum(&tables)?;
    by.contents(&tables, acc)
}

/// Per GPU: (counts per role, then one flag per spanning VM -> best part).
type Table = Vec<(Vec<u16>, Part)>;

/// What the steps of [`enumerate`] share for one host: its roles and the pairing of pieces,
/// and the host's running VMs across its two GPUs.
struct ByGpu<'a, 'f> {
    x: HostIn<'a, 'f>,
    per_gpu: &'a [Vec<&'static Config>],
    host: &'a crate::fleet::Host,
    /// Types, roles, spanning VMs.
    nt: usize,
    nr: usize,
    ns: usize,
    /// The wholes of every type (index t), then the pieces (two GPUs only).
    roles: Vec<Role>,
    /// The role of a piece's partner on the other GPU.
    partner: Vec<usize>,
    /// Per GPU, (spanning VM, the role of its GI there, the GI's profile and start).
    spans_on: Vec<Vec<(usize, usize, usize, u8)>>,
    /// The type of each spanning VM (flag index).
    span_type: Vec<usize>,
    cores_of: Vec<u32>,
    ram_of: Vec<u32>,
}

impl<'a, 'f> ByGpu<'a, 'f> {
    fn new(x: HostIn<'a, 'f>, per_gpu: &'a [Vec<&'static Config>]) -> Result<Self, Over> {
        let keys = x.keys;
        let nt = keys.len();
        let ngpus = per_gpu.len();
        let roles = roles_of(keys, ngpus);
        let nr = roles.len();
        // The role of a piece's partner on the other GPU.
        let partner: Vec<usize> = roles
            .iter()
            .map(|r| match *r {
                Role::Piece(t, a) => roles
                    .iter()
                    .position(|&o| o == Role::Piece(t, 1 - a))
                    .unwrap_or_else(|| roles.iter().position(|&o| o == Role::Piece(t, a)).unwrap_or(0)),
                Role::Whole(t) => t,
            })
            .collect();
        let (spans_on, span_type) = spanning_vms(keys, x.exact, &roles, ngpus)?;
        Ok(ByGpu {
            x,
            per_gpu,
            host: &x.inst.fleet.hosts[x.inst.hosts[x.h]],
            nt,
            nr,
            ns: span_type.len(),
            roles,
            partner,
            spans_on,
            span_type,
            cores_of: keys.iter().map(|k| k.cores).collect(),
            ram_of: keys.iter().map(|k| k.ram).collect(),
        })
    }

    /// Per GPU: (counts per role and spanning-VM flags -> best part), or over the steps limit.
    fn gpu_tables(&self) -> Result<Vec<Table>, Over> {
        let cat = self.x.inst.fleet.catalog;
        let key_class = key_classes(cat, self.x.keys);
        let max_steps = MAX_STEPS.saturating_mul(self.x.inst.budget as u64);
        let mut steps = 0u64;
        let mut tables: Vec<Table> = Vec::with_capacity(self.per_gpu.len());
        for (k, list) in self.per_gpu.iter().enumerate() {
            let fit = self.fitting_roles(class_id(cat, self.host.gpus[k].model), &key_class);
            let mut index: FxMap<Vec<u16>, usize> = FxMap::default();
            let mut table: Table = Vec::new();
            for (ci, c) in list.iter().enumerate() {
                let (found, n) = self.compositions(k, c, &fit, max_steps.saturating_sub(steps));
                steps += n;
                if steps > max_steps {
                    return Err(Over::Steps);
                }
                // An empty GPU is off: no cost, and its free starts earn nothing (Eq. 11).
                let active = u32::from(!c.gis.is_empty());
                let cf = if c.gis.is_empty() { 0 } else { c.cf };
                let base = -self.x.inst.w.gpu * active as f64 + self.x.inst.w.free_start * cf as f64;
                for (counts, kept, kept_extra) in self.flag_spans(k, c, found) {
                    let part = Part {
                        score: base + self.x.delta * kept as f64 + kept_extra,
                        active,
                        cf,
                        kept,
                        kept_extra,
                        config: ci,
                    };
                    match index.get(&counts) {
                        Some(&i) if table[i].1.score >= part.score => {}
                        Some(&i) => table[i].1 = part,
                        None => {
                            index.insert(counts.clone(), table.len());
                            table.push((counts, part));
                        }
                    }
                }
            }
            tables.push(table);
        }
        Ok(tables)
    }

    /// The roles that fit a GPU of class `class` and the profiles of the GIs each takes.
    fn fitting_roles(&self, class: usize, key_class: &[Vec<(usize, usize)>]) -> Vec<(usize, Vec<usize>)> {
        self.roles
            .iter()
            .enumerate()
            .filter_map(|(r, role)| {
                let need: Vec<(usize, usize)> = match *role {
                    Role::Whole(t) => key_class[t].clone(),
                    Role::Piece(t, a) => vec![key_class[t][a]],
                };
                need.iter()
                    .all(|&(c, _)| c == class)
                    .then(|| (r, need.iter().map(|&(_, p)| p).collect()))
            })
            .collect()
    }

    /// The compositions of configuration `c` of GPU `k` into the roles `fit` ([`Compose`]):
    /// (counts per role, VMs keeping their exact GIs, their surcharges), and the steps taken.
    fn compositions(
        &self,
        k: usize,
        c: &Config,
        fit: &[(usize, Vec<usize>)],
        max_steps: u64,
    ) -> (Vec<(Vec<u16>, u32, f64)>, u64) {
        let nt = self.nt;
        // GIs left per profile; per type, its running VMs on this GPU whose exact GIs are all
        // in the configuration.
        let np = c.gis.iter().map(|g| g.0 + 1).max().unwrap_or(0);
        let mut left = vec![0u32; np];
        for &(p, _) in &c.gis {
            left[p] += 1;
        }
        let mut exact_on = vec![0u32; nt];
        for (t, e) in self.x.exact {
            if e.iter().all(|&(p, gpu, z)| gpu == k && c.gis.contains(&(p, z))) {
                exact_on[*t] += 1;
            }
        }
        // Roles taking two GIs first, then one-GI roles by profile, the last of a profile
        // taking what is left of it.
        let mut order: Vec<(usize, Vec<usize>)> = fit
            .iter()
            .filter(|(_, need)| need.iter().all(|&p| p < np && left[p] > 0))
            .cloned()
            .collect();
        order.sort_by_key(|(r, need)| (need.len() == 1, need[0], *r));
        let last: Vec<bool> = (0..order.len())
            .map(|i| {
                order[i].1.len() == 1
                    && (i + 1 == order.len()
                        || order[i + 1].1.len() != 1
                        || order[i + 1].1[0] != order[i].1[0])
            })
            .collect();
        let mut comp = Compose {
            order: &order,
            last: &last,
            roles: &self.roles,
            total: self.x.total,
            cores_of: &self.cores_of,
            ram_of: &self.ram_of,
            cores: self.host.cores,
            ram: self.host.ram_gb,
            exact_on: &exact_on,
            extra: self.x.extra,
            counts: vec![0; self.nr],
            per_type: vec![0; nt],
            left,
            found: Vec::new(),
            steps: 0,
            max_steps,
        };
        comp.walk(0, 0, 0, 0, 0.0);
        (comp.found, comp.steps)
    }

    /// The compositions `found` of configuration `c` of GPU `k` with their spanning-VM flags:
    /// per composition, the spanning VMs whose GI here its pieces take (as many as they can: a
    /// flag set never lowers a value).
    fn flag_spans(
        &self,
        k: usize,
        c: &Config,
        found: Vec<(Vec<u16>, u32, f64)>,
    ) -> Vec<(Vec<u16>, u32, f64)> {
        let (nr, ns) = (self.nr, self.ns);
        let cands: Vec<(usize, usize)> = self.spans_on[k]
            .iter()
            .filter(|&&(_, _, p, z)| c.gis.contains(&(p, z)))
            .map(|&(v, r, _, _)| (v, r))
            .collect();
        let mut flagged = Vec::with_capacity(found.len());
        for (counts, kept, kept_extra) in found {
            if cands.is_empty() {
                let mut key = counts;
                key.resize(nr + ns, 0);
                flagged.push((key, kept, kept_extra));
                continue;
            }
            for mask in 0u32..1 << cands.len() {
                let ok = cands.iter().all(|&(_, r)| {
                    let m = cands.iter().filter(|c| c.1 == r).count() as u32;
                    let on = cands
                        .iter()
                        .enumerate()
                        .filter(|&(i, c)| c.1 == r && mask >> i & 1 == 1)
                        .count() as u32;
                    on == m.min(counts[r] as u32)
                });
                if ok {
                    let mut key = counts.clone();
                    key.resize(nr + ns, 0);
                    for (i, &(v, _)) in cands.iter().enumerate() {
                        key[nr + v] = (mask >> i & 1) as u16;
                    }
                    flagged.push((key, kept, kept_extra));
                }
            }
        }
        flagged
    }

    /// The max-plus sum of the GPUs' tables, one GPU at a time, within cores, RAM and totals;
    /// on the second of two GPUs, only parts whose pieces pair with the first's.
    fn max_plus_sum(&self, tables: &[Table]) -> Result<Vec<(Vec<u16>, Acc)>, Over> {
        let mut acc: Vec<(Vec<u16>, Acc)> = vec![(
            vec![0; self.nr + self.ns],
            Acc {
                score: 0.0,
                active: 0,
                cf: 0,
                kept: 0,
                kept_extra: 0.0,
                parts: Vec::new(),
            },
        )];
        let max_pairs = MAX_PAIRS.saturating_mul(self.x.inst.budget as u64);
        let mut pairs = 0u64;
        let mut sum = vec![0u16; self.nr + self.ns];
        for (k, table) in tables.iter().enumerate() {
            let last_gpu = k + 1 == tables.len();
            acc = self.add_gpu(k, table, last_gpu, &acc, (&mut pairs, max_pairs), &mut sum)?;
        }
        Ok(acc)
    }

    /// The partial sums `acc` over the GPUs before `k` plus GPU `k`'s table, the best per sum;
    /// counts the pairs combined in `pairs` and stops past `max_pairs`.
    fn add_gpu(
        &self,
        k: usize,
        table: &Table,
        last_gpu: bool,
        acc: &[(Vec<u16>, Acc)],
        (pairs, max_pairs): (&mut u64, u64),
        sum: &mut [u16],
    ) -> Result<Vec<(Vec<u16>, Acc)>, Over> {
        let (nt, nr) = (self.nt, self.nr);
        // The table's parts by their pieces.
        let mut by_pieces: FxMap<&[u16], Vec<usize>> = FxMap::default();
        for (i, (cb, _)) in table.iter().enumerate() {
            by_pieces.entry(&cb[nt..nr]).or_default().push(i);
        }
        let mut want = vec![0u16; nr - nt];
        let every: Vec<usize> = (0..table.len()).collect();
        let mut index: FxMap<Vec<u16>, usize> = FxMap::default();
        let mut next: Vec<(Vec<u16>, Acc)> = Vec::new();
        for (ca, a) in acc {
            // The pieces that pair with the first GPU's.
            for r in nt..nr {
                want[r - nt] = ca[self.partner[r]];
            }
            let cands: &[usize] = if k == 0 {
                &every
            } else {
                match by_pieces.get(want.as_slice()) {
                    Some(v) => v,
                    None => continue,
                }
            };
            *pairs = pairs.saturating_add(cands.len() as u64);
            if *pairs > max_pairs {
                return Err(Over::Steps);
            }
            for &pi in cands {
                let (cb, b) = &table[pi];
                let Some((both, both_extra)) = self.paired_sum(k, last_gpu, ca, cb, sum) else {
                    continue;
                };
                let score = a.score + b.score + self.x.delta * both as f64 + both_extra;
                let better = match index.get(&*sum) {
                    Some(&i) if next[i].1.score >= score => continue,
                    Some(&i) => Some(i),
                    None => None,
                };
                let mut parts = a.parts.clone();
                parts.push(pi as u32);
                let v = Acc {
                    score,
                    active: a.active + b.active,
                    cf: a.cf + b.cf,
                    kept: a.kept + b.kept + both,
                    kept_extra: a.kept_extra + b.kept_extra + both_extra,
                    parts,
                };
                match better {
                    Some(i) => next[i].1 = v,
                    None => {
                        index.insert(sum.to_vec(), next.len());
                        next.push((sum.to_vec(), v));
                    }
                }
            }
        }
        Ok(next)
    }

    /// Writes to `sum` the counts of partial sum `ca` plus GPU `k`'s part `cb` (the pieces of
    /// the first GPU paired into VMs on the second); `None` past a type's total, or past the
    /// host's cores or RAM where they are final. Returns the spanning VMs that both GPUs give
    /// their exact GIs (they keep them) and their surcharges.
    fn paired_sum(
        &self,
        k: usize,
        last_gpu: bool,
        ca: &[u16],
        cb: &[u16],
        sum: &mut [u16],
    ) -> Option<(u32, f64)> {
        let (nt, nr, ns) = (self.nt, self.nr, self.ns);
        let (mut cores, mut ram) = (0u32, 0u32);
        for t in 0..nt {
            // Wholes of both GPUs, and the VMs the pieces make (counted on the first).
            let mut n = ca[t] + cb[t];
            for (r, role) in self.roles.iter().enumerate().take(nr).skip(nt) {
                if let Role::Piece(pt, _) = *role {
                    if pt == t && k == 1 {
                        n += ca[r];
                    }
                }
            }
            if n as u32 > self.x.total[t] {
                return None;
            }
            sum[t] = n;
            cores += n as u32 * self.cores_of[t];
            ram += n as u32 * self.ram_of[t];
        }
        for r in nt..nr + ns {
            sum[r] = if k == 0 { cb[r] } else { 0 };
        }
        // Spanning VMs whose GIs both GPUs give to their pieces keep them.
        let both = if k == 0 {
            (0, 0.0)
        } else {
            (nr..nr + ns)
                .filter(|&i| ca[i] == 1 && cb[i] == 1)
                .fold((0u32, 0.0), |(n, x), i| {
                    (n + 1, x + self.x.extra[self.span_type[i - nr]])
                })
        };
        if (last_gpu || nr == nt) && (cores > self.host.cores || ram > self.host.ram_gb) {
            return None;
        }
        Some(both)
    }

    /// Contents: every non-empty sum with its pieces paired, valued as `Search::found` values an
    /// arrangement.
    fn contents(
        &self,
        tables: &[Table],
        acc: Vec<(Vec<u16>, Acc)>,
    ) -> Result<FxMap<Vec<u16>, Content>, Over> {
        let HostIn {
            inst,
            keys,
            own,
            exact,
            delta,
            extra,
            ..
        } = self.x;
        let w = &inst.w;
        let nt = self.nt;
        let mut out: FxMap<Vec<u16>, Content> = FxMap::default();
        for (mut counts, a) in acc {
            if counts[nt..].iter().any(|&n| n > 0) {
                // One GPU with a two-GI type: no pieces can be paired.
                continue;
            }
            counts.truncate(nt);
            if counts.iter().all(|&n| n == 0) {
                continue;
            }
            let kh: u32 = counts.iter().zip(own).map(|(&c, &o)| c.min(o) as u32).sum();
            let base = -w.host_of(self.host, inst.fleet.catalog) - w.gpu * a.active as f64
                + w.free_start * a.cf as f64;
            let value = base
                + delta * (kh as f64 + a.kept as f64)
                + super::stay_surcharges(extra, &counts, own, a.kept_extra);
            let mut slots = Vec::new();
            let mut pieces: Vec<Vec<Piece>> = Vec::new();
            for (k, &pi) in a.parts.iter().enumerate() {
                let (gc, part) = &tables[k][pi as usize];
                pieces.push(arrange(
                    k,
                    self.per_gpu[k][part.config],
                    gc,
                    &self.roles,
                    keys,
                    exact,
                    &self.spans_on[k],
                    &mut slots,
                ));
            }
            if let [first, second] = &mut pieces[..] {
                pair_pieces(keys, first, second, &mut slots)?;
            }
            out.insert(counts.clone(), Content { counts, value, slots });
        }
        Ok(out)
    }
}

/// The roles of a host of `ngpus` GPUs: the wholes of every type (index t), then the pieces
/// (two GPUs only): one per position of a two-GI key, one only when both positions are of one
/// profile.
fn roles_of(keys: &[TypeKey], ngpus: usize) -> Vec<Role> {
    let mut roles: Vec<Role> = (0..keys.len()).map(Role::Whole).collect();
    if ngpus == 2 {
        for (t, k) in keys.iter().enumerate() {
            if k.gis.len() == 2 {
                roles.push(Role::Piece(t, 0));
                if k.gis[0] != k.gis[1] {
                    roles.push(Role::Piece(t, 1));
                }
            }
        }
    }
    roles
}

/// The host's running VMs across its two GPUs: per GPU, (VM, the role of its GI there, the GI's
/// profile and start), and the type of each such VM. Such a VM keeps its GIs when both GPUs give
/// its GI to a piece of its type, the pieces paired together: one flag per VM and GPU in the
/// tables' keys. Over the steps limit when such a VM cannot be described that way.
#[allow(clippy::type_complexity)]
fn spanning_vms(
    keys: &[TypeKey],
    exact: &Exact,
    roles: &[Role],
    ngpus: usize,
) -> Result<(Vec<Vec<(usize, usize, usize, u8)>>, Vec<usize>), Over> {
    let mut spans_on: Vec<Vec<(usize, usize, usize, u8)>> = vec![Vec::new(); ngpus];
    let mut span_type: Vec<usize> = Vec::new();
    let mut spanning: Vec<&super::ExactGis> = exact
        .iter()
        .filter(|(_, e)| e.iter().any(|g| g.1 != e[0].1))
        .collect();
    spanning.sort_unstable();
    for (ns, (t, e)) in spanning.into_iter().enumerate() {
        if ngpus != 2 || e.len() != 2 {
            return Err(Over::Steps);
        }
        for &(p, gpu, z) in e {
            let a = if keys[*t].gis[0] == keys[*t].gis[1] {
                0
            } else {
                usize::from(keys[*t].gis[1].1 == p)
            };
            let r = roles
                .iter()
                .position(|&o| o == Role::Piece(*t, a))
                .ok_or(Over::Steps)?;
            spans_on[gpu].push((ns, r, p, z));
        }
        span_type.push(*t);
    }
    Ok((spans_on, span_type))
}

/// Pairs the pieces: each of the first GPU's with one of the second's at the other position of
/// its type's key; a spanning VM's two pieces at its exact GIs together. The VMs go to `slots`.
fn pair_pieces(
    keys: &[TypeKey],
    first: &mut [Piece],
    second: &mut Vec<Piece>,
    slots: &mut Vec<super::Slot>,
) -> Result<(), Over> {
    first.sort_by_key(|p| p.3.is_none());
    for &(t, a0, s0, v) in first.iter() {
        let want = if keys[t].gis[0] == keys[t].gis[1] {
            a0
        } else {
            1 - a0
        };
        let j = second
            .iter()
            .position(|&(t2, a2, _, v2)| t2 == t && a2 == want && v.is_some() && v2 == v)
            .or_else(|| {
                second
                    .iter()
                    .position(|&(t2, a2, _, v2)| t2 == t && a2 == want && v2.is_none())
            })
            .or_else(|| second.iter().position(|&(t2, a2, _, _)| t2 == t && a2 == want));
        let Some(j) = j else {
            return Err(Over::NoColumn);
        };
        let (_, _, s1, _) = second.swap_remove(j);
        let s = if a0 == 0 { vec![s0, s1] } else { vec![s1, s0] };
        slots.push((t, s));
    }
    Ok(())
}

/// The slots of GPU `k` in configuration `c` holding `counts` per role: the wholes of each type
/// take the exact GIs of its running VMs there first, then every role takes the configuration's
/// other GIs of its profiles by start. Wholes go to `slots`; the pieces are returned as (type,
/// position, GI slot).
#[allow(clippy::too_many_arguments)]
fn arrange(
    k: usize,
    c: &Config,
    counts: &[u16],
    roles: &[Role],
    keys: &[TypeKey],
    exact: &Exact,
    spans: &[(usize, usize, usize, u8)],
    slots: &mut Vec<super::Slot>,
) -> Vec<Piece> {
    let mut left: Vec<u16> = counts.to_vec();
    let mut taken = vec![false; c.gis.len()];
    let at = |z: u8| GiSlot { gpu: k, start: z };
    let mut exact_list: Vec<&super::ExactGis> =
        exact.iter().filter(|(_, e)| e.iter().all(|g| g.1 == k)).collect();
    exact_list.sort_unstable();
    for (t, e) in exact_list {
        if left[*t] == 0 {
            continue;
        }
        let pos: Option<Vec<usize>> = e
            .iter()
            .map(|&(p, _, z)| c.gis.iter().position(|&gi| gi == (p, z)).filter(|&g| !taken[g]))
            .collect();
        let Some(pos) = pos else { continue };
        for &g in &pos {
            taken[g] = true;
        }
        left[*t] -= 1;
        let gis: Vec<(usize, u8)> = pos.iter().map(|&g| c.gis[g]).collect();
        slots.push((*t, ordered(&keys[*t], &gis, k)));
    }
    let take = |p: usize, taken: &mut Vec<bool>| -> Option<GiSlot> {
        let g = (0..c.gis.len()).find(|&g| !taken[g] && c.gis[g].0 == p)?;
        taken[g] = true;
        Some(at(c.gis[g].1))
    };
    let mut pieces = Vec::new();
    // The pieces of the spanning VMs flagged in `counts` take their exact GIs.
    for &(v, r, p, z) in spans {
        if counts[roles.len() + v] == 1 && left[r] > 0 {
            if let (Role::Piece(t, a), Some(g)) = (roles[r], c.gis.iter().position(|&gi| gi == (p, z))) {
                if !taken[g] {
                    taken[g] = true;
                    left[r] -= 1;
                    pieces.push((t, a, at(z), Some(v)));
                }
            }
        }
    }
    for (r, role) in roles.iter().enumerate() {
        for _ in 0..left[r] {
            match *role {
                Role::Whole(t) => {
                    let s: Option<Vec<GiSlot>> =
                        keys[t].gis.iter().map(|&(_, p)| take(p, &mut taken)).collect();
                    if let Some(s) = s {
                        slots.push((t, s));
                    }
                }
                Role::Piece(t, a) => {
                    if let Some(s) = take(keys[t].gis[a].1, &mut taken) {
                        pieces.push((t, a, s, None));
                    }
                }
            }
        }
    }
    pieces
}

/// A piece of a VM across two GPUs: type, position in its key, GI slot, and the spanning running
/// VM (index among them) whose exact GI it is.
type Piece = (usize, usize, GiSlot, Option<usize>);

/// A running VM's exact GIs `gis` (profile, start) on GPU `k` as a slot of its type: one GI per
/// position of the key, in key order.
fn ordered(key: &TypeKey, gis: &[(usize, u8)], k: usize) -> Vec<GiSlot> {
    let mut rest: Vec<(usize, u8)> = gis.to_vec();
    key.gis
        .iter()
        .map(|&(_, p)| {
            let i = rest.iter().position(|g| g.0 == p).unwrap_or(0);
            let (_, z) = rest.remove(i);
            GiSlot { gpu: k, start: z }
        })
        .collect()
}

/// The compositions of one configuration's GIs into roles, within totals, cores and RAM.
struct Compose<'a> {
    /// The roles that can take GIs here and the profiles each takes, in the order walked.
    order: &'a [(usize, Vec<usize>)],
    /// Whether a role is the last one-GI role of its profile (it takes what is left).
    last: &'a [bool],
    roles: &'a [Role],
    total: &'a [u32],
    cores_of: &'a [u32],
    ram_of: &'a [u32],
    cores: u32,
    ram: u32,
    /// Per type: its running VMs on this GPU whose exact GIs are all in the configuration.
    exact_on: &'a [u32],
    /// The surcharge of delta_i per type.
    extra: &'a [f64],
    counts: Vec<u16>,
    /// VMs per type on this GPU (wholes and pieces).
    per_type: Vec<u32>,
    /// GIs of each profile not yet taken.
    left: Vec<u32>,
    /// (counts per role, VMs keeping their exact GIs, their surcharges) of every composition.
    found: Vec<(Vec<u16>, u32, f64)>,
    steps: u64,
    max_steps: u64,
}

impl Compose<'_> {
    /// The role at `i` of `order`; `cores`, `ram`, `kept` and its surcharges so far.
    fn walk(&mut self, i: usize, cores: u32, ram: u32, kept: u32, kept_extra: f64) {
        self.steps += 1;
        if self.steps > self.max_steps {
            return;
        }
        if i == self.order.len() {
            if self.left.iter().all(|&n| n == 0) {
                self.found.push((self.counts.clone(), kept, kept_extra));
            }
            return;
        }
        let (r, ref need) = self.order[i];
        let (t, whole) = match self.roles[r] {
            Role::Whole(t) => (t, true),
            Role::Piece(t, _) => (t, false),
        };
        let avail = need
            .iter()
            .map(|&p| self.left[p] / need.iter().filter(|&&q| q == p).count() as u32)
            .min()
            .unwrap_or(0);
        let room = self.total[t].saturating_sub(self.per_type[t]);
        let hi = avail.min(room);
        let lo = if self.last[i] { avail } else { 0 };
        let (kc, kr) = if whole {
            (self.cores_of[t], self.ram_of[t])
        } else {
            (0, 0)
        };
        for c in lo..=hi {
            let (nc, nr) = (cores + c * kc, ram + c * kr);
            if nc > self.cores || nr > self.ram {
                break;
            }
            for &p in need {
                self.left[p] -= c;
            }
            self.counts[r] += c as u16;
            self.per_type[t] += c;
            let (k, x) = if whole {
                let n = c.min(self.exact_on[t]);
                (kept + n, kept_extra + self.extra[t] * n as f64)
            } else {
                (kept, kept_extra)
            };
            self.walk(i + 1, nc, nr, k, x);
            self.per_type[t] -= c;
            self.counts[r] -= c as u16;
            for &p in need {
                self.left[p] += c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{configs, cut_arrangements, gpu_configs, own_vms, types};
    use super::*;
    use crate::catalog::embedded;
    use crate::fleet::{Fleet, GiRequest, Host, Placement, Vm, VmId};
    use crate::policy::origamig::bilp::Inst;
    use crate::policy::origamig::objective::Weights;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// A VM type of the tests: profiles of its GIs, cores, RAM.
    type Kind = (Vec<usize>, u32, u32);

    /// One host (two A30-24GB, two A100-40GB, one A100-40GB or three A30-24GB; random cores and
    /// RAM) with random VMs of a few random types (one GI, or two when `two`) on random GPUs and
    /// starts, and a few pending VMs of the same types.
    fn random_host(seed: u64, two: bool) -> (Fleet, Vec<VmId>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let c = embedded();
        let a30 = c.model_id("a30-24gb").unwrap();
        let a100 = c.model_id("a100-40gb").unwrap();
        let gpus = match rng.gen_range(0..4) {
            0 => vec![a30, a30],
            1 => vec![a100, a100],
            2 => vec![a100],
            _ => vec![a30, a30, a30],
        };
        let model = gpus[0];
        let cores: u32 = rng.gen_range(16..=64);
        let ram: u32 = rng.gen_range(64..=256);
        let mut f = Fleet::new(c, vec![Host::new("h0", cores, ram, gpus.clone(), 0)]);
        let profiles: Vec<usize> = (0..c.model(model).profiles.len())
            .filter(|&p| !c.model(model).profiles[p].media_ext)
            .collect();
        // Small GIs are likelier: they make the most arrangements.
        let small = |rng: &mut StdRng| {
            profiles[rng
                .gen_range(0..profiles.len())
                .min(rng.gen_range(0..profiles.len()))]
        };
        let kinds: Vec<Kind> = (0..rng.gen_range(1..=4))
            .map(|_| {
                let n = if two && rng.gen_bool(0.5) { 2 } else { 1 };
                let p = (0..n).map(|_| small(&mut rng)).collect();
                (
                    p,
                    [2, 4, 8][rng.gen_range(0..3)],
                    [8, 16, 32][rng.gen_range(0..3)],
                )
            })
            .collect();
        let vm = |k: &Kind| {
            Vm::job(
                0,
                k.0.iter().map(|&profile| GiRequest { model, profile }).collect(),
                k.1,
                k.2,
            )
        };
        for _ in 0..rng.gen_range(0..=10) {
            let k = &kinds[rng.gen_range(0..kinds.len())];
            // Mostly on one GPU: a VM across two GPUs leaves the host to the cut search.
            let gpu = rng.gen_range(0..gpus.len());
            let gis =
                k.0.iter()
                    .map(|&p| {
                        let starts = &c.model(model).profiles[p].starts;
                        GiSlot {
                            gpu: if rng.gen_bool(0.9) {
                                gpu
                            } else {
                                rng.gen_range(0..gpus.len())
                            },
                            start: starts[rng.gen_range(0..starts.len())],
                        }
                    })
                    .collect();
            // A start that overlaps a GI or exceeds the host's cores or RAM is refused: skip it.
            let _ = f.add_placed(vm(k), Placement { host: 0, gis });
        }
        let pending = (0..rng.gen_range(0..=4))
            .map(|_| f.add_pending(vm(&kinds[rng.gen_range(0..kinds.len())])).unwrap())
            .collect();
        (f, pending)
    }

    #[test]
    fn gpu_by_gpu_gives_the_contents_and_values_of_the_cut_search() {
        let (mut compared, mut several_gpus_with_vms, mut two_gis, mut spanning) = (0, 0, 0, 0);
        let mut with_surcharges = 0;
        for seed in 0..300 {
            let (f, pending) = random_host(seed, seed % 2 == 1);
            // Every third host with a migration penalty per GB (surcharges per type).
            let w = Weights {
                delta_per_gb: if seed % 3 == 0 { 0.25 } else { 0.0 },
                ..Weights::default()
            };
            let inst = Inst::new(&f, &[0], &pending, w).unwrap();
            let (keys, type_of, _) = types(&inst);
            let nt = keys.len();
            let mut total = vec![0u32; nt];
            for &t in &type_of {
                total[t] += 1;
            }
            let (own, exact) = own_vms(&inst, 0, &type_of, nt);
            let has_two = keys.iter().any(|k| k.gis.len() == 2);
            let host = &f.hosts[0];
            if !applies(&keys) || (has_two && host.gpus.len() > 2) {
                continue;
            }
            let delta = inst.w.delta_running;
            let mut extra = vec![0.0; nt];
            for (i, vm) in inst.vms.iter().enumerate() {
                extra[type_of[i]] = vm.surcharge;
            }
            with_surcharges += usize::from(extra.iter().any(|&x| x > 0.0) && !host.vms.is_empty());
            let per_gpu = gpu_configs(&inst, 0, &keys, &total);
            let x = HostIn {
                inst: &inst,
                h: 0,
                keys: &keys,
                total: &total,
                own: &own,
                exact: &exact,
                delta,
                extra: &extra,
            };
            let Ok(cut) = cut_arrangements(&x, &per_gpu) else {
                continue;
            };
            let by = enumerate(&x, &per_gpu).expect("within the budget of the cut search");
            let mut a: Vec<_> = cut.iter().map(|(k, c)| (k.clone(), c.value.to_bits())).collect();
            let mut b: Vec<_> = by.iter().map(|(k, c)| (k.clone(), c.value.to_bits())).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "seed {seed}: same contents, same values");
            compared += 1;
            if host.gpus.len() > 1 && !host.vms.is_empty() {
                several_gpus_with_vms += 1;
                two_gis += usize::from(has_two);
                spanning += usize::from(exact.iter().any(|(_, e)| e.iter().any(|g| g.1 != e[0].1)));
            }
            // Each kept arrangement holds its content on distinct GIs, and is worth its value:
            // -b - e × active + w_p × CF of the GPUs' configurations + delta × (kh + kept)
            // + the surcharges of the same VMs.
            let w = &inst.w;
            for (counts, c) in &by {
                let mut n = vec![0u16; nt];
                let mut per: Vec<Vec<(usize, u8)>> = vec![Vec::new(); host.gpus.len()];
                let mut kept = 0u32;
                let mut kept_extra = 0.0;
                for (t, s) in &c.slots {
                    n[*t] += 1;
                    assert_eq!(s.len(), keys[*t].gis.len());
                    let mut e: Vec<_> = keys[*t]
                        .gis
                        .iter()
                        .zip(s)
                        .map(|(g, s)| (g.1, s.gpu, s.start))
                        .collect();
                    for &(p, gpu, z) in &e {
                        per[gpu].push((p, z));
                    }
                    e.sort_unstable();
                    let is = exact.contains(&(*t, e));
                    kept += u32::from(is);
                    kept_extra += if is { extra[*t] } else { 0.0 };
                }
                assert_eq!(&n, counts);
                let (mut active, mut cf) = (0u32, 0u32);
                for (k, gis) in per.iter_mut().enumerate() {
                    if gis.is_empty() {
                        continue;
                    }
                    gis.sort_by_key(|g| g.1);
                    let config = configs::of_model(inst.fleet.catalog.model(host.gpus[k].model))
                        .iter()
                        .find(|c| c.gis == *gis)
                        .expect("the GPU's GIs are a configuration");
                    active += 1;
                    cf += config.cf;
                }
                let kh: u32 = counts.iter().zip(&own).map(|(&c, &o)| c.min(o) as u32).sum();
                let kh_extra: f64 = (0..nt).map(|t| extra[t] * counts[t].min(own[t]) as f64).sum();
                let value = -w.host - w.gpu * active as f64
                    + w.free_start * cf as f64
                    + delta * (kh as f64 + kept as f64)
                    + kh_extra
                    + kept_extra;
                assert_eq!(value, c.value, "seed {seed}: {counts:?}");
            }
        }
        assert!(compared >= 150, "{compared} hosts compared");
        assert!(
            with_surcharges >= 30,
            "{with_surcharges} hosts with VMs and surcharges"
        );
        assert!(
            several_gpus_with_vms >= 80,
            "{several_gpus_with_vms} hosts of several GPUs with VMs"
        );
        assert!(two_gis >= 30, "{two_gis} of them with two-GI types");
        assert!(
            spanning >= 10,
            "{spanning} of them with a running VM across two GPUs"
        );
    }
}
