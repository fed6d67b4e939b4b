//! Whole screens of the planner, rendered by the real event loop into a `TestBackend` after
//! real key sequences, and compared with reviewed insta snapshots: 80x24, 160x48, too small,
//! colour and monochrome (NO_COLOR).

use crate::common::Harness;
use migplan::fleet::{GiSlot, Placement};
use migplan::plan::Plan;
use migplan::session::PlanProposal as Proposal;
use migplan::tui::app::{Msg, SolverMsg};
use migplan::tui::theme::Theme;

#[test]
fn fleet_at_80x24() {
    let h = Harness::demo(80, 24, Theme::color());
    insta::assert_snapshot!("fleet_80x24", h.screen());
}

#[test]
fn fleet_at_160x48() {
    let h = Harness::demo(160, 48, Theme::color());
    insta::assert_snapshot!("fleet_160x48", h.screen());
}

#[test]
fn too_small_is_one_clear_message_and_resizing_back_redraws() {
    let mut h = Harness::demo(60, 20, Theme::color());
    insta::assert_snapshot!("too_small_60x20", h.screen());
    h.resize(80, 24);
    assert!(h.screen().contains("Fleet"), "{}", h.screen());
    // Just below the minimum in one direction is still too small.
    h.resize(79, 40);
    assert!(h.screen().contains("Terminal too small"));
}

#[test]
fn monochrome_slice_states_read_from_glyphs() {
    let mut h = Harness::demo(80, 24, Theme::mono());
    h.keys("j j j");
    let screen = h.screen();
    insta::assert_snapshot!("fleet_80x24_mono", screen);
    // GIs are solid blocks, free slices shaded, and no cell carries a colour.
    assert!(screen.contains('█') && screen.contains('░') && screen.contains('·'));
    let buf = h.term.backend().buffer();
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == ratatui::style::Color::Reset && c.bg == ratatui::style::Color::Reset));
}

#[test]
fn colour_styles_of_the_fleet_rows() {
    // The styles of the first host rows in colour: VM blocks carry their VM's colour.
    let h = Harness::demo(80, 24, Theme::color());
    let buf = h.term.backend().buffer();
    let rows = ratatui::layout::Rect::new(0, 0, 80, 5);
    let mut part = ratatui::buffer::Buffer::empty(rows);
    for y in 0..5 {
        for x in 0..80 {
            part[(x, y)] = buf[(x, y)].clone();
        }
    }
    insta::assert_snapshot!("fleet_rows_colour_styles", format!("{part:?}"));
}

#[test]
fn help_is_generated_from_the_keymap() {
    let mut h = Harness::demo(160, 48, Theme::color());
    h.keys("?");
    let screen = h.screen();
    insta::assert_snapshot!("help_160x48", screen);
    let km = migplan::tui::keymap::Keymap::embedded();
    for b in km.bindings(migplan::tui::keymap::Layer::Fleet).take(12) {
        assert!(screen.contains(&b.desc), "help lacks `{}`", b.desc);
    }
    h.keys("<Esc>");
    assert!(h.app.overlays.help.is_none(), "Esc closes the top overlay");
    assert!(!h.app.quit, "Esc never quits");
    h.keys("<F1>");
    assert!(h.app.overlays.help.is_some());
}

#[test]
fn add_vm_form_and_remove_confirmation() {
    let mut h = Harness::demo(80, 24, Theme::color());
    h.keys("a");
    insta::assert_snapshot!("add_form_80x24", h.screen());
    h.keys("<Esc> l l l x");
    insta::assert_snapshot!("confirm_remove_80x24", h.screen());
    h.keys("n");
    assert!(h.app.overlays.confirm.is_none());
    assert!(h.app.session.fleet().vm(2).is_some(), "n keeps the VM");
}

#[test]
fn plan_preview_at_160x48_and_80x24() {
    let mut h = Harness::demo(160, 48, Theme::color());
    let s = &h.app.session;
    let host = |n: &str| s.fleet().hosts.iter().position(|h| h.name == n).unwrap();
    let mut plan = Plan::default();
    plan.targets.insert(
        9,
        Placement {
            host: host("a100-1"),
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    plan.targets.insert(
        12,
        Placement {
            host: host("a100-3"),
            gis: vec![GiSlot { gpu: 0, start: 0 }],
        },
    );
    let p = Proposal::by_hand(plan, s.revision());
    // The answer of a solver thread, as the loop receives it.
    h.app
        .sender()
        .send(Msg::Solver(SolverMsg::Done(Box::new(Ok(p)))))
        .unwrap();
    h.keys("");
    insta::assert_snapshot!("preview_160x48", h.screen());
    h.keys("n");
    insta::assert_snapshot!("preview_playing_160x48", h.screen());
    h.resize(80, 24);
    insta::assert_snapshot!("preview_playing_80x24", h.screen());
}

#[test]
fn the_readme_and_the_planner_guide_list_every_key_of_the_keymap() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let guide = std::fs::read_to_string(format!("{root}/docs/planner.md")).unwrap();
    let km = migplan::tui::keymap::Keymap::embedded();
    for layer in migplan::tui::keymap::Layer::ALL {
        // The fleet view's keys are in the README, the other views' in docs/planner.md.
        let (name, text) = if layer == migplan::tui::keymap::Layer::Fleet {
            ("README.md", &readme)
        } else {
            ("docs/planner.md", &guide)
        };
        let heading = format!("**{}**", layer.title());
        assert!(text.contains(&heading), "{name} lacks the heading {heading}");
        for b in km.bindings(layer) {
            let row = format!("| `{}` | {} |", b.run, b.desc);
            assert!(
                text.contains(&row),
                "{name} lacks the {} binding `{}`",
                layer.name(),
                b.run
            );
        }
    }
}

/// Eight-GPU nodes in the half-width fleet panel at 160x48: one column per slice would leave
/// four of a host's eight GPUs out, so each column holds two slices and all eight show (four
/// columns each); the cursor moves onto the fifth GPU and the detail panel follows it.
#[test]
fn every_gpu_of_an_eight_gpu_node_shows_at_160x48() {
    let sc = migplan::scenario::load(std::path::Path::new("scenarios/hgx-a100.toml")).unwrap();
    let session = migplan::session::Session::new(sc, None).unwrap();
    let mut h = crate::common::Harness::new(session, 160, 48, Theme::mono());
    let screen = h.screen();
    let row = screen
        .lines()
        .find(|l| l.contains("hgx-a100-0 "))
        .expect("the first host's row");
    let maps = row
        .split("0/2048")
        .nth(1)
        .and_then(|m| m.split('│').next())
        .expect("the maps after the RAM column");
    let cells: Vec<&str> = maps.split_whitespace().filter(|c| c.contains('░')).collect();
    assert_eq!(cells.len(), 8, "{row}");
    assert!(cells.iter().all(|c| c.chars().count() == 4), "{row}");
    // GPU by GPU to the fifth (32 slices away at one slice per `l`).
    h.keys(&"l ".repeat(32));
    assert!(h.screen().contains("GPU hgx-a100-0/4"), "{}", h.screen());
}
