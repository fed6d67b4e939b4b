//! Scenarios and VM requests that several test files build the same way.

use migplan::catalog::Catalog;
use migplan::fleet::{GiRequest, Vm, VmId, VmKind};
use migplan::scenario::{self, Scenario};

/// Seed 003's node of four tenants.
pub const H100_FOUR_TENANTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/h100-four-tenants.toml");

/// Two H100 nodes for the re-layout previews: node-a holds five VMs on its two GPUs, node-b has a
/// 3g.40gb at slices 0-3 and slices 4-7 free. The text starts with a comment line, so line numbers
/// are those of the file.
pub const TWO_NODES: &str = include_str!("../fixtures/two-nodes.toml");

/// The paper's data center of §6.1: 96 hosts with two A100-40GB and 32 with two A30-24GB.
pub const PAPER_128: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-128.toml");

pub fn h100_four_tenants() -> Scenario {
    scenario::load(std::path::Path::new(H100_FOUR_TENANTS)).unwrap()
}

pub fn paper_128() -> Scenario {
    scenario::load(std::path::Path::new(PAPER_128)).unwrap()
}

/// One GI request of `model` per profile.
pub fn gi_requests(c: &Catalog, model: &str, profiles: &[&str]) -> Vec<GiRequest> {
    GiRequest::named(c, model, profiles).unwrap()
}

/// The compute slices of all the requests together.
pub fn total_compute(c: &Catalog, gis: &[GiRequest]) -> u32 {
    gis.iter()
        .map(|g| c.model(g.model).profiles[g.profile].compute as u32)
        .sum()
}

/// An unplaced tenant VM asking for H100 instances, with 4 cores and 16 GB of RAM.
pub fn h100_tenant_vm(c: &Catalog, id: VmId, tenant: Option<&str>, profiles: &[&str]) -> Vm {
    Vm {
        kind: VmKind::Tenant,
        tenant: tenant.map(String::from),
        ..Vm::job(id, gi_requests(c, "h100-80gb", profiles), 4, 16)
    }
}
