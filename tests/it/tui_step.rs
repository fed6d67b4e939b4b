//! Stepping the clock from the planner's loop runs on a worker thread, as a solve does: the
//! screen shows the step's progress (mode STEPPING), keys that would change the session are
//! refused with a message while navigation keeps working, and Esc cancels at a 10 s boundary.
//! Keys are handled with `Harness::press`, which leaves the worker's reports queued, so the
//! state seen while stepping does not depend on how fast the worker is.

use crate::common::Harness;
use migplan::session::{self, update_blocking, Action, Session, StepProgress, STEP_S};
use migplan::tui::keymap::Layer;
use migplan::tui::theme::Theme;

/// The harness with steps on the worker thread, as in the terminal.
fn background(session: Session, w: u16, h: u16) -> Harness {
    let mut h = Harness::new(session, w, h, Theme::color());
    h.app.workers.background_steps = true;
    h
}

fn status_line(h: &Harness) -> String {
    h.screen().lines().last().unwrap_or_default().to_string()
}

#[test]
fn a_step_under_origamig_runs_in_the_background_with_progress_and_lands_like_a_blocking_one() {
    let mut h = background(Session::demo().unwrap(), 160, 48);
    h.keys(":policy<Space>origamig<Enter>");
    assert_eq!(h.app.session.policy_name(), "origamig");
    let before = h.app.session.fleet().clone();

    h.press(":step<Space>2h<Enter>");
    let st = h
        .app
        .workers
        .stepping
        .as_ref()
        .expect("the step runs on a worker thread");
    assert_eq!((st.progress.from_s, st.progress.target_s), (0.0, 7200.0));
    assert_eq!(h.app.layer(), Layer::Step);
    assert_eq!(h.app.session.now_s(), 0.0, "the session waits for the result");
    let status = status_line(&h);
    assert!(status.starts_with(" STEPPING "), "{status}");
    assert!(
        status.contains("2026-01-05 08:00:00 of 2026-01-05 10:00:00 (0%) · 0 optimizer calls"),
        "{status}"
    );
    assert!(status.contains("Esc cancel"), "{status}");
    assert!(
        h.message().starts_with("stepping 2h… (Esc cancels)"),
        "{}",
        h.message()
    );

    // A progress report from the worker shows in the status line.
    let id = h.app.workers.stepping.as_ref().unwrap().id;
    h.app.handle(migplan::tui::app::Msg::Stepper(
        id,
        migplan::tui::app::StepMsg::Progress(StepProgress {
            from_s: 0.0,
            now_s: 1800.0,
            target_s: 7200.0,
            calls: 2,
        }),
    ));
    h.draw();
    let status = status_line(&h);
    assert!(
        status.contains("2026-01-05 08:30:00 of 2026-01-05 10:00:00 (25%) · 2 optimizer calls · "),
        "{status}"
    );

    h.wait_solver();
    assert!(h.app.workers.stepping.is_none());
    assert_eq!(h.app.session.now_s(), 7200.0);
    assert!(h.message().starts_with("stepped 2h ("), "{}", h.message());
    assert!(status_line(&h).starts_with(" FLEET "), "{}", status_line(&h));

    // The same as the step run at once by the reducer.
    let mut blocking = Session::demo().unwrap();
    session::update(&mut blocking, Action::SetPolicy("origamig".into())).unwrap();
    update_blocking(&mut blocking, Action::StepFor(7200.0)).unwrap();
    assert_eq!(h.app.session.fleet(), blocking.fleet());
    assert_eq!(h.app.session.log().count(), blocking.log().count());
    assert_eq!(h.app.session.gauges(), blocking.gauges());

    h.keys("u");
    assert_eq!(h.app.session.now_s(), 0.0, "one step, one undo");
    assert_eq!(h.app.session.fleet(), &before);
}

#[test]
fn while_stepping_changes_are_refused_navigation_works_and_esc_cancels_at_a_boundary() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/paper-128.toml");
    let s = Session::open(std::path::Path::new(path)).unwrap();
    let mut h = background(s, 160, 48);
    h.keys(":policy<Space>origamig<Enter>");
    let before = h.app.session.fleet().clone();
    let revision = h.app.session.revision();

    // 48 hours of OrigaMIG on 128 hosts: minutes of optimizer calls.
    h.press(":step<Space>48h<Enter>");
    assert!(h.app.workers.stepping.is_some());
    let refused = |h: &Harness| {
        let m = h.message();
        assert!(m.starts_with("refused: the clock is stepping"), "{m}");
        assert!(m.contains("press Esc to cancel it"), "{m}");
    };
    h.press("a");
    refused(&h);
    assert!(h.app.overlays.form.is_none(), "no add-VM form");
    h.press(".");
    refused(&h);
    h.press(">");
    refused(&h);
    h.press("x");
    refused(&h);
    assert!(h.app.overlays.confirm.is_none(), "no removal question");
    h.press("o");
    refused(&h);
    assert!(h.app.workers.solving.is_none(), "no solve started");
    h.press("u");
    refused(&h);
    h.press(":policy<Space>ff<Enter>");
    refused(&h);
    assert_eq!(h.app.session.policy_name(), "origamig");
    assert_eq!(h.app.session.revision(), revision, "nothing changed");
    // Navigation works.
    h.press("j j");
    assert_eq!(h.app.view.sel.host, 2);
    h.press("k");
    assert_eq!(h.app.view.sel.host, 1);
    // q asks (the step would be lost); n goes back to the running step.
    h.press("q");
    assert!(
        h.screen().contains("A step of the clock is running"),
        "{}",
        h.screen()
    );
    h.press("n");
    assert!(!h.app.quit);
    assert!(h.app.workers.stepping.is_some());

    h.press("<Esc>");
    assert!(h.app.workers.stepping.as_ref().unwrap().cancelled);
    assert!(status_line(&h).contains("cancelling"), "{}", status_line(&h));
    h.wait_solver();
    assert!(h.app.workers.stepping.is_none());
    let now = h.app.session.now_s();
    assert!(
        now > 0.0 && now < 48.0 * 3600.0,
        "cancelled short of the target: {now}"
    );
    assert_eq!(now % STEP_S, 0.0, "at a 10 s step boundary: {now}");
    h.app.session.fleet().check_invariants().unwrap();
    let m = h.message();
    assert!(m.starts_with("step cancelled at 2026-01-05 "), "{m}");
    assert!(m.contains("(of 2026-01-07 00:00:00)"), "{m}");
    assert!(status_line(&h).starts_with(" FLEET "));

    // The keys work again, and undo takes the partial step back in one.
    h.keys("u");
    assert_eq!(h.app.session.now_s(), 0.0);
    assert_eq!(h.app.session.fleet(), &before);
}
