//! A scripted session through the real event loop, key by key, against a `TestBackend`: add a
//! VM that does not fit, step an hour, optimize, preview, apply, undo, save, quit. Each screen
//! is a reviewed snapshot; the fleet is checked against the rules at every stage.

use crate::common::Harness;
use migplan::scenario;
use migplan::tui::theme::Theme;

/// Solver times vary from run to run: `2.07 s` becomes `#.## s`.
fn redact_times(screen: &str) -> String {
    let chars: Vec<char> = screen.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        // digits '.' digit digit ' s'
        let mut j = i;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        if j > i
            && j + 4 < chars.len()
            && chars[j] == '.'
            && chars[j + 1].is_ascii_digit()
            && chars[j + 2].is_ascii_digit()
            && chars[j + 3] == ' '
            && chars[j + 4] == 's'
        {
            out.push_str("#.## s");
            i = j + 5;
            continue;
        }
        if j > i {
            out.extend(&chars[i..j]);
            i = j;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn add_step_optimize_preview_apply_undo_save() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::demo(160, 48, Theme::color());

    // Workload arrivals off (A): this script is about one request and its plan.
    h.keys("A");
    assert!(!h.app.session.arrivals());
    // The demo's own waiting request goes first (one whole-GPU request keeps the solve small).
    h.keys(":remove<Space>12<Enter>");
    assert!(h.screen().contains("Remove VM 12"), "the palette asks too");
    h.keys("y");
    assert!(h.app.session.fleet().vm(12).is_none());
    // Add a whole A100 (7g.40gb): the form opens on the profile field; the seventh profile of
    // the A100 is 7g.40gb. Every A100 holds a GI, so it waits, and the message says why.
    h.keys("a <Right> <Right> <Right> <Right> <Right> <Right>");
    assert!(h.screen().contains("◂ 7g.40gb ▸"), "{}", h.screen());
    h.keys("<Enter>");
    let id = h.app.session.fleet().next_vm_id() - 1;
    assert!(h.app.session.fleet().pending().contains(&id));
    let msg = h.message();
    assert!(msg.contains("does not fit: pending"), "{msg}");
    assert!(
        msg.contains("7g.40gb fits on none of the 8 a100-40gb GPUs"),
        "{msg}"
    );
    insta::assert_snapshot!("script_1_added_pending", h.screen());

    // Step an hour: VM 11 (lifetime 1 h) departs.
    h.keys(">");
    assert_eq!(h.app.session.now_s(), 3600.0);
    assert!(h.app.session.fleet().vm(11).is_none());
    insta::assert_snapshot!("script_2_stepped", h.screen());

    // Optimize: the auto mode makes an admission call because requests wait.
    h.keys("o");
    assert!(
        h.app.workers.solving.is_some(),
        "the solve runs on a worker thread"
    );
    assert!(h.screen().contains("Optimizing"));
    h.wait_solver();
    let pv = h.app.session.preview().expect("a plan to preview");
    assert!(pv.proposal.improves);
    assert_eq!(pv.admitted, vec![id]);
    assert_eq!(
        pv.proposal.status, "optimal",
        "a small solve, proven optimal: the snapshot is stable"
    );
    assert!(pv.after.check_invariants().is_ok());
    let admitted = pv.admitted.clone();
    insta::assert_snapshot!("script_3_preview", redact_times(&h.screen()));

    // Apply: the live fleet becomes the preview's "after".
    let before_apply = h.app.session.fleet().clone();
    let after = pv.after.clone();
    h.keys("a");
    assert!(h.app.session.preview().is_none());
    assert_eq!(h.app.session.fleet().hosts, after.hosts);
    h.app.session.fleet().check_invariants().unwrap();
    for v in &admitted {
        assert!(h.app.session.fleet().vm(*v).unwrap().placement.is_some());
    }
    insta::assert_snapshot!("script_4_applied", h.screen());

    // Undo the apply: the fleet is as before and the preview is back.
    h.keys("u");
    assert_eq!(h.app.session.fleet(), &before_apply);
    assert!(h.app.session.preview().is_some());
    h.keys("<C-r> :w<Space>");
    let path = dir.path().join("after.toml");
    h.keys(&format!("{}<Enter>", path.display()));
    assert!(h.message().starts_with("saved"), "{}", h.message());
    assert!(!h.app.session.modified());
    let back = scenario::load(&path).unwrap();
    assert_eq!(back.fleet.hosts, after.hosts);
    assert_eq!(back.now_s, 3600.0);

    // Quit: nothing unsaved, so no question.
    h.keys("q");
    assert!(h.app.quit);
}

#[test]
fn stepping_brings_arrivals_and_the_policy_switches_from_a_key() {
    let mut h = Harness::demo(160, 48, Theme::color());
    assert!(h.screen().contains("ff · arrivals on"), "{}", h.screen());
    h.keys(">");
    assert_eq!(h.app.session.now_s(), 3600.0);
    let screen = h.screen();
    assert!(screen.contains(" arrive "), "{screen}");
    assert!(
        screen.contains(" admit ") || screen.contains(" reject "),
        "{screen}"
    );
    insta::assert_snapshot!("arrivals_stepped_160x48", screen);
    // c cycles the arrival policy; the status bar shows it, undo takes it back.
    h.keys("c");
    assert_eq!(h.app.session.policy_name(), "mfi");
    assert!(h.screen().contains("mfi · arrivals on"), "{}", h.screen());
    h.keys(":policy<Space>tc<Enter>");
    assert!(h.screen().contains("tc · arrivals on"), "{}", h.screen());
    h.keys("u");
    assert_eq!(h.app.session.policy_name(), "mfi");
    // A switches arrivals off: the next hour only has departures.
    h.keys("A");
    assert!(h.screen().contains("mfi · arrivals off"), "{}", h.screen());
    let before = h
        .app
        .session
        .log()
        .filter(|e| e.kind == migplan::session::EventKind::Arrival)
        .count();
    h.keys(">");
    let after = h
        .app
        .session
        .log()
        .filter(|e| e.kind == migplan::session::EventKind::Arrival)
        .count();
    assert_eq!(before, after);
}

#[test]
fn quitting_with_unsaved_changes_asks_first() {
    let mut h = Harness::demo(80, 24, Theme::color());
    h.keys(".");
    h.keys("q");
    assert!(!h.app.quit);
    assert!(h.screen().contains("unsaved changes"), "{}", h.screen());
    h.keys("<Esc>");
    assert!(!h.app.quit, "Esc answers no");
    h.keys("q y");
    assert!(h.app.quit);
}

#[test]
fn moving_by_hand_is_refused_with_the_reason() {
    let mut h = Harness::demo(80, 24, Theme::color());
    // VM 4 (3g.20gb) is on a100-0 GPU 1 at slice 4; put the cursor on it and move it to slice 2.
    h.keys("l l l l l l l l l l l l m");
    assert_eq!(h.app.overlays.moving, Some(4), "{}", h.message());
    h.keys("h h <Enter>");
    let msg = h.message();
    assert!(
        msg.contains("refused") && msg.contains("permitted starts are [0, 4]"),
        "{msg}"
    );
    assert_eq!(
        h.app.overlays.moving,
        Some(4),
        "the move stays open after a refusal"
    );
    // Slice 0 of the same GPU is a permitted start and free.
    h.keys("h h <Enter>");
    assert_eq!(h.app.overlays.moving, None, "{}", h.message());
    let p = h.app.session.fleet().vm(4).unwrap().placement.clone().unwrap();
    assert_eq!((p.gis[0].gpu, p.gis[0].start), (1, 0));
}

#[test]
fn the_palette_runs_named_commands_and_reports_errors() {
    let mut h = Harness::demo(80, 24, Theme::color());
    h.keys(":step<Space>1h30m<Enter>");
    assert_eq!(h.app.session.now_s(), 5400.0);
    h.keys(":bogus<Enter>");
    assert!(h.message().contains("unknown command `bogus`"), "{}", h.message());
    h.keys(":add<Space>a30-24gb<Space>2g.12gb<Space>at=a30-1:1@2<Enter>");
    assert!(h.message().contains("placed on a30-1/1@2"), "{}", h.message());
    // Up recalls the last command.
    h.keys(": <Up>");
    assert_eq!(
        h.app.overlays.palette.as_ref().unwrap().input,
        "add a30-24gb 2g.12gb at=a30-1:1@2"
    );
    h.keys("<Esc> :opti<Tab>");
    assert_eq!(h.app.overlays.palette.as_ref().unwrap().input, "optimize ");
}

#[test]
fn mouse_click_selects_the_slice_under_it() {
    use crossterm::event::{Event, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let mut h = Harness::demo(80, 24, Theme::color());
    // Find a100-2's row and the column of its GPU 1, slice 4 from the recorded areas.
    let target = h
        .app
        .view
        .hits
        .borrow()
        .iter()
        .find(|(_, t)| {
            *t == migplan::tui::app::Target::Slice {
                host: 2,
                gpu: 1,
                slice: 4,
            }
        })
        .map(|(r, _)| *r)
        .unwrap();
    h.app
        .sender()
        .send(migplan::tui::app::Msg::Term(Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: target.x,
            row: target.y,
            modifiers: KeyModifiers::NONE,
        })))
        .unwrap();
    h.keys("");
    assert_eq!(
        (h.app.view.sel.host, h.app.view.sel.gpu, h.app.view.sel.slice),
        (2, 1, 4)
    );
    assert!(h.screen().contains("GPU a100-2/1"), "{}", h.screen());
}

#[test]
fn relayout_preview_lists_every_vm_the_drain_displaces() {
    let mut h = Harness::demo(160, 48, Theme::color());
    // a100-0, GPU 0 is selected; the palette names a layout, L opens on the first.
    h.keys(":relayout<Space>all-7g.40gb<Enter>");
    let fleet = h.app.session.fleet().clone();
    let menu = migplan::ops::layouts::embedded();
    let a100 = fleet.catalog.model_id("a100-40gb").unwrap();
    let layout = menu.get(a100, "all-7g.40gb").unwrap();
    let truth = migplan::ops::relayout::drain_preview(&fleet, 0, 0, layout).unwrap();
    let view = h.app.overlays.relayout.as_ref().expect("the preview is open");
    assert_eq!(view.preview.as_ref().unwrap(), &truth);
    assert_eq!(
        truth.displaced.len(),
        fleet.hosts[0].vms.len(),
        "the whole host drains"
    );
    let screen = h.screen();
    assert!(screen.contains("Re-layout a100-0/GPU 0"), "{screen}");
    for d in &truth.displaced {
        let row = screen
            .lines()
            .find(|l| l.contains(&format!("│ #{} ", d.vm)))
            .unwrap_or_else(|| panic!("no row for VM {}:\n{screen}", d.vm));
        match &d.elsewhere_host {
            Some(host) => assert!(row.contains(&format!("free place on {host}")), "{row}"),
            None => assert!(row.contains("none: interrupted"), "{row}"),
        }
    }
    insta::assert_snapshot!("relayout_160x48", screen);
    // j chooses the next layout; the preview follows; nothing in the fleet changes.
    let before = h.app.overlays.relayout.as_ref().unwrap().choice;
    h.keys("j");
    let r = h.app.overlays.relayout.as_ref().unwrap();
    assert_eq!(r.choice, (before + 1) % r.layouts.len());
    let next = r.layouts[r.choice];
    assert_eq!(
        r.preview.as_ref().unwrap().layout,
        next.name,
        "the preview is of the chosen layout"
    );
    h.keys("<Esc>");
    assert!(h.app.overlays.relayout.is_none());
    assert_eq!(h.app.session.fleet(), &fleet);
    assert!(!h.app.session.modified());
    // A name the GPU's class does not have is an error naming the choices.
    h.keys(":relayout<Space>bogus<Enter>");
    assert!(h.message().contains("no layout `bogus`"), "{}", h.message());
    h.keys("L");
    assert!(h.app.overlays.relayout.is_some());
}

#[test]
fn fig1_detail_explains_the_three_fragmentation_cases() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/fig1.toml");
    let s = migplan::session::Session::open(std::path::Path::new(path)).unwrap();
    let mut h = Harness::new(s, 160, 48, Theme::color());
    let detail = |h: &Harness| -> String {
        // The GPU detail is the right half of the screen's top.
        h.screen()
            .lines()
            .take(19)
            .map(|l| l.chars().skip(80).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // (a) fig1a: slices 0, 2, 4 free, not contiguous: no 1g.10gb (third profile) fits.
    h.keys("p p");
    let d = detail(&h);
    assert!(d.contains("Where can 1g.10gb start?"), "{d}");
    assert!(d.contains("[Fig. 1a") && d.contains("contiguous"), "{d}");
    assert!(!d.contains("✓"), "{d}");
    // (b) fig1b: 2g.10gb, two free contiguous slices, none at a permitted start.
    h.keys("p j");
    let d = detail(&h);
    assert!(
        d.contains("GPU fig1b/0") && d.contains("Where can 2g.10gb start?"),
        "{d}"
    );
    assert!(d.contains("[Fig. 1b"), "{d}");
    // (c) fig1c: only slice 7 is free; compacting the GPU makes room for a 1g.5gb.
    h.keys("j P P P");
    let d = detail(&h);
    assert!(
        d.contains("GPU fig1c/0") && d.contains("Where can 1g.5gb start?"),
        "{d}"
    );
    assert!(
        d.contains("[Fig. 1b · fits after compaction") && d.contains("Fig. 1c"),
        "{d}"
    );
    // The lines come from the engine's explanation, start by start.
    let f = h.app.session.fleet();
    let gpu = &f.hosts[2].gpus[0];
    let ex = migplan::explore::explain_gpu(f.catalog, gpu, 0);
    for e in &ex.starts {
        assert!(d.contains(&format!("✗ {}: ", e.start)), "start {}: {d}", e.start);
    }
    insta::assert_snapshot!("fig1c_detail", d);
}
