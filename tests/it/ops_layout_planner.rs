//! The layout planner of the four-tenant H100 node: the worked example, its counter-example, the exact
//! planner against brute force, hysteresis.

use migplan::catalog::embedded as catalog;
use migplan::ops::layout_planner::{self, ExactSettings};
use migplan::ops::layouts::{self, Layout};
use proptest::prelude::*;

fn h100() -> (usize, &'static migplan::catalog::GpuModel) {
    let c = catalog();
    let id = c.model_id("h100-80gb").unwrap();
    (id, c.model(id))
}

#[test]
fn seed_example_greedy_gives_balanced_balanced_whole() {
    let (id, m) = h100();
    let menu = layouts::embedded();
    let demand = layout_planner::parse_demand(m, "1g.10gb=4,2g.20gb=2,3g.40gb=2,7g.80gb=1").unwrap();
    let plan = layout_planner::greedy(id, m, &menu.planner_menu(id), &demand, 4).unwrap();
    assert_eq!(plan.names(), vec!["all-balanced", "all-balanced", "whole"]);
    assert_eq!(plan.gpus_used(), 3);
    // Two all-balanced GPUs provide exactly 4x1g, 2x2g, 2x3g: nothing idle.
    assert!(plan.idle.iter().all(|&n| n == 0), "{:?}", plan.idle);
    // The exact planner needs no fewer GPUs here: 21 compute slices need 3 GPUs of 7.
    let exact = layout_planner::exact(menu, id, m, &demand, 4, ExactSettings::default()).unwrap();
    assert_eq!(exact.gpus_used(), 3);
    assert!(exact.proven_optimal);
    assert_eq!(exact.idle_compute(m), 0);
}

#[test]
fn seed_counter_example_tenant_inference_first_needs_all_four_gpus() {
    // The four-tenant node: giving search its own tenant-inference-a GPU leaves 2x2g, 1x3g and the whole GPU,
    // which need three more GPUs: all four, with four 1g.10gb and one 3g.40gb idle.
    let (id, m) = h100();
    let menu = layouts::embedded();
    let demand = layout_planner::parse_demand(m, "1g.10gb=4,2g.20gb=2,3g.40gb=2,7g.80gb=1").unwrap();
    let tia = menu.get(id, "tenant-inference-a").unwrap();
    let rest: Vec<u32> = demand
        .iter()
        .zip(&tia.counts)
        .map(|(d, c)| d.saturating_sub(*c))
        .collect();
    let plan = layout_planner::greedy(id, m, &menu.planner_menu(id), &rest, 3).unwrap();
    assert_eq!(plan.names(), vec!["whole", "all-balanced", "all-balanced"]);
    assert_eq!(plan.gpus_used() + 1, 4);
    // tenant-inference-a's own instances all serve search and ranking, so the idle ones are the
    // other GPUs' leftovers.
    assert_eq!(layouts::describe_counts(m, &plan.idle), "4x1g.10gb + 1x3g.40gb");
}

#[test]
fn greedy_breaks_ties_by_profiles_served_then_name() {
    let (id, m) = h100();
    let menu = layouts::embedded();
    // 7g only: whole and all-7g.80gb tie on useful slices and profiles served; the first name
    // wins when both are on the menu.
    let d = layout_planner::parse_demand(m, "7g.80gb=1").unwrap();
    let both: Vec<&Layout> = vec![
        menu.get(id, "whole").unwrap(),
        menu.get(id, "all-7g.80gb").unwrap(),
    ];
    assert_eq!(
        layout_planner::greedy(id, m, &both, &d, 1).unwrap().names(),
        vec!["all-7g.80gb"]
    );
    // Most useful compute slices first: for 1g=4, 3g=1 tenant-inference-a serves 4 + 3 = 7 slices,
    // all-balanced only 2 + 3 = 5.
    let d = layout_planner::parse_demand(m, "1g.10gb=4,3g.40gb=1").unwrap();
    let plan = layout_planner::greedy(id, m, &menu.planner_menu(id), &d, 1).unwrap();
    assert_eq!(plan.names(), vec!["tenant-inference-a"]);
    // Equal useful slices: the layout serving more distinct profiles wins even when another
    // comes first by name (all-balanced serves three profiles, the renamed whole GPU one).
    let d = layout_planner::parse_demand(m, "1g.10gb=2,2g.20gb=1,3g.40gb=1,7g.80gb=1").unwrap();
    let first_by_name = Layout {
        name: "aaa-whole".into(),
        ..menu.get(id, "whole").unwrap().clone()
    };
    let menu2: Vec<&Layout> = vec![&first_by_name, menu.get(id, "all-balanced").unwrap()];
    let plan = layout_planner::greedy(id, m, &menu2, &d, 2).unwrap();
    assert_eq!(plan.names(), vec!["all-balanced", "aaa-whole"]);
}

#[test]
fn greedy_errors_name_the_cause() {
    let (id, m) = h100();
    let menu = layouts::embedded();
    let d = layout_planner::parse_demand(m, "1g.20gb=1").unwrap();
    let e = layout_planner::greedy(id, m, &menu.planner_menu(id), &d, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no layout") && e.contains("1g.20gb"), "{e}");
    let d = layout_planner::parse_demand(m, "7g.80gb=5").unwrap();
    let e = layout_planner::greedy(id, m, &menu.planner_menu(id), &d, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than 4 GPUs"), "{e}");
    let e = layout_planner::exact(menu, id, m, &d, 4, ExactSettings::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not fit on 4 GPUs"), "{e}");
    for bad in ["", "1g.10gb", "1g.10gb=x", "9g.1gb=1", "1g.10gb=-1"] {
        assert!(layout_planner::parse_demand(m, bad).is_err(), "{bad}");
    }
}

#[test]
fn exact_beats_greedy_when_the_menu_is_short() {
    // 3x2g + 2x3g: the layout menu has no layout with several 2g or several 3g, so greedy takes
    // all-balanced three times; the exact planner may use any placeable layout and needs two GPUs
    // (all-2g.20gb and all-3g.40gb, which are on file but not on the layout menu).
    let (id, m) = h100();
    let menu = layouts::embedded();
    let d = layout_planner::parse_demand(m, "2g.20gb=3,3g.40gb=2").unwrap();
    let g = layout_planner::greedy(id, m, &menu.planner_menu(id), &d, 8).unwrap();
    let x = layout_planner::exact(menu, id, m, &d, 8, ExactSettings::default()).unwrap();
    assert_eq!(g.gpus_used(), 3);
    assert_eq!(x.gpus_used(), 2);
    assert!(x.proven_optimal);
    assert_eq!(g.names(), vec!["all-balanced"; 3]);
    let mut names = x.names();
    names.sort();
    assert_eq!(names, vec!["all-2g.20gb", "all-3g.40gb"]);
    assert_eq!(x.idle_compute(m), 0);
    // Every exact layout is placeable on one GPU.
    for gpu in &x.gpus {
        assert!(layouts::arrange(m, &gpu.counts).is_some(), "{}", gpu.name);
    }
}

/// Fewest GPUs by brute force: breadth-first over multisets of candidate layouts.
fn brute_min_gpus(cands: &[Vec<u32>], demand: &[u32], max: u32) -> Option<u32> {
    fn rec(cands: &[Vec<u32>], need: &[u32], from: usize, left: u32) -> bool {
        if need.iter().all(|&n| n == 0) {
            return true;
        }
        if left == 0 {
            return false;
        }
        (from..cands.len()).any(|i| {
            let next: Vec<u32> = need
                .iter()
                .zip(&cands[i])
                .map(|(n, c)| n.saturating_sub(*c))
                .collect();
            next != need && rec(cands, &next, i, left - 1)
        })
    }
    (0..=max).find(|&k| rec(cands, demand, 0, k))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// On the A30 and the H100, the exact planner finds the fewest GPUs that brute force over
    /// every placeable layout finds, never more than the greedy planner, and meets the demand.
    #[test]
    fn exact_matches_brute_force(small in 0u32..6, mid in 0u32..4, big in 0u32..3, h in any::<bool>()) {
        let c = catalog();
        let name = if h { "h100-80gb" } else { "a30-24gb" };
        let id = c.model_id(name).unwrap();
        let m = c.model(id);
        let menu = layouts::embedded();
        let ps: Vec<usize> = m.cf_profiles().collect();
        // Smallest, a middle and the largest profile of the model.
        let mut d = vec![0u32; m.profiles.len()];
        d[ps[0]] = small;
        d[ps[ps.len() / 2]] = mid;
        d[ps[ps.len() - 1]] = big;
        let gpus = 8;
        let all = layouts::maximal_layouts(m, &ps);
        let want = brute_min_gpus(&all, &d, gpus);
        let x = layout_planner::exact(menu, id, m, &d, gpus, ExactSettings::default());
        match want {
            Some(k) => {
                let x = x.unwrap();
                prop_assert_eq!(x.gpus_used(), k);
                let mut supply = vec![0u32; d.len()];
                for g in &x.gpus {
                    prop_assert!(layouts::arrange(m, &g.counts).is_some());
                    for (p, n) in g.counts.iter().enumerate() { supply[p] += n; }
                }
                prop_assert!(supply.iter().zip(&d).all(|(s, d)| s >= d));
                if let Ok(g) = layout_planner::greedy(id, m, &menu.planner_menu(id), &d, gpus) {
                    prop_assert!(x.gpus_used() <= g.gpus_used());
                }
            }
            None => prop_assert!(x.is_err()),
        }
    }
}
