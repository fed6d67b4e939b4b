//! The planner's screens on a fleet with all three GPU modes (tests/it/fixtures/modes.toml): the
//! fleet rows show a gang's whole GPUs, free whole GPUs, a shared GPU's memory bar and a MIG
//! slice map; the detail of a shared GPU lists its shares with GB, weight and tenant; `:mode`
//! previews from the palette, `:mode!` applies and undo restores the fleet exactly.

use crate::common::Harness;
use migplan::fleet::GpuMode;
use migplan::scenario;
use migplan::session::Session;
use migplan::tui::theme::Theme;

fn harness(w: u16, h: u16) -> Harness {
    let text = crate::common::fleet::modes_without_pending_shapes();
    let s = Session::new(scenario::parse(&text, "modes.toml").unwrap(), None).unwrap();
    Harness::new(s, w, h, Theme::mono())
}

fn select(h: &mut Harness, host: &str, gpu: usize) {
    let hid = h
        .app
        .session
        .fleet()
        .hosts
        .iter()
        .position(|x| x.name == host)
        .unwrap();
    h.app.view.sel.host = hid;
    h.app.view.sel.gpu = gpu;
    h.app.view.sel.slice = 0;
    h.draw();
}

#[test]
fn the_fleet_shows_each_gpus_mode() {
    let mut h = harness(160, 48);
    select(&mut h, "mix", 2);
    let screen = h.screen();
    insta::assert_snapshot!("modes_shared_gpu_160x48", screen);
    // gang-0's eight GPUs are held by the gang VM 5, gang-1's are free whole GPUs.
    let gang0 = screen.lines().find(|l| l.contains("gang-0")).unwrap();
    assert_eq!(gang0.matches("gang #5").count(), 5, "{gang0}");
    let gang1 = screen.lines().find(|l| l.contains("gang-1")).unwrap();
    assert!(gang1.contains("whole"), "{gang1}");
    // The shared GPU 2 of mix in detail: 40 GB w 0.50 and 32 GB w 0.75 of team-a, 8 GB free,
    // weights 1.25: oversubscribed.
    assert!(screen.contains("shared (soft shares) · 72/80 GB"), "{screen}");
    assert!(screen.contains("40 GB w 0.50 · VM 3 [team-a]"), "{screen}");
    assert!(screen.contains("32 GB w 0.75 · VM 4 [team-a]"), "{screen}");
    assert!(
        screen.contains("8 GB free · weights sum to 1.25: oversubscribed"),
        "{screen}"
    );
    // The status line describes the GPU under the cursor in words.
    assert!(screen.contains("mix/2: shared, 2 share(s), 72/80 GB, weights 1.25 (oversubscribed)"));
}

#[test]
fn a_whole_gpu_and_its_holder_in_detail() {
    let mut h = harness(160, 48);
    select(&mut h, "mix", 1);
    let screen = h.screen();
    assert!(screen.contains("whole (MIG off, one holder)"), "{screen}");
    assert!(
        screen.contains("held by VM 2 · share 30 GB w 0.38 isolated"),
        "{screen}"
    );
}

#[test]
fn mode_from_the_palette_previews_applies_and_undoes() {
    let mut h = harness(160, 48);
    let before = h.app.session.fleet().clone();
    h.keys(":mode<Space>mix/2<Space>whole<Enter>");
    assert_eq!(h.app.session.fleet(), &before, "a preview changes nothing");
    let screen = h.screen();
    assert!(screen.contains("GPU mix/2: shared -> whole"), "{screen}");
    assert!(screen.contains("mode preview: VM 3"), "{screen}");
    h.keys(":mode!<Space>mix/2<Space>whole<Enter>");
    let mix = h
        .app
        .session
        .fleet()
        .hosts
        .iter()
        .position(|x| x.name == "mix")
        .unwrap();
    assert_eq!(h.app.session.fleet().hosts[mix].gpus[2].mode, GpuMode::Whole);
    h.app.session.fleet().check_invariants().unwrap();
    insta::assert_snapshot!("modes_after_mode_change_160x48", h.screen());
    h.keys("u");
    assert_eq!(h.app.session.fleet(), &before, "undo restores the fleet exactly");
}
