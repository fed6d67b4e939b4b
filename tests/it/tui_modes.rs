//! The planner's screens on a fleet with all three GPU modes (tests/it/fixtures/modes.toml): the
//! fleet rows show a gang's whole GPUs, free whole GPUs, a shared GPU's memory bar and a MIG
//! slice map; the detail of a shared GPU lists its shares with GB, weight and tenant; `:mode`
//! previews from the palette, `:mode!` applies and undo restores the fleet exactly.

use crate::common::Harness;
use migplan::fleet::{GpuMode, Shape};
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
    // gang-0's eight GPUs are held by the gang VM 5, gang-1's are free whole GPUs: all eight
    // of each row show, four columns each in the half-width panel.
    let maps = |host: &str| -> String {
        let row = screen.lines().find(|l| l.contains(host)).unwrap();
        row.split("/2048")
            .nth(1)
            .unwrap()
            .split('│')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(maps("gang-0").matches("#5").count(), 8, "{}", maps("gang-0"));
    assert_eq!(maps("gang-1").matches("W").count(), 8, "{}", maps("gang-1"));
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

/// The add form's shape field: a soft share of 10 GB (weight 10/80) goes to the first shared
/// GPU with 10 GB free (mix/2 has 8, mix/3 80), an isolated one to a free whole GPU (mix/1 is
/// held, gang-0 is the gang's, so gang-1/0), a gang of 2 to gang-1's next free whole GPUs; each
/// is one undo step.
#[test]
fn the_add_form_asks_for_a_share_an_isolated_share_or_a_gang() {
    let mut h = harness(160, 48);
    select(&mut h, "mix", 2);
    let before = h.app.session.fleet().clone();
    let newest = |h: &Harness| {
        let f = h.app.session.fleet();
        let v = f.vms().max_by_key(|v| v.id).unwrap().clone();
        let p = v.placement.clone().expect("placed");
        (
            v.shape,
            f.hosts[p.host].name.clone(),
            p.gis.iter().map(|s| s.gpu).collect::<Vec<_>>(),
        )
    };
    // The form opens on the profile; Up goes to the shape, Right to "soft share".
    h.keys("a <Up> <Right>");
    let screen = h.screen();
    assert!(screen.contains("◂ soft share ▸"), "{screen}");
    assert!(screen.contains("GB of 80 GB; weight 0.12"), "{screen}");
    h.keys("<Enter>");
    let (shape, host, gpus) = newest(&h);
    assert_eq!(
        shape,
        Shape::Share {
            model: before.catalog.model_id("h100-80gb").unwrap(),
            gb: 10,
            weight: 0.125,
            isolation: false
        }
    );
    assert_eq!((host.as_str(), gpus), ("mix", vec![3]));
    h.keys("a <Up> <Right> <Right> <Enter>");
    let (shape, host, gpus) = newest(&h);
    assert!(
        matches!(
            shape,
            Shape::Share {
                isolation: true,
                gb: 10,
                ..
            }
        ),
        "{shape:?}"
    );
    assert_eq!((host.as_str(), gpus), ("gang-1", vec![0]));
    // Gang: the amount field (Down from the shape, past the profile) from 1 to 2 GPUs.
    h.keys("a <Up> <Right> <Right> <Right> <Down> <Down> <Right>");
    let screen = h.screen();
    assert!(screen.contains("◂ gang of whole GPUs ▸"), "{screen}");
    assert!(screen.contains("whole GPUs of one host"), "{screen}");
    h.keys("<Enter>");
    let (shape, host, gpus) = newest(&h);
    assert!(matches!(shape, Shape::Gang { gpus: 2, .. }), "{shape:?}");
    assert_eq!((host.as_str(), gpus), ("gang-1", vec![1, 2]));
    h.app.session.fleet().check_invariants().unwrap();
    h.keys("u u u");
    assert_eq!(h.app.session.fleet(), &before);
}

/// The form's hints follow the shape: a share's default resources and its refusal when nothing
/// has room, a gang's resources per GPU.
#[test]
fn the_add_form_hints_follow_the_shape() {
    let mut h = harness(160, 48);
    h.keys("a");
    let mig = h.screen();
    assert!(mig.contains("4 per compute slice by default"), "{mig}");
    assert!(mig.contains("waits in the queue"), "{mig}");
    h.keys("<Up> <Right>");
    let share = h.screen();
    assert!(share.contains("16 GB by default"), "{share}");
    assert!(share.contains("refused, not queued"), "{share}");
    h.keys("<Right> <Right>");
    let gang = h.screen();
    assert!(gang.contains("8 per GPU by default"), "{gang}");
    assert!(gang.contains("64 GB per GPU by default"), "{gang}");
}
