//! The regime view: the scenario's `[regime]` played in the planner, key by key through the real
//! event loop against a `TestBackend`. scenarios/k8s-static.toml is small enough to count by
//! hand: two nodes of two H100s holding just the instances of their four 1g.10gb pods, two
//! 3g.40gb pods waiting, the planner every 30 min with hysteresis 2.

use crate::common::Harness;
use migplan::session::Session;
use migplan::tui::keymap::Layer;
use migplan::tui::theme::Theme;

fn open() -> Harness {
    let root = env!("CARGO_MANIFEST_DIR");
    let s = Session::open(std::path::Path::new(&format!("{root}/scenarios/k8s-static.toml"))).unwrap();
    Harness::new(s, 160, 48, Theme::mono())
}

fn line_with<'a>(screen: &'a str, what: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no line with `{what}` in\n{screen}"))
}

/// The words of the screen line holding `key`, from its last occurrence on (the right pane shares
/// its lines with the nodes).
fn words_from(screen: &str, key: &str) -> Vec<String> {
    let l = line_with(screen, key);
    let at = l.rfind(key).unwrap_or(0);
    l[at..]
        .split_whitespace()
        .filter(|w| *w != "│")
        .map(String::from)
        .collect()
}

#[test]
fn the_static_regime_plays_plan_hysteresis_drain_and_the_waiting_pods_start() {
    let mut h = open();
    // A scenario with [regime] kind = "static-layouts" opens on the regime view.
    assert_eq!(h.app.layer(), Layer::Regime);
    let s = h.screen();
    assert!(
        s.contains("Regime static-layouts · k8s-static · day 0 00:00"),
        "{s}"
    );
    // node-a: two 1g.10gb in use on GPU 0, one on GPU 1; node-b: one on GPU 0, none on GPU 1.
    assert!(s.contains("node-a serving  3 pod(s)"), "{s}");
    assert!(s.contains("node-b serving  1 pod(s)"), "{s}");
    let gpus: Vec<&str> = s
        .lines()
        .filter(|l| l.contains(" in use") || l.contains(" no instance"))
        .collect();
    assert_eq!(gpus.len(), 4, "{s}");
    assert!(gpus[0].contains("1g■ 1g■  2/2 in use, 0 free"), "{}", gpus[0]);
    assert!(gpus[1].contains("1g■  1/1 in use, 0 free"), "{}", gpus[1]);
    assert!(gpus[2].contains("1g■  1/1 in use, 0 free"), "{}", gpus[2]);
    assert!(gpus[3].contains(" no instance"), "{}", gpus[3]);
    // Two 3g.40gb pods wait; no GPU holds that profile.
    assert_eq!(words_from(&s, "3g.40gb    "), ["3g.40gb", "2", "2", "0s"]);
    assert!(s.contains("next run day 0 00:30 (in 30m)"), "{s}");
    assert!(s.contains("every GPU keeps its layout"), "{s}");
    assert!(s.contains("Drains (0)"), "{s}");

    // `]`: past the planner's first run. node-b (one pod) is the least busy node: its GPUs head
    // for layouts with a 3g.40gb, one identical plan of the two needed; node-a's stay.
    h.keys("]");
    let s = h.screen();
    assert!(s.contains("day 0 00:30"), "{s}");
    let heading: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("node-b/") && l.contains(" 1/2"))
        .collect();
    assert_eq!(heading.len(), 2, "{s}");
    assert!(!s.contains("node-a/"), "node-a keeps its layout: {s}");
    assert_eq!(
        words_from(&s, "3g.40gb    "),
        ["3g.40gb", "2", "2", "30m"],
        "the oldest wait is 30 min"
    );

    // The second run drains node-b: its one pod is evicted and, with no free 1g.10gb on node-a,
    // waits with the 3g.40gb pods.
    h.keys("D");
    let s = h.screen();
    assert!(
        h.message()
            .starts_with("drain at day 0 01:00: node-b (1 pods evicted, 2 GPUs re-laid out)"),
        "{}",
        h.message()
    );
    assert!(s.contains("Drains (1)"), "{s}");
    assert!(s.contains("day 0 01:00 node-b: 1 pod(s) evicted"), "{s}");
    assert!(s.contains("node-b RE-LAYOUT until day 0 01:10"), "{s}");
    assert!(s.contains("node-a serving  3 pod(s)"), "{s}");
    assert!(s.contains("Pending queue (3 pod(s))"), "{s}");
    assert_eq!(words_from(&s, "1g.10gb    "), ["1g.10gb", "1", "1", "0s"]);
    assert_eq!(words_from(&s, "3g.40gb    "), ["3g.40gb", "2", "2", "1h"]);

    // Ten minutes later node-b serves again and the three pods start on it.
    h.keys(".");
    let s = h.screen();
    assert!(s.contains("day 0 01:10"), "{s}");
    assert!(s.contains("node-b serving  3 pod(s)"), "{s}");
    assert!(s.contains("nothing waits"), "{s}");
    assert_eq!(s.matches("3g■").count(), 2, "{s}");
    assert!(s.contains("drains 1 · evicted 1"), "{s}");
    insta::assert_snapshot!("regime_static_after_drain_160x48", s);
}

#[test]
fn the_regime_view_answers_keys_while_it_plays_and_closes_back_to_the_fleet() {
    let mut h = open();
    h.keys("<Space>");
    assert!(h.app.regime.as_ref().unwrap().playing);
    assert!(h.screen().contains("REGIME PLAYING"));
    // A play tick advances the regime's clock by the play step (10 min), not the session's.
    h.app.sender().send(migplan::tui::app::Msg::Tick).unwrap();
    h.keys("");
    assert_eq!(h.app.regime.as_ref().unwrap().run.now(), 600.0);
    assert_eq!(h.app.session.now_s(), 0.0);
    // Keys answer while it plays: faster, scroll, help over it, and back.
    h.keys("+");
    assert_eq!(h.app.regime.as_ref().unwrap().step_s, 1200.0);
    h.keys("?");
    assert!(h
        .screen()
        .contains("Regime view (the scenario's [regime] played)"));
    assert!(h.screen().contains("next drain (step to it)"));
    h.keys("<Esc>");
    h.app.sender().send(migplan::tui::app::Msg::Tick).unwrap();
    h.keys("");
    assert_eq!(
        h.app.regime.as_ref().unwrap().run.now(),
        1800.0,
        "ticks go on under the help"
    );
    // Pause, close: the fleet view is back, and R reopens the same run at the same time.
    h.keys("<Space> R");
    assert_eq!(h.app.layer(), Layer::Fleet);
    h.keys("R");
    assert_eq!(h.app.layer(), Layer::Regime);
    assert_eq!(h.app.regime.as_ref().unwrap().run.now(), 1800.0);
}

#[test]
fn the_regime_view_refuses_a_paper_scenario() {
    let mut h = Harness::demo(160, 48, Theme::mono());
    assert_eq!(h.app.layer(), Layer::Fleet);
    h.keys("R");
    assert_eq!(h.app.layer(), Layer::Fleet);
    assert!(
        h.message().contains("the scenario's regime is the paper's"),
        "{}",
        h.message()
    );
    h.keys(":regime-step<Space>1h<Enter>");
    assert!(
        h.message().contains("the regime view is not open"),
        "{}",
        h.message()
    );
}

#[test]
fn the_dynamic_regime_shows_each_restart_based_defragmentation_pass() {
    // One node of two H100s under dynamic MIG, two 3g.40gb pods on each GPU; one pod of each
    // GPU leaves at 1 h. The pass at 2 h restarts GPU 0's pod on GPU 1: GPU 0 empties.
    let mut text = String::from(
        "name = \"dyn\"\n[[host]]\nname = \"n\"\ncores = 64\nram_gb = 512\ngpus = [\"h100-80gb\", \"h100-80gb\"]\n\
         [workload]\nenabled = false\nwarmup_h = 0.0\nmeasure_h = 12.0\n\
         [regime]\nkind = \"dynamic\"\ndefrag_every_h = 2.0\n",
    );
    for (id, gpu, start, life) in [(1, 0, 0, 1), (2, 0, 4, 10), (3, 1, 0, 1), (4, 1, 4, 10)] {
        text += &format!(
            "[[vm]]\nid = {id}\nmodel = \"h100-80gb\"\nprofiles = [\"3g.40gb\"]\ncores = 4\nram_gb = 16\n\
             lifetime_h = {life}\nhost = \"n\"\nat = [\"{gpu}@{start}\"]\n"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dyn.toml");
    std::fs::write(&path, text).unwrap();
    let mut h = Harness::new(Session::open(&path).unwrap(), 160, 48, Theme::mono());
    let s = h.screen();
    assert!(s.contains("Regime dynamic · dyn · day 0 00:00"), "{s}");
    assert!(
        s.contains("every 2 h, at most 8 restarts a pass, 60 s down each"),
        "{s}"
    );
    assert!(s.contains("next pass day 0 02:00 (in 2h)"), "{s}");
    let g0 = line_with(&s, "  0 dynamic");
    assert!(g0.contains("3g■ 3g■  2 in use, 1/7 compute slices free"), "{g0}");
    h.keys("> >");
    let s = h.screen();
    assert!(
        s.contains("day 0 02:00 1 restarted, 0 started, emptied n/0"),
        "{s}"
    );
    assert!(
        line_with(&s, "  0 dynamic").contains(" 0 in use, 7/7 compute slices free"),
        "{s}"
    );
    assert!(line_with(&s, "  1 dynamic").contains("3g■ 3g■  2 in use"), "{s}");
    assert!(s.contains("restarts 1, GPUs emptied 1"), "{s}");
}
