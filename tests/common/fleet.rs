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

pub fn h100_four_tenants() -> Scenario {
    scenario::load(std::path::Path::new(H100_FOUR_TENANTS)).unwrap()
}

/// One GI request of `model` per profile.
pub fn gi_requests(c: &Catalog, model: &str, profiles: &[&str]) -> Vec<GiRequest> {
    let m = c.model_id(model).unwrap();
    profiles
        .iter()
        .map(|p| GiRequest {
            model: m,
            profile: c.model(m).profile(p).unwrap(),
        })
        .collect()
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
        id,
        gis: gi_requests(c, "h100-80gb", profiles),
        cores: 4,
        ram_gb: 16,
        kind: VmKind::Tenant,
        arrival: 0.0,
        lifetime: None,
        admitted_at: None,
        tenant: tenant.map(String::from),
        placement: None,
    }
}
