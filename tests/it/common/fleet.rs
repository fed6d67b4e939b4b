//! Scenarios and VM requests that several test files build the same way.

use migplan::catalog::embedded;
use migplan::catalog::Catalog;
use migplan::fleet::{Fleet, GiRequest, GiSlot, Host, Placement, Vm, VmId, VmKind};
use migplan::scenario::{self, Scenario};

/// One H100 node of four tenants (a training team, two inference services and a development
/// pool) with quotas per profile.
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

/// The text of `scenarios/paper-32.toml` (32 hosts of the paper's mix) with `line` written at
/// the top of its `[policy]` table.
pub fn paper_32_with_policy(line: &str) -> String {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-32.toml"))
        .expect("paper-32.toml");
    assert!(src.contains("\n[policy]\n"), "paper-32.toml has a [policy] table");
    src.replace("\n[policy]\n", &format!("\n[policy]\n{line}\n"))
}

pub fn paper_128() -> Scenario {
    scenario::load(std::path::Path::new(PAPER_128)).unwrap()
}

/// A fleet of the embedded catalog, empty: one host per (name, cores, GB of RAM, GPU models).
pub fn fleet_of(hosts: &[(&str, u32, u32, &[&str])]) -> Fleet {
    let c = embedded();
    let hosts = hosts
        .iter()
        .map(|&(name, cores, ram_gb, models)| {
            let gpus = models
                .iter()
                .map(|m| c.model_id(m).unwrap_or_else(|| panic!("no GPU model `{m}`")))
                .collect();
            Host::new(name, cores, ram_gb, gpus, 0)
        })
        .collect();
    Fleet::new(c, hosts)
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

/// An unplaced job VM asking for one `model` instance per profile, with `cores` cores and
/// `ram_gb` GB of RAM.
pub fn job(id: VmId, model: &str, profiles: &[&str], cores: u32, ram_gb: u32) -> Vm {
    Vm::job(id, gi_requests(embedded(), model, profiles), cores, ram_gb)
}

/// `n` hosts `h0`.. with two A100-40GB GPUs, 80 cores and 512 GB of RAM each, none running.
pub fn a100s(n: usize) -> Fleet {
    let c = embedded();
    let a100 = c.model_id("a100-40gb").unwrap();
    let hs = (0..n)
        .map(|i| Host::new(format!("h{i}"), 80, 512, vec![a100, a100], 0))
        .collect();
    Fleet::new(c, hs)
}

/// An unplaced job VM asking for one `model` instance per profile, sized as in the paper's
/// workload (4 cores and 16 GB of RAM per compute slice), arriving at second `id`.
pub fn mig_vm(id: VmId, model: &str, profiles: &[&str]) -> Vm {
    let c = embedded();
    let gis = gi_requests(c, model, profiles);
    let compute = total_compute(c, &gis);
    Vm {
        arrival: id as f64,
        ..Vm::job(id, gis, 4 * compute, 16 * compute)
    }
}

/// A placement on `host`: one (GPU, first slice) per instance.
pub fn at(host: usize, gis: &[(usize, u8)]) -> Placement {
    Placement {
        host,
        gis: gis.iter().map(|&(gpu, start)| GiSlot { gpu, start }).collect(),
    }
}

/// Places `vm` at `p`, which the test built to be valid.
pub fn put(f: &mut Fleet, vm: Vm, p: Placement) {
    let id = vm.id;
    if let Err(e) = f.add_placed(vm, p) {
        panic!("placing VM {id}: {e}");
    }
}

/// The three-mode fixture (`fixtures/modes.toml`) without its pending share (VM 6) and pending
/// gang (VM 8). A session offers pending shares and gangs to the policy when it opens, which
/// would place them on mix/3 and gang-1; tests that work out destinations by hand, or show free
/// whole GPUs, start from the fleet as the file places it.
pub fn modes_without_pending_shapes() -> String {
    let text = include_str!("../fixtures/modes.toml");
    let blocks: Vec<&str> = text.split("\n[[vm]]\n").collect();
    let kept: Vec<&str> = blocks
        .iter()
        .copied()
        .filter(|b| !b.starts_with("id = 6\n") && !b.starts_with("id = 8\n"))
        .collect();
    assert_eq!(kept.len() + 2, blocks.len(), "VMs 6 and 8 are in the fixture");
    kept.join("\n[[vm]]\n")
}

/// Runs `sc` for 4 h + 4 h at load 1.0 with `policy` (built with its check of skipped repeats
/// on, so a repeat that would change the fleet panics) and asserts the run skipped some repeats,
/// so the check was exercised.
pub fn assert_checked_repeats(mut sc: Scenario, policy: Box<dyn migplan::policy::Policy>) {
    sc.workload.warmup_h = 4.0;
    sc.workload.measure_h = 4.0;
    sc.workload.load = 1.0;
    let mut sim = migplan::sim::Simulator::new(&sc, policy).unwrap();
    sim.run();
    let m = sim.metrics();
    let repeats: u64 = m.calls_by_trigger.iter().map(|t| t.repeat).sum();
    assert!(
        repeats > 0,
        "the run skips some repeats: {:?}",
        m.calls_by_trigger
    );
}

/// Two hosts of eight A100-40GB: h1 full of 7g.40gb (VMs 10-17), h0 with a 4g.20gb alone on
/// GPU 0 (VM 1) and a 3g.20gb alone on GPU 1 (VM 2). No host can go off (h0's VMs do not fit in
/// full h1, h1's eight 7g do not fit in h0's six idle GPUs) and nothing waits, so an OrigaMIG
/// call has nothing to decide, while the GPU compaction frees GPU 1 with one move: the 3g.20gb
/// joins the 4g.20gb at start 4 (the slices a 4g at 0 leaves, Table 3).
pub fn eight_gpu_hosts_with_one_gpu_to_compact() -> Fleet {
    let eight = &["a100-40gb"; 8][..];
    let mut f = fleet_of(&[("h0", 256, 2048, eight), ("h1", 256, 2048, eight)]);
    put(&mut f, mig_vm(1, "a100-40gb", &["4g.20gb"]), at(0, &[(0, 0)]));
    put(&mut f, mig_vm(2, "a100-40gb", &["3g.20gb"]), at(0, &[(1, 4)]));
    for k in 0..8 {
        put(
            &mut f,
            mig_vm(10 + k as VmId, "a100-40gb", &["7g.40gb"]),
            at(1, &[(k, 0)]),
        );
    }
    f
}
