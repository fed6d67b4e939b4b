//! Steps of the clock as requests: every time-advancing action hands out an `Outcome::Step`
//! that a worker thread runs on a copy of the simulator, reporting progress, and that can be
//! cancelled at a 10 s boundary. These tests run the request on a thread under OrigaMIG (which
//! makes optimizer calls on its steps) and check the result against the blocking step, and that
//! a cancelled step leaves a whole, undoable state.

use migplan::session::{
    update, update_blocking, Action, Outcome, Session, StepProgress, StepRequest, STEP_S,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

/// The demo under OrigaMIG: its waiting whole-GPU request makes the first check call the
/// optimizer, and the workload's arrivals bring more.
fn demo_origamig() -> Session {
    let mut s = Session::demo().unwrap();
    update(&mut s, Action::SetPolicy("origamig".into())).unwrap();
    s
}

fn request(s: &mut Session, action: Action) -> StepRequest {
    match update(s, action).unwrap() {
        Outcome::Step(r) => *r,
        o => panic!("a step hands out a request, not {o:?}"),
    }
}

/// Everything the log says, for comparing two sessions.
fn log_lines(s: &Session) -> Vec<(f64, String)> {
    s.log().map(|e| (e.t, e.text.clone())).collect()
}

#[test]
fn a_step_on_a_worker_thread_reports_progress_and_lands_like_a_blocking_step() {
    let mut s = demo_origamig();
    let before = s.fleet().clone();
    let req = request(&mut s, Action::StepFor(7200.0));
    assert_eq!(s.now_s(), 0.0, "asking for a step changes nothing yet");
    assert_eq!(s.fleet(), &before);
    assert_eq!((req.from_s, req.target_s), (0.0, 7200.0));

    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        req.run(Arc::new(AtomicBool::new(false)), move |p| tx.send(p).unwrap())
            .unwrap()
    });
    let result = worker.join().unwrap();
    let reports: Vec<StepProgress> = rx.iter().collect();
    // One report per 10 s step, in order, each at a step boundary, calls never going back.
    assert_eq!(reports.len(), 720);
    for (k, p) in reports.iter().enumerate() {
        assert_eq!(p.now_s, (k + 1) as f64 * STEP_S);
        assert_eq!(p.target_s, 7200.0);
    }
    assert!(reports.windows(2).all(|w| w[0].calls <= w[1].calls));
    assert_eq!(reports.last().unwrap().fraction(), 1.0);
    assert!(!result.cancelled);
    assert!(result.calls > 0, "OrigaMIG called the optimizer on the way");
    assert_eq!(reports.last().unwrap().calls, result.calls);

    let out = update(&mut s, Action::Stepped(Box::new(result))).unwrap();
    assert!(out.message().starts_with("stepped 2h ("), "{}", out.message());
    assert!(out.message().contains("optimizer call"), "{}", out.message());
    assert_eq!(s.now_s(), 7200.0);
    s.fleet().check_invariants().unwrap();

    // The same step run at once gives the same session.
    let mut blocking = demo_origamig();
    update_blocking(&mut blocking, Action::StepFor(7200.0)).unwrap();
    assert_eq!(s.fleet(), blocking.fleet());
    assert_eq!(log_lines(&s), log_lines(&blocking));
    assert_eq!(s.gauges(), blocking.gauges());
    assert_eq!(s.samples(), blocking.samples());

    // One step is one undo step.
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.now_s(), 0.0);
    assert_eq!(s.fleet(), &before);
}

#[test]
fn a_cancelled_step_keeps_a_whole_state_at_a_step_boundary_and_undoes_in_one() {
    let mut s = demo_origamig();
    let before = s.fleet().clone();
    let req = request(&mut s, Action::StepFor(7200.0));
    // Cancel once half an hour has passed: the flag is read right after that step's report.
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let result = std::thread::spawn(move || {
        req.run(cancel, move |p| {
            if p.now_s >= 1800.0 {
                flag.store(true, Ordering::SeqCst);
            }
        })
        .unwrap()
    })
    .join()
    .unwrap();
    assert!(result.cancelled);
    assert_eq!(
        result.reached_s(),
        1800.0,
        "stopped at the boundary it was cancelled at"
    );
    result.fleet().check_invariants().unwrap();

    let out = update(&mut s, Action::Stepped(Box::new(result))).unwrap();
    let msg = out.message();
    assert!(
        msg.starts_with("step cancelled at 2026-01-05 08:30:00 (of 2026-01-05 10:00:00)"),
        "{msg}"
    );
    assert_eq!(s.now_s(), 1800.0);
    s.fleet().check_invariants().unwrap();
    assert!(s.modified());

    // It is the state a step of exactly half an hour gives, plus one log line saying so.
    let mut blocking = demo_origamig();
    update_blocking(&mut blocking, Action::StepFor(1800.0)).unwrap();
    assert_eq!(s.fleet(), blocking.fleet());
    let mut want = log_lines(&blocking);
    want.push((1800.0, msg.clone()));
    assert_eq!(log_lines(&s), want);

    // Undo goes back to before the step, redo to the cancelled state.
    update(&mut s, Action::Undo).unwrap();
    assert_eq!((s.now_s(), s.fleet()), (0.0, &before));
    update(&mut s, Action::Redo).unwrap();
    assert_eq!(s.now_s(), 1800.0);
    assert_eq!(s.fleet(), blocking.fleet());
}

#[test]
fn a_step_result_for_a_changed_session_is_refused() {
    let mut s = demo_origamig();
    let req = request(&mut s, Action::StepFor(600.0));
    let result = req.run(Arc::default(), |_| {}).unwrap();
    update(&mut s, Action::SetArrivals(false)).unwrap();
    let fleet = s.fleet().clone();
    let e = update(&mut s, Action::Stepped(Box::new(result))).unwrap_err();
    assert!(e.to_string().contains("the step was dropped"), "{e}");
    assert_eq!(s.now_s(), 0.0);
    assert_eq!(s.fleet(), &fleet);
}

#[test]
fn a_cancelled_play_tick_pauses_and_the_run_stays_one_undo_step() {
    let mut s = demo_origamig();
    update(&mut s, Action::TogglePlay).unwrap();
    update_blocking(&mut s, Action::PlayTick(600.0)).unwrap();
    let req = request(&mut s, Action::PlayTick(600.0));
    assert!(req.play);
    let cancel = Arc::new(AtomicBool::new(true));
    let result = req.run(cancel, |_| {}).unwrap();
    assert!(result.cancelled);
    assert_eq!(result.reached_s(), 610.0, "the first boundary of the tick");
    update(&mut s, Action::Stepped(Box::new(result))).unwrap();
    assert!(!s.playing(), "cancelling a tick stops play");
    assert_eq!(s.now_s(), 610.0);
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.now_s(), 0.0, "the ticks of the run are one undo step");
    assert_eq!(s.policy_name(), "origamig");
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.policy_name(), "ff", "then only the policy switch is left");
    assert!(!s.can_undo());
}
