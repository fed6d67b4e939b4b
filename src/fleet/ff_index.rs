//! A segment tree over the hosts that answers "the first host at or after index `i` that may
//! take this VM" in logarithmic time, so first fit does not scan every full host on each arrival.
//!
//! Each leaf keeps a host's free cores, free RAM and a bit per (compatibility class, profile)
//! that some GPU of the host could take alone; an inner node keeps the maxima and the union of
//! its children. The test is necessary, not sufficient (two GIs may compete for one GPU): the
//! caller confirms each candidate with the exact placement, and goes on after it when it fails,
//! so the host found is the same as the one of a scan from the first host.

use super::{Host, Vm};
use crate::catalog::Catalog;
use crate::mig;

/// One node of the tree: the best free cores and RAM below it, and the profiles some GPU below
/// it could take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Node {
    cores: u32,
    ram: u32,
    fits: u128,
}

impl Node {
    fn join(a: Node, b: Node) -> Node {
        Node {
            cores: a.cores.max(b.cores),
            ram: a.ram.max(b.ram),
            fits: a.fits | b.fits,
        }
    }

    fn admits(&self, need: &Need) -> bool {
        self.cores >= need.cores && self.ram >= need.ram && self.fits & need.fits == need.fits
    }
}

/// What a VM needs of one host, in the terms of a [`Node`].
struct Need {
    cores: u32,
    ram: u32,
    fits: u128,
}

/// The index; rebuilt by [`FfIndex::new`] and kept current by [`FfIndex::update`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FfIndex {
    /// Bit offset of each GPU model's profiles (models of one class share an offset), or `None`
    /// when the catalog has more (class, profile) pairs than bits: the profile test is then off.
    offsets: Option<Vec<u32>>,
    hosts: usize,
    /// Leaves from `size`; node `i` has children `2i` and `2i + 1`.
    size: usize,
    nodes: Vec<Node>,
}

impl FfIndex {
    pub fn new(catalog: &Catalog, hosts: &[Host]) -> Self {
        let mut offsets = Vec::with_capacity(catalog.models.len());
        let mut next = 0u32;
        for (m, model) in catalog.models.iter().enumerate() {
            let shared = catalog.models[..m].iter().position(|o| o.class == model.class);
            match shared {
                Some(o) => offsets.push(offsets[o]),
                None => {
                    offsets.push(next);
                    next += model.profiles.len() as u32;
                }
            }
        }
        let offsets = (next <= 128).then_some(offsets);
        let size = hosts.len().next_power_of_two().max(1);
        let mut index = FfIndex {
            offsets,
            hosts: hosts.len(),
            size,
            nodes: vec![Node::default(); 2 * size],
        };
        for (h, host) in hosts.iter().enumerate() {
            index.nodes[size + h] = index.leaf(catalog, host);
        }
        for i in (1..size).rev() {
            index.nodes[i] = Node::join(index.nodes[2 * i], index.nodes[2 * i + 1]);
        }
        index
    }

    /// The number of hosts the index was built for.
    pub fn len(&self) -> usize {
        self.hosts
    }

    fn leaf(&self, catalog: &Catalog, host: &Host) -> Node {
        let mut fits = 0u128;
        match &self.offsets {
            Some(offsets) => {
                for gpu in &host.gpus {
                    let model = catalog.model(gpu.model);
                    for p in 0..model.profiles.len() {
                        if mig::free_starts(model, &gpu.occ, p).next().is_some() {
                            fits |= 1u128 << (offsets[gpu.model] + p as u32);
                        }
                    }
                }
            }
            None => fits = u128::MAX,
        }
        Node {
            cores: host.free_cores(),
            ram: host.free_ram(),
            fits,
        }
    }

    /// Recomputes host `h`'s leaf and its ancestors after its VMs changed.
    pub fn update(&mut self, catalog: &Catalog, h: usize, host: &Host) {
        if h >= self.hosts {
            return;
        }
        let mut i = self.size + h;
        self.nodes[i] = self.leaf(catalog, host);
        while i > 1 {
            i /= 2;
            self.nodes[i] = Node::join(self.nodes[2 * i], self.nodes[2 * i + 1]);
        }
    }

    fn need(&self, vm: &Vm) -> Need {
        let fits = match &self.offsets {
            Some(offsets) => vm.gis.iter().fold(0u128, |acc, g| {
                acc | 1u128 << (offsets[g.model] + g.profile as u32)
            }),
            None => 0,
        };
        Need {
            cores: vm.cores,
            ram: vm.ram_gb,
            fits,
        }
    }

    /// The first host at index `from` or later that passes the necessary test for `vm`.
    pub(crate) fn first_candidate(&self, vm: &Vm, from: usize) -> Option<usize> {
        if from >= self.hosts {
            return None;
        }
        let need = self.need(vm);
        self.descend(1, 0, self.size, from, &need)
    }

    fn descend(&self, i: usize, lo: usize, hi: usize, from: usize, need: &Need) -> Option<usize> {
        if hi <= from || lo >= self.hosts || !self.nodes[i].admits(need) {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.descend(2 * i, lo, mid, from, need)
            .or_else(|| self.descend(2 * i + 1, mid, hi, from, need))
    }
}
