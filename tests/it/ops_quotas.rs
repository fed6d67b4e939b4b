//! Admission checks of a multi-tenant node: per-tenant quotas per profile, and multi-GPU work on whole GPUs.

use crate::common::fleet::{h100_four_tenants, h100_tenant_vm, H100_FOUR_TENANTS as H100};
use migplan::fleet::Vm;
use migplan::scenario::{self, Scenario};
use migplan::sim::admission as quotas;

fn request(s: &Scenario, id: u64, tenant: Option<&str>, profiles: &[&str]) -> Vm {
    h100_tenant_vm(s.fleet.catalog, id, tenant, profiles)
}

/// The quota check of `request(s, id, tenant, profiles)`.
fn check_request(s: &Scenario, id: u64, tenant: Option<&str>, profiles: &[&str]) -> Result<(), String> {
    quotas::check(&s.quotas, &s.fleet, &request(s, id, tenant, profiles)).map_err(|e| e.to_string())
}

#[test]
fn search_is_refused_its_seventh_small_instance() {
    let mut s = h100_four_tenants();
    // Search holds four 1g.10gb; its quota is six (the worked example's ResourceQuota).
    assert_eq!(quotas::usage(&s.fleet, "search", None).get("1g.10gb"), Some(&4));
    for id in [100, 101] {
        let vm = request(&s, id, Some("search"), &["1g.10gb"]);
        quotas::check(&s.quotas, &s.fleet, &vm).unwrap();
        let p = s.fleet.ff_placement(&vm).unwrap();
        s.fleet.add_placed(vm, p).unwrap();
    }
    let vm = request(&s, 102, Some("search"), &["1g.10gb"]);
    let e = quotas::check(&s.quotas, &s.fleet, &vm).unwrap_err().to_string();
    assert_eq!(
        e,
        "VM 102 refused: tenant `search` has a quota of 6 x nvidia.com/mig-1g.10gb, holds 6 and \
         the request asks for 1 more"
    );
    // The same request for another tenant, or without a tenant, is not limited by search's quota.
    check_request(&s, 103, Some("support"), &["1g.10gb"]).unwrap();
    check_request(&s, 104, None, &["1g.10gb"]).unwrap();
    // A VM already placed does not count against itself.
    let placed = s.fleet.vm(100).unwrap().clone();
    quotas::check(&s.quotas, &s.fleet, &placed).unwrap();
}

#[test]
fn one_request_over_quota_is_refused_whole() {
    let s = h100_four_tenants();
    // Search's 3g.40gb quota is one; two in one request exceed it although it holds none.
    let vm = request(&s, 100, Some("search"), &["3g.40gb", "3g.40gb"]);
    let e = quotas::check(&s.quotas, &s.fleet, &vm).unwrap_err().to_string();
    assert!(
        e.contains("quota of 1 x nvidia.com/mig-3g.40gb, holds 0") && e.contains("2 more"),
        "{e}"
    );
    check_request(&s, 101, Some("search"), &["3g.40gb"]).unwrap();
    // Ranking holds its two 3g.40gb already.
    let e = check_request(&s, 102, Some("ranking"), &["3g.40gb"]).unwrap_err();
    assert!(e.contains("tenant `ranking`") && e.contains("holds 2"), "{e}");
}

#[test]
fn quota_keys_may_use_kubernetes_resource_names() {
    let src = std::fs::read_to_string(H100)
        .unwrap()
        .replace("\"1g.10gb\" = 6", "\"requests.nvidia.com/mig-1g.10gb\" = 4")
        .replace("\"2g.20gb\" = 2", "\"nvidia.com/mig-2g.20gb\" = 2");
    let s = scenario::parse(&src, "k8s.toml").unwrap();
    quotas::validate(&s.quotas, s.fleet.catalog).unwrap();
    let e = check_request(&s, 100, Some("search"), &["1g.10gb"]).unwrap_err();
    assert!(e.contains("quota of 4"), "{e}");
    let e = check_request(&s, 101, Some("support"), &["2g.20gb"]).unwrap_err();
    assert!(e.contains("quota of 2"), "{e}");
    // A key that names no MIG profile is refused when the scenario is read, at its line.
    let bad = src.replace("\"nvidia.com/mig-2g.20gb\" = 2", "\"nvidia.com/gpu\" = 2");
    let e = scenario::parse(&bad, "k8s.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("k8s.toml:") && e.contains("quotas.support") && e.contains("nvidia.com/gpu"),
        "{e}"
    );
    let mut quotas = s.quotas.clone();
    if let Some(q) = quotas.get_mut("support") {
        q.insert("nvidia.com/gpu".into(), 2);
    }
    let e = quotas::validate(&quotas, s.fleet.catalog)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("quotas.support") && e.contains("nvidia.com/gpu"),
        "{e}"
    );
}

#[test]
fn multi_gpu_work_goes_to_whole_gpus_only() {
    let s = h100_four_tenants();
    assert!(s.policy.multi_gpu_whole_only);
    // A two-GPU training job on whole GPUs passes the rule (and research's quota of three).
    let whole = request(&s, 100, Some("research"), &["7g.80gb", "7g.80gb"]);
    quotas::check_multi_gpu(s.fleet.catalog, &whole).unwrap();
    quotas::admission(&s.quotas, &s.policy, &s.fleet, &whole).unwrap();
    // The same job on slices is refused, and the reason says why.
    let sliced = request(&s, 101, Some("research"), &["3g.40gb", "3g.40gb"]);
    let e = quotas::admission(&s.quotas, &s.policy, &s.fleet, &sliced).unwrap_err();
    assert_eq!(
        e,
        "VM 101 refused: multi-GPU work (2 GIs) runs on whole GPUs only (MIG disabled or 7g.80gb), \
         never on slices such as 3g.40gb: NCCL and P2P are not supported between MIG instances"
    );
    // A single-GPU request on a slice is not multi-GPU work.
    quotas::admission(
        &s.quotas,
        &s.policy,
        &s.fleet,
        &request(&s, 102, Some("research"), &["3g.40gb"]),
    )
    .unwrap();
    // With the setting off (the paper's workload), two-GI VMs on slices are admitted.
    let mut off = s.policy.clone();
    off.multi_gpu_whole_only = false;
    quotas::admission(&s.quotas, &off, &s.fleet, &sliced).unwrap();
    // Quotas come first: research asking for three whole GPUs more is over its quota.
    let many = request(&s, 103, Some("research"), &["7g.80gb", "7g.80gb", "7g.80gb"]);
    let e = quotas::admission(&s.quotas, &s.policy, &s.fleet, &many).unwrap_err();
    assert!(e.contains("quota of 3 x nvidia.com/mig-7g.80gb, holds 1"), "{e}");
}

#[test]
fn queued_requests_count_against_the_quota() {
    let mut s = h100_four_tenants();
    // Search holds four 1g.10gb of six; one more waits in the queue, so a request for two is
    // refused (4 + 1 + 2 > 6) while a request for one still fits (4 + 1 + 1 = 6).
    let waiting = request(&s, 100, Some("search"), &["1g.10gb"]);
    s.fleet.add_pending(waiting).unwrap();
    let two = request(&s, 101, Some("search"), &["1g.10gb", "1g.10gb"]);
    let e = quotas::check(&s.quotas, &s.fleet, &two).unwrap_err().to_string();
    assert_eq!(
        e,
        "VM 101 refused: tenant `search` has a quota of 6 x nvidia.com/mig-1g.10gb, holds 4, \
         has 1 more waiting in the queue and the request asks for 2 more"
    );
    check_request(&s, 102, Some("search"), &["1g.10gb"]).unwrap();
    // The queued VM itself is not counted against itself when it is placed later.
    let queued = s.fleet.vm(100).unwrap().clone();
    quotas::check(&s.quotas, &s.fleet, &queued).unwrap();
    assert_eq!(quotas::queued(&s.fleet, "search", None).get("1g.10gb"), Some(&1));
    assert!(quotas::queued(&s.fleet, "search", Some(100)).is_empty());
}
