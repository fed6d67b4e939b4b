//! Re-layout previews: a layout change drains the whole host; the preview lists every
//! displaced VM and whether it has a free place elsewhere, before anything is applied.

use crate::common::fleet::{h100_four_tenants, TWO_NODES};
use migplan::ops::{layouts, relayout};
use migplan::scenario;

#[test]
fn relayout_of_one_gpu_drains_the_host() {
    let s = scenario::parse(TWO_NODES, "two-nodes.toml").unwrap();
    let before = s.fleet.clone();
    let c = s.fleet.catalog;
    let h100 = c.model_id("h100-80gb").unwrap();
    let heavy = layouts::embedded().get(h100, "tenant-heavy").unwrap();
    let p = relayout::drain_preview(&s.fleet, 0, 0, heavy).unwrap();
    assert_eq!(s.fleet, before, "a preview changes nothing");
    assert_eq!(p.host_name, "node-a");
    assert_eq!(p.from, "2x1g.10gb + 1x2g.20gb + 1x3g.40gb");
    assert_eq!(p.to, "1x3g.40gb + 1x4g.40gb");
    // Every VM of node-a is displaced, including research on the GPU that keeps its layout.
    let ids: Vec<u64> = p.displaced.iter().map(|d| d.vm).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
    let d5 = &p.displaced[4];
    assert!(!d5.on_changed_gpu && d5.returns_after);
    // After the re-layout ranking's 3g comes back (tenant-heavy has one); search and support
    // lose their instances.
    assert_eq!(p.lose_instance(), vec![1, 2, 3]);
    // Free places elsewhere, all displaced VMs together, largest first: research's whole GPU
    // fits nowhere; ranking's 3g takes node-b's free half, leaving nothing for the others.
    let homes: Vec<Option<&str>> = p.displaced.iter().map(|d| d.elsewhere_host.as_deref()).collect();
    assert_eq!(homes, vec![None, None, None, Some("node-b"), None]);
    assert_eq!(p.displaced[3].elsewhere.as_ref().unwrap().gis[0].start, 4);
    assert_eq!(p.stranded(), vec![1, 2, 3, 5]);
    assert!(!p.all_have_a_place());
}

#[test]
fn relayout_of_a_free_gpu_still_displaces_its_neighbours() {
    // The four-tenant H100 node: giving free GPU 3 a development pool drains all nine tenants, and with no
    // other node none of them has anywhere to go; all get their instances back afterwards.
    let s = h100_four_tenants();
    let h100 = s.fleet.catalog.model_id("h100-80gb").unwrap();
    let pool = layouts::embedded().get(h100, "all-1g.10gb").unwrap();
    let p = relayout::drain_preview(&s.fleet, 0, 3, pool).unwrap();
    assert_eq!(p.from, "no instances");
    assert_eq!(p.displaced.len(), 9);
    assert!(p.displaced.iter().all(|d| !d.on_changed_gpu && d.returns_after));
    assert_eq!(p.stranded().len(), 9);
    assert!(p.lose_instance().is_empty());
}

#[test]
fn relayout_errors() {
    let s = scenario::parse(TWO_NODES, "two-nodes.toml").unwrap();
    let c = s.fleet.catalog;
    let a30 = c.model_id("a30-24gb").unwrap();
    let h100 = c.model_id("h100-80gb").unwrap();
    let other = layouts::embedded().get(a30, "all-balanced").unwrap();
    let e = relayout::drain_preview(&s.fleet, 0, 0, other)
        .unwrap_err()
        .to_string();
    assert!(e.contains("a30-24gb") && e.contains("h100-80gb"), "{e}");
    let l = layouts::embedded().get(h100, "whole").unwrap();
    assert!(relayout::drain_preview(&s.fleet, 0, 7, l)
        .unwrap_err()
        .to_string()
        .contains("no GPU 7"));
    assert!(relayout::drain_preview(&s.fleet, 9, 0, l)
        .unwrap_err()
        .to_string()
        .contains("no host 9"));
}
