//! End to end: the real `migplan` binary in a real pseudo-terminal (tmux), driven by keys and
//! read back with `capture-pane`. Skipped, with a note, where tmux is not installed.

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "e2e"]).stdout).into_owned()
    }

    /// Waits until the screen contains `text` and two captures 100 ms apart agree (the program
    /// redraws on its own schedule; a capture taken mid-frame can hold half of the new frame).
    fn wait_for(&self, text: &str) -> String {
        let t0 = Instant::now();
        let mut last = String::new();
        loop {
            let s = self.screen();
            if s.contains(text) && s == last {
                return s;
            }
            last = s.clone();
            if t0.elapsed() > Duration::from_secs(20) {
                panic!("`{text}` never appeared; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Only this test's own server (its own socket) is stopped.
        let _ = self.run(&["kill-server"]);
    }
}

#[test]
fn the_binary_opens_the_demo_answers_keys_and_quits_cleanly() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; the end-to-end TUI test is skipped");
        return;
    }
    let t = Tmux {
        socket: format!("migplan-e2e-{}", std::process::id()),
    };
    let bin = env!("CARGO_BIN_EXE_migplan");
    let out = t.run(&["new-session", "-d", "-s", "e2e", "-x", "160", "-y", "48", bin]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = t.wait_for("Fleet");
    assert!(s.contains("a100-0") && s.contains("a30-1"), "{s}");
    assert!(s.contains("FLEET") && s.contains("demo"), "{s}");
    assert!(s.contains("Pending  1 waiting"), "{s}");
    // Help, generated from the key map, then back.
    t.keys(&["?"]);
    t.wait_for("Help · Fleet view");
    t.keys(&["Escape"]);
    t.wait_for("GPU a100-0/0");
    // Step an hour: the clock moves, the workload's requests arrive and VM 11 departs.
    assert!(s.contains("ff · arrivals on"), "{s}");
    t.keys(&[">"]);
    let s = t.wait_for("09:00:00");
    assert!(s.contains("depart") && s.contains("arrive"), "{s}");
    assert!(s.contains("admit") || s.contains("reject"), "{s}");
    // c switches the arrival policy; the status bar shows it.
    t.keys(&["c"]);
    t.wait_for("mfi · arrivals on");
    // L previews a re-layout of the selected GPU: the drain of its whole host.
    t.keys(&["L"]);
    let s = t.wait_for("Re-layout a100-0/GPU 0");
    assert!(
        s.contains("drains the whole host") && s.contains("meanwhile"),
        "{s}"
    );
    t.keys(&["Escape"]);
    t.wait_for("FLEET");
    // The state is modified: q asks, n keeps it running, q then y quits.
    t.keys(&["q"]);
    t.wait_for("Quit without saving?");
    t.keys(&["n"]);
    t.wait_for("cancelled");
    t.keys(&["q", "y"]);
    let t0 = Instant::now();
    while t.run(&["has-session", "-t", "e2e"]).status.success() {
        assert!(t0.elapsed() < Duration::from_secs(10), "the program did not quit");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_binary_plays_the_static_regime_and_answers_keys_while_it_plays() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; the end-to-end TUI test is skipped");
        return;
    }
    let t = Tmux {
        socket: format!("migplan-e2e-regime-{}", std::process::id()),
    };
    let bin = env!("CARGO_BIN_EXE_migplan");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/k8s-static.toml");
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "160",
        "-y",
        "48",
        bin,
        "tui",
        file,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The scenario's [regime] opens on the regime view, paused at time 0.
    let s = t.wait_for("Regime static-layouts · k8s-static · day 0 00:00");
    assert!(s.contains("Drains (0)") && s.contains("REGIME "), "{s}");
    // Space plays (10 min of simulated time per tick); the help opens over it while it plays.
    t.keys(&["Space"]);
    t.wait_for("REGIME PLAYING");
    t.keys(&["?"]);
    t.wait_for("Help · Regime view");
    t.keys(&["Escape"]);
    // The planner's second run (1 h) drains node-b; the message line says so as it happens.
    let s = t.wait_for("Drains (1)");
    assert!(s.contains("day 0 01:00 node-b: 1 pod(s) evicted"), "{s}");
    t.keys(&["Space"]);
    t.wait_for("paused");
    t.keys(&["q"]);
    let t0 = Instant::now();
    while t.run(&["has-session", "-t", "e2e"]).status.success() {
        assert!(t0.elapsed() < Duration::from_secs(10), "the program did not quit");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_binary_reports_a_bad_scenario_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[host]]\nname = \"h\"\ncores = 8\nram_gb = 16\ngpus = [\"a100-41gb\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_migplan"))
        .arg("tui")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.toml:5") && err.contains("a100-41gb"), "{err}");
}
