//! GPU models without MIG in the real catalog (`assets/gpus.toml`: the NVIDIA L40S, 48 GB, and
//! L4, 24 GB): `migplan check` refuses MIG on them naming file, line and field; their GPUs take
//! soft shares (shared) and one holder each (whole); the synthetic workload and FF, MFI, TC and
//! OrigaMIG leave them alone; the mode-change preview of the planner shows the leavers of an
//! L40S drain, applies the change and undoes it (`scenarios/inference-l40s.toml`).

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use crate::common::Harness;
use migplan::catalog;
use migplan::fleet::GpuMode;
use migplan::scenario;
use migplan::session::{parse_command, update, Outcome, Session};
use migplan::tui::keymap::Layer;
use migplan::tui::theme::Theme;
use std::path::Path;

const SCENARIO: &str = "scenarios/inference-l40s.toml";

fn load() -> scenario::Scenario {
    scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO)).unwrap()
}

fn host(f: &migplan::fleet::Fleet, name: &str) -> usize {
    f.hosts.iter().position(|h| h.name == name).unwrap()
}

#[test]
fn the_catalog_has_the_l40s_and_the_l4_without_mig_with_their_data_sheet_figures() {
    let c = catalog::embedded();
    for (name, gb, max_w) in [("l40s-48gb", 48.0, 350.0), ("l4-24gb", 24.0, 72.0)] {
        let m = c.model(c.model_id(name).unwrap());
        assert!(!m.mig, "{name}");
        assert!(m.profiles.is_empty(), "{name}");
        assert_eq!(m.memory_gb, gb, "{name}");
        assert_eq!(m.max_w, max_w, "{name}");
        assert!(m.idle_w > 0.0 && m.idle_w < m.max_w, "{name}");
    }
}

#[test]
fn check_refuses_mig_on_an_l40s_naming_file_line_and_field() {
    let text = "name = \"x\"\n\n[[host]]\nname = \"n\"\ncores = 64\nram_gb = 512\n\
                gpus = [\"l40s-48gb\", \"l40s-48gb\"]\nmodes = [\"whole\", \"mig\"]\n";
    let (_d, path) = temp_file("bad.toml", text);
    let args = ["check", path.to_str().unwrap()];
    let out = migplan().args(args).output().unwrap();
    assert_one_line_error(
        &out,
        &args,
        &[
            "bad.toml:8:",
            "field `modes`",
            "l40s-48gb has no MIG",
            "whole or shared",
        ],
    );
    // Whole and shared are fine, and the scenario that uses both checks.
    let ok = text.replace("\"mig\"]", "\"shared\"]");
    let (_d, path) = temp_file("ok.toml", &ok);
    let out = migplan()
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The slice rules' commands say there are no slices rather than drawing one.
    for args in [["gpu", "--model", "l40s-48gb"], ["explore", "--gpu", "l4-24gb"]] {
        let out = migplan().args(args).output().unwrap();
        assert_one_line_error(&out, &args, &["has no MIG", "whole or shared"]);
    }
    let out = migplan().args(["check", SCENARIO]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.contains("4 l4-24gb, 4 l40s-48gb") && s.contains("8 placed"),
        "{s}"
    );
}

/// A soft share goes to the first shared L40S with room and an isolated share holds a free
/// whole L40S (by hand: l40s-0/0 has 8 GB free, l40s-0/1 28 GB; l40s-0/2 is held, l40s-0/3
/// free). A gang of two finds no two free whole L40S and waits.
#[test]
fn an_l40s_takes_a_share_when_shared_and_one_holder_when_whole() {
    let mut s = Session::new(load(), None).unwrap();
    let before = s.fleet().clone();
    let l40s = host(s.fleet(), "l40s-0");
    let add = |s: &mut Session, line: &str| -> u64 {
        let a = parse_command(s, line).unwrap();
        match update(s, a).unwrap() {
            Outcome::Changed(msg) => msg.split_whitespace().nth(1).unwrap().parse().unwrap(),
            o => panic!("{line}: {o:?}"),
        }
    };
    let share = add(&mut s, "add l40s-48gb share=10 weight=0.2");
    let p = s.fleet().vm(share).unwrap().placement.clone().unwrap();
    assert_eq!((p.host, p.gis[0].gpu), (l40s, 1));
    let whole = add(&mut s, "add l40s-48gb share=30 isolation=true");
    let p = s.fleet().vm(whole).unwrap().placement.clone().unwrap();
    assert_eq!((p.host, p.gis[0].gpu), (l40s, 3));
    assert_eq!(s.fleet().hosts[l40s].gpus[3].mode, GpuMode::Whole);
    s.fleet().check_invariants().unwrap();
    // A share larger than the L40S's 48 GB is refused with the model's size.
    let e = parse_command(&s, "add l40s-48gb share=49")
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 to 48 GB"), "{e}");
    // MIG profiles on an L40S: there are none.
    assert!(parse_command(&s, "add l40s-48gb 1g.10gb").is_err());
    for _ in 0..2 {
        update(&mut s, migplan::session::Action::Undo).unwrap();
    }
    assert_eq!(s.fleet(), &before);
}

/// With the synthetic workload switched on, FF, MFI, TC and OrigaMIG run on the fleet and
/// never place anything on an L40S or an L4: the generator has no stream for a class without
/// MIG and the policies place MIG requests only. Their GPUs keep exactly the scenario's VMs.
#[test]
fn mig_policies_leave_gpus_without_mig_alone() {
    let mut sc = load();
    sc.workload.enabled = true;
    sc.workload.load = 0.8;
    sc.workload.warmup_h = 0.0;
    sc.workload.measure_h = 3.0;
    let no_mig: Vec<(usize, usize)> = sc
        .fleet
        .hosts
        .iter()
        .enumerate()
        .flat_map(|(h, x)| x.gpus.iter().enumerate().map(move |(k, g)| (h, k, g.model)))
        .filter(|&(_, _, m)| !sc.fleet.catalog.model(m).mig)
        .map(|(h, k, _)| (h, k))
        .collect();
    assert_eq!(no_mig.len(), 8);
    let residents = |f: &migplan::fleet::Fleet| -> Vec<u64> {
        let mut ids: Vec<u64> = f
            .vms()
            .filter(|v| {
                v.placement
                    .as_ref()
                    .is_some_and(|p| p.gis.iter().any(|s| no_mig.contains(&(p.host, s.gpu))))
            })
            .map(|v| v.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(residents(&sc.fleet), [3, 4, 5, 6, 7, 8]);
    for p in ["ff", "mfi", "tc", "origamig"] {
        let policy = migplan::policy::by_name(p, &sc.policy).unwrap();
        let mut sim = migplan::sim::Simulator::new(&sc, policy).unwrap();
        sim.set_check_invariants(true);
        sim.run();
        let f = sim.fleet();
        f.check_invariants().unwrap();
        let m = sim.metrics();
        assert!(
            m.requests > 0 && m.admitted > 0,
            "{p}: {} of {}",
            m.admitted,
            m.requests
        );
        assert_eq!(residents(f), [3, 4, 5, 6, 7, 8], "{p}");
        assert!(
            f.vms().all(|v| v.id <= 8 || v.is_mig()),
            "{p}: only MIG requests arrive"
        );
        assert!(
            f.vms().all(|v| v.id <= 8
                || v.gis
                    .iter()
                    .all(|g| g.model == f.catalog.model_id("h100-80gb").unwrap())),
            "{p}"
        );
    }
}

/// `:mode l40s-0/0 whole` in the planner: the overlay lists the leavers and where each goes
/// (as `migplan mode` does, see mode_cli.rs), discard changes nothing, apply changes the mode
/// as `:mode!` does and one undo restores the fleet exactly.
#[test]
fn the_mode_overlay_shows_the_leavers_applies_and_undoes() {
    let s = Session::new(load(), None).unwrap();
    let mut h = Harness::new(s, 160, 48, Theme::mono());
    let before = h.app.session.fleet().clone();
    let l40s = host(&before, "l40s-0");
    h.keys(":mode<Space>l40s-0/0<Space>whole<Enter>");
    assert_eq!(h.app.layer(), Layer::Mode, "{}", h.message());
    assert_eq!(h.app.session.fleet(), &before, "a preview changes nothing");
    let screen = h.screen();
    for want in [
        "Mode change l40s-0/GPU 0 · l40s-48gb · preview",
        "GPU l40s-0/0 shared  →  whole",
        "Drain: GPU l40s-0/0 only (no MIG change)",
        "2 VM(s) leave: 1 moved, 0 restarted in place, 1 stay pending.",
        "Active now: 3 hosts, 5 GPUs  →  after: 3 hosts, 4 GPUs",
        "#3      chat      share 24 GB w 0.50 on gpu 0",
        "-> l40s-0 gpu 1",
        "#4      chat      share 16 GB w 0.30 on gpu 0",
        "nowhere: stays pending",
        "a apply (one undo step)",
    ] {
        assert!(screen.contains(want), "missing `{want}`:\n{screen}");
    }
    assert!(
        h.message().contains("GPU l40s-0/0: shared -> whole"),
        "{}",
        h.message()
    );
    // Discard: nothing changes.
    h.keys("d");
    assert_eq!(h.app.layer(), Layer::Fleet);
    assert!(!h.screen().contains("Mode change l40s-0"));
    assert_eq!(h.app.session.fleet(), &before);
    // A MIG change drains the host; an L40S refuses MIG in one line and opens nothing.
    h.keys(":mode<Space>h100-0/1<Space>shared<Enter>");
    let screen = h.screen();
    assert!(screen.contains("Drain: the whole host h100-0."), "{screen}");
    assert!(screen.contains("restarts in place"), "{screen}");
    h.keys("<Esc>");
    h.keys(":mode<Space>l40s-0/3<Space>mig<Space>all-balanced<Enter>");
    assert_eq!(h.app.layer(), Layer::Fleet);
    assert!(h.message().contains("has no MIG"), "{}", h.message());
    // Apply: the mode changes as the preview said, in one undo step.
    h.keys(":mode<Space>l40s-0/0<Space>whole<Enter>");
    h.keys("a");
    assert_eq!(h.app.layer(), Layer::Fleet, "{}", h.message());
    let f = h.app.session.fleet();
    assert_eq!(f.hosts[l40s].gpus[0].mode, GpuMode::Whole);
    let p3 = f.vm(3).unwrap().placement.clone().unwrap();
    assert_eq!((p3.host, p3.gis[0].gpu), (l40s, 1));
    assert_eq!(f.pending(), [4]);
    f.check_invariants().unwrap();
    h.keys("u");
    assert_eq!(
        h.app.session.fleet(),
        &before,
        "one undo restores the fleet exactly"
    );
}

/// The overlay follows the fleet: a share added from the palette while it is open lands on the
/// GPU being changed (l40s-0/0 has 8 GB free), and the preview then lists three leavers: VM 3
/// (24 GB) and the new 4 GB share fit l40s-0/1 (28 GB free, then 4, then 0), VM 4 waits. Undo
/// from the palette brings the preview back to two leavers.
#[test]
fn the_mode_overlay_is_recomputed_when_the_fleet_changes_under_it() {
    let s = Session::new(load(), None).unwrap();
    let mut h = Harness::new(s, 160, 48, Theme::mono());
    h.keys(":mode<Space>l40s-0/0<Space>whole<Enter>");
    assert!(h.screen().contains("2 VM(s) leave: 1 moved"), "{}", h.screen());
    h.keys(":add<Space>l40s-48gb<Space>share=4<Enter>");
    assert_eq!(h.app.layer(), Layer::Mode, "{}", h.message());
    let screen = h.screen();
    assert!(
        screen.contains("3 VM(s) leave: 2 moved, 0 restarted in place, 1 stay pending."),
        "{screen}"
    );
    assert!(screen.contains("share 4 GB w 0.08 on gpu 0"), "{screen}");
    h.keys(":undo<Enter>");
    assert!(h.screen().contains("2 VM(s) leave: 1 moved"), "{}", h.screen());
}
