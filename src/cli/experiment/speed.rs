//! `migplan experiment speed`: how long simulating OrigaMIG takes beside TC on the same scenario
//! and seed (CPU seconds of this process for each run, and their ratio), and how long the
//! planner's play takes per simulated day under OrigaMIG, stepped headless through the session as
//! the TUI steps it; then how fast the planner's keys answer while it plays on: the TUI's own
//! loop on its thread with the play ticks on their worker thread, keys sent at intervals, each
//! timed to the first frame that shows its effect. `--markdown FILE` writes the tables with the
//! command line, commit and date.

use crate::cli::simulate;
use crate::scenario;
use crate::session::{self, Action, Outcome, Session};
use crate::tui::latency::{self, KeySample, Prober};
use crossterm::event::KeyCode;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct SpeedArgs {
    /// Scenario (fleet and workload).
    #[arg(long, default_value = "scenarios/paper-128.toml")]
    pub scenario: PathBuf,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 0.85)]
    pub load: f64,
    /// Hours of warm-up (default: the scenario's).
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Hours measured (default: the scenario's).
    #[arg(long)]
    pub hours: Option<f64>,
    /// Policies run one after another; the ratio is each one's CPU time over the first's.
    #[arg(long, value_delimiter = ',', default_value = "tc,origamig")]
    pub policies: Vec<String>,
    /// Simulated days the planner plays under OrigaMIG before the timed days (its session
    /// starts from the scenario's start state, not a warm fleet).
    #[arg(long, default_value_t = 1)]
    pub play_warmup_days: u32,
    /// Simulated days of play timed, one by one (0: no play measurement).
    #[arg(long, default_value_t = 1)]
    pub play_days: u32,
    /// Simulated seconds per play tick (the TUI's default play speed: 60 s per tick).
    #[arg(long, default_value_t = 60.0)]
    pub play_tick_s: f64,
    /// Keys sent to the planner while it plays on after the timed days (0: no key
    /// measurement): cursor down and up, and every tenth a pause and a resume (Space).
    #[arg(long, default_value_t = 100)]
    pub play_keys: u32,
    /// Policy settings over the scenario's, for the runs and the planner's play, repeatable
    /// (`--policy-set reenable='"room"'`); checked as in a scenario file.
    #[arg(long = "policy-set", value_name = "KEY=VALUE")]
    pub policy_set: Vec<String>,
    /// Also write the results as a markdown file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

/// CPU seconds (user + system) this process has used, from `/proc/self/stat` (Linux; in clock
/// ticks of 1/100 s, the kernel's USER_HZ). `None` elsewhere.
pub(super) fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: split after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// One simulation run's costs.
struct RunCost {
    policy: String,
    cpu_s: Option<f64>,
    wall_s: f64,
    active_hosts: f64,
    calls: u64,
    call_s_total: f64,
    trigger_checks: u64,
    trigger_check_s_total: f64,
    /// Calls ended by the node budget, and by the wall-clock safety limit (not reproducible).
    node_limited: u64,
    wall_limited: u64,
    by_trigger: Vec<crate::metrics::CallTally>,
}

/// CPU seconds if known, else wall seconds: what the ratio compares.
fn cost(r: &RunCost) -> f64 {
    r.cpu_s.unwrap_or(r.wall_s)
}

/// `x` over `first`, or `n/a` when `first` is below the clock's resolution (1/100 s).
fn ratio(x: f64, first: f64) -> String {
    if first < 0.05 {
        "n/a".into()
    } else {
        format!("{:.1}", x / first)
    }
}

fn fmt_cpu(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |c| format!("{c:.2}"))
}

pub fn speed(a: &SpeedArgs) -> anyhow::Result<()> {
    anyhow::ensure!(!a.policies.is_empty(), "give at least one policy");
    anyhow::ensure!(
        a.play_tick_s >= session::STEP_S && a.play_tick_s.is_finite(),
        "--play-tick-s must be at least {} s, not {}",
        session::STEP_S,
        a.play_tick_s
    );
    if let Some(path) = &a.markdown {
        super::markdown::check_target(path)?;
    }
    let mut base = scenario::load(&a.scenario)?;
    super::set_policy(&mut base, &a.policy_set)?;
    let mut runs = Vec::new();
    for p in &a.policies {
        let mut s = base.clone();
        let name = simulate::apply(
            &mut s,
            &simulate::Overrides {
                policy: Some(p.clone()),
                seed: Some(a.seed),
                load: Some(a.load),
                hours: a.hours,
                warmup: a.warmup,
            },
        )?;
        let c0 = process_cpu_s();
        let row = simulate::run_one(&s, &name, &mut |_| {})?;
        let cpu_s = process_cpu_s().zip(c0).map(|(b, a)| b - a);
        eprintln!("{name}: {} CPU s, {:.1} s wall", fmt_cpu(cpu_s), row.wall_s);
        let m = &row.summary;
        runs.push(RunCost {
            policy: name,
            cpu_s,
            wall_s: row.wall_s,
            active_hosts: m.active_hosts,
            calls: m.calls,
            call_s_total: m.call_s_total,
            trigger_checks: m.trigger_checks,
            trigger_check_s_total: m.trigger_check_s_total,
            node_limited: m.calls_node_limited,
            wall_limited: m.calls_wall_limited,
            by_trigger: m.calls_by_trigger.clone(),
        });
    }
    let (days, played) = play_days(a)?;
    let keys = match played {
        Some(s) if a.play_keys > 0 => Some(play_keys(s, a)?),
        _ => None,
    };

    let mut o = String::new();
    let warmup = a.warmup.unwrap_or(base.workload.warmup_h);
    let hours = a.hours.unwrap_or(base.workload.measure_h);
    let _ = writeln!(
        o,
        "{}, seed {}, load {}, {} h warm-up + {} h measured{}\n",
        a.scenario.display(),
        a.seed,
        a.load,
        warmup,
        hours,
        super::policy_set_text(&a.policy_set, "; policy settings: ")
    );
    let _ = writeln!(
        o,
        "| policy | CPU s | wall s | x first | active hosts | calls | call s total | trigger checks | trigger check s total | calls node-limited | calls wall-limited |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let first = cost(&runs[0]);
    for r in &runs {
        let _ = writeln!(
            o,
            "| {} | {} | {:.2} | {} | {:.2} | {} | {:.2} | {} | {:.3} | {} | {} |",
            r.policy,
            fmt_cpu(r.cpu_s),
            r.wall_s,
            ratio(cost(r), first),
            r.active_hosts,
            r.calls,
            r.call_s_total,
            r.trigger_checks,
            r.trigger_check_s_total,
            r.node_limited,
            r.wall_limited
        );
    }
    if runs.iter().any(|r| !r.by_trigger.is_empty()) {
        let _ = writeln!(
            o,
            "\nCalls by trigger and neighborhood, whole run (solved: the solver ran; unchanged: of \
             those, the placements stayed; migrations: in the plans applied; empty: nothing to decide, no solve; repeats: a \
             neighborhood a solve had proven unchanged, skipped):\n"
        );
        let _ = writeln!(
            o,
            "| policy | trigger | neighborhood | solved | solved s | unchanged | unchanged s | migrations | empty | empty s | repeats | repeats s |"
        );
        let _ = writeln!(o, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in &runs {
            for t in &r.by_trigger {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {:.2} | {} | {:.2} | {} | {} | {:.3} | {} | {:.3} |",
                    r.policy,
                    t.trigger,
                    t.neighborhood,
                    t.solved,
                    t.solved_s,
                    t.unchanged,
                    t.unchanged_s,
                    t.moves,
                    t.empty,
                    t.empty_s,
                    t.repeat,
                    t.repeat_s
                );
            }
        }
    }
    if !days.is_empty() {
        let _ = writeln!(
            o,
            "\nPlanner play under origamig, headless through the session ({} s per tick, after {} \
             simulated day(s) of play from the scenario's start):\n",
            a.play_tick_s, a.play_warmup_days
        );
        let _ = writeln!(o, "| day | wall s | CPU s | optimizer calls | slowest tick s |");
        let _ = writeln!(o, "|---:|---:|---:|---:|---:|");
        for d in &days {
            let _ = writeln!(
                o,
                "| {} | {:.2} | {} | {} | {:.2} |",
                d.day,
                d.wall_s,
                fmt_cpu(d.cpu_s),
                d.calls,
                d.slowest_tick_s
            );
        }
    }
    if let Some(k) = &keys {
        let _ = writeln!(
            o,
            "\nKeys while the planner plays on under origamig ({} s per tick, the TUI's loop on its own \
             thread with a {}x{} test terminal, play ticks on their worker thread as in the terminal; \
             one key every {}-{} ms; latency: from the key's send into the loop's channel to the end \
             of the first frame that shows its effect; simulated time played meanwhile: {}, {} \
             optimizer calls):\n",
            a.play_tick_s,
            KEYS_W,
            KEYS_H,
            KEY_GAP_MS.0,
            KEY_GAP_MS.1,
            session::format_duration(k.played_s),
            k.calls
        );
        let _ = writeln!(
            o,
            "| keys | count | sent while a tick ran | median ms | p95 ms | max ms | over 100 ms |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|");
        let all: Vec<KeySample> = k.cursor.iter().chain(&k.play).copied().collect();
        let rows: [(&str, Vec<KeySample>); 4] = [
            ("cursor (Down, Up)", k.cursor.clone()),
            ("play/pause (Space)", k.play.clone()),
            ("all", all.clone()),
            (
                "all sent while a tick ran",
                all.into_iter().filter(|x| x.during_step).collect(),
            ),
        ];
        for (name, xs) in rows {
            let lat: Vec<Duration> = xs.iter().map(|x| x.latency).collect();
            let Some((med, p95, max)) = latency::quantiles(&lat) else {
                continue;
            };
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            let _ = writeln!(
                o,
                "| {name} | {} | {} | {:.1} | {:.1} | {:.1} | {} |",
                xs.len(),
                xs.iter().filter(|x| x.during_step).count(),
                ms(med),
                ms(p95),
                ms(max),
                lat.iter().filter(|d| **d > Duration::from_millis(100)).count()
            );
        }
    }
    print!("{o}");
    if let Some(path) = &a.markdown {
        let p = super::markdown::Provenance::now();
        let md = format!(
            "# Simulation speed\n\nCommand: `{}`\n\nCommit: {}; date: {}\n\n{o}",
            p.command, p.commit, p.date
        );
        super::markdown::write(path, &md)?;
    }
    Ok(())
}

/// One simulated day of play.
struct PlayDay {
    day: u32,
    wall_s: f64,
    cpu_s: Option<f64>,
    calls: usize,
    slowest_tick_s: f64,
}

/// Plays the scenario under origamig through the session, tick by tick as the TUI does (each
/// tick's step run on this thread instead of a worker), and times each day after the warm-up.
/// Returns the days and the session, still playing.
fn play_days(a: &SpeedArgs) -> anyhow::Result<(Vec<PlayDay>, Option<Session>)> {
    if a.play_days == 0 {
        return Ok((Vec::new(), None));
    }
    let mut sc = scenario::load(&a.scenario)?;
    super::set_policy(&mut sc, &a.policy_set)?;
    sc.workload.seed = a.seed;
    sc.workload.load = a.load;
    let mut s = Session::new(sc, Some(a.scenario.clone()))?;
    session::update_blocking(&mut s, Action::SetPolicy("origamig".into()))?;
    session::update_blocking(&mut s, Action::TogglePlay)?;
    let t0 = s.now_s();
    let mut out = Vec::new();
    for day in 0..a.play_warmup_days + a.play_days {
        let end = t0 + 86_400.0 * (day + 1) as f64;
        let (w0, c0, calls0) = (Instant::now(), process_cpu_s(), calls(&s));
        let mut slowest: f64 = 0.0;
        while s.now_s() < end - 1e-6 {
            let tick = Instant::now();
            match session::update_blocking(&mut s, Action::PlayTick(a.play_tick_s))? {
                Outcome::Info(m) | Outcome::Cancelled(m) => {
                    anyhow::bail!("play stopped at {:.0} s: {m}", s.now_s())
                }
                Outcome::Solve(_) => anyhow::bail!("play asked for a solve"),
                Outcome::Changed(_) | Outcome::Pending(_) | Outcome::Step(_) => {}
            }
            slowest = slowest.max(tick.elapsed().as_secs_f64());
        }
        if day >= a.play_warmup_days {
            out.push(PlayDay {
                day: day + 1,
                wall_s: w0.elapsed().as_secs_f64(),
                cpu_s: process_cpu_s().zip(c0).map(|(b, a)| b - a),
                calls: calls(&s) - calls0,
                slowest_tick_s: slowest,
            });
            eprintln!("play day {}: {:.1} s wall", day + 1, w0.elapsed().as_secs_f64());
        }
    }
    Ok((out, Some(s)))
}

/// The test terminal of the key measurement (the size the docs' screens use).
const KEYS_W: u16 = 160;
const KEYS_H: u16 = 48;
/// Least and most wall-clock time between two keys (spread so that keys land at every point of
/// a tick).
const KEY_GAP_MS: (u64, u64) = (150, 450);
/// A key whose effect has not shown by then is a failed measurement.
const KEY_TIMEOUT: Duration = Duration::from_secs(30);

/// The keys' latencies, and the play that ran meanwhile.
struct PlayKeys {
    cursor: Vec<KeySample>,
    play: Vec<KeySample>,
    played_s: f64,
    calls: usize,
}

/// Plays on from `s` (playing) in the TUI's own loop and sends `a.play_keys` keys into it, one
/// every 150-450 ms: cursor down and up between the first two hosts (the GPU pane's title shows
/// the host), and every tenth key a pause then a resume (the gauges' clock line shows which).
fn play_keys(s: Session, a: &SpeedArgs) -> anyhow::Result<PlayKeys> {
    anyhow::ensure!(s.playing(), "the session is not playing");
    let hosts: Vec<String> = s.fleet().hosts.iter().take(2).map(|h| h.name.clone()).collect();
    anyhow::ensure!(hosts.len() == 2, "the key measurement needs two hosts");
    let (t0, calls0) = (s.now_s(), s.optimizer_calls());
    let tick_s = a.play_tick_s;
    let p = Prober::start(s, KEYS_W, KEYS_H, move |app| app.view.play_step_s = tick_s)?;
    let playing = format!("▶ playing ({}/tick)", session::format_duration(tick_s));
    p.wait_for(&playing, KEY_TIMEOUT)?;
    let (mut cursor, mut play) = (Vec::new(), Vec::new());
    let mut host = 0;
    // A fixed sequence of gaps (a linear congruential generator), the same on every run.
    let mut rng = a
        .seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    for i in 0..a.play_keys {
        match i % 10 {
            8 => play.push(p.key(latency::plain(KeyCode::Char(' ')), " paused", KEY_TIMEOUT)?),
            9 => play.push(p.key(latency::plain(KeyCode::Char(' ')), &playing, KEY_TIMEOUT)?),
            _ => {
                let (code, to) = if host == 0 {
                    (KeyCode::Down, 1)
                } else {
                    (KeyCode::Up, 0)
                };
                cursor.push(p.key(
                    latency::plain(code),
                    &format!("GPU {}/0 ", hosts[to]),
                    KEY_TIMEOUT,
                )?);
                host = to;
            }
        }
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let gap = KEY_GAP_MS.0 + (rng >> 33) % (KEY_GAP_MS.1 - KEY_GAP_MS.0 + 1);
        std::thread::sleep(Duration::from_millis(gap));
    }
    let end = p.quit()?;
    eprintln!("keys: {} sent during play", cursor.len() + play.len());
    Ok(PlayKeys {
        cursor,
        play,
        played_s: end.now_s - t0,
        calls: end.optimizer_calls - calls0,
    })
}

/// Optimizer calls the session's policy has made.
fn calls(s: &Session) -> usize {
    s.optimizer_calls()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_needs_a_measurable_first_time() {
        assert_eq!(ratio(1.0, 0.0), "n/a");
        assert_eq!(ratio(3.0, 2.0), "1.5");
    }

    #[test]
    fn cpu_time_reads_and_grows() {
        let Some(a) = process_cpu_s() else {
            return; // not Linux: nothing to read
        };
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_secs_f64() < 0.1 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = process_cpu_s().expect("read once, reads again");
        assert!(a >= 0.0 && b >= a, "{a} then {b}");
    }
}
