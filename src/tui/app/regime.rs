//! The regime view's state: the scenario's `[regime]` (static layouts or dynamic MIG) played
//! over simulated time by [`crate::regime::Run`], on the fleet as it stands when the view opens.
//! Its clock is its own: the fleet view's session does not change while it plays. A play tick
//! runs on the loop's thread (a tick of simulated minutes takes well under a millisecond), so
//! the keys answer while it plays.

use super::*;
use crate::regime::{self, Run};
use crate::scenario::RegimeKind;
use crate::tui::command::RegimeTarget;

/// Simulated seconds per play tick when the view opens.
pub(crate) const REGIME_PLAY_STEP_S: f64 = 600.0;

/// A regime played in the regime view.
pub struct RegimePlay {
    pub run: Run,
    /// Where the planner's menu comes from.
    pub menu: String,
    /// Requests of the scenario that are not MIG instances, left out.
    pub skipped: u64,
    /// Whether the view is on screen (closing it keeps the run and its clock).
    pub open: bool,
    pub playing: bool,
    /// Simulated seconds per play tick.
    pub step_s: f64,
    /// First node shown.
    pub scroll: usize,
    /// Drains already announced on the message line.
    pub drains_seen: usize,
}

impl RegimePlay {
    /// The run of the session's scenario under its `[regime]`, with the fleet as it stands now.
    pub fn of_session(session: &Session) -> Result<RegimePlay> {
        let sc = session.to_scenario();
        let settings = sc.regime.clone().unwrap_or_default();
        if settings.kind == RegimeKind::Paper {
            anyhow::bail!(
                "the scenario's regime is the paper's (no [regime] kind = \"static-layouts\" or \"dynamic\"); \
                 the fleet view plays it"
            );
        }
        let menu_path = settings.menu.as_ref().map(|m| {
            let p = PathBuf::from(m);
            match session.path().and_then(Path::parent) {
                Some(dir) if p.is_relative() && !p.exists() => dir.join(p),
                _ => p,
            }
        });
        let menu = menu_path
            .as_deref()
            .map(crate::ops::menu_file::load)
            .transpose()
            .map_err(|e| anyhow::anyhow!("field `regime.menu`: {e:#}"))?;
        let (setup, skipped) = regime::setup::from_scenario(&sc, &settings, menu.as_ref())?;
        let mut run = Run::new(setup);
        // The queue as it stands: the scenario's pending pods arrive at time 0.
        run.run_until(0.0);
        Ok(RegimePlay {
            run,
            menu: menu_path.map_or_else(|| "assets/layouts.toml".to_string(), |p| p.display().to_string()),
            skipped,
            open: true,
            playing: false,
            step_s: REGIME_PLAY_STEP_S,
            scroll: 0,
            drains_seen: 0,
        })
    }

    /// Whether the run reached its horizon.
    pub fn finished(&self) -> bool {
        self.run.now() >= self.run.window().1
    }
}

use std::path::Path;

impl App {
    /// Opens the regime view (building the run the first time), or closes it.
    pub(super) fn toggle_regime(&mut self) {
        if let Some(r) = &mut self.regime {
            r.open = !r.open;
            if !r.open {
                r.playing = false;
                self.say(
                    "regime view closed (its clock is kept; R opens it again)",
                    Tone::Info,
                );
            }
            return;
        }
        match RegimePlay::of_session(&self.session) {
            Ok(r) => {
                let kind = r.run.settings().0.kind.name();
                self.regime = Some(r);
                let key = self
                    .keymap
                    .key_for(Layer::Regime, &Command::RegimePlay)
                    .unwrap_or_else(|| "Space".into());
                self.say(
                    format!("regime {kind}: {key} plays, ? lists the keys"),
                    Tone::Info,
                );
            }
            Err(e) => self.say(format!("regime view: {e:#}"), Tone::Error),
        }
    }

    /// A command of the regime view; hands back the commands it does not take.
    pub(super) fn run_regime_command(&mut self, cmd: Command) -> Option<Command> {
        use Command as C;
        let r = self.regime.as_mut()?;
        match cmd {
            C::Regime => self.toggle_regime(),
            C::RegimePlay => {
                if r.finished() {
                    r.playing = false;
                    self.say("the regime's run reached its horizon", Tone::Info);
                } else {
                    r.playing = !r.playing;
                    let msg = if r.playing {
                        format!(
                            "playing: {} of simulated time per tick",
                            session::format_duration(r.step_s)
                        )
                    } else {
                        "paused".into()
                    };
                    self.say(msg, Tone::Info);
                }
            }
            C::RegimeStep(s) => {
                r.playing = false;
                let to = r.run.now() + s as f64;
                r.run.run_until(to);
                self.say(
                    format!("stepped {}", session::format_duration(s as f64)),
                    Tone::Info,
                );
                self.announce_drains();
            }
            C::RegimeNext(target) => {
                r.playing = false;
                self.regime_next(target);
            }
            C::Speed(d) => {
                r.step_s = match d {
                    UpDown::Up => (r.step_s * 2.0).min(7.0 * 86400.0),
                    UpDown::Down => (r.step_s / 2.0).max(60.0),
                };
                let msg = format!(
                    "play speed: {} of simulated time per tick",
                    session::format_duration(r.step_s)
                );
                self.say(msg, Tone::Info);
            }
            C::Down => r.scroll = (r.scroll + 1).min(r.run.nodes_view().len().saturating_sub(1)),
            C::Up => r.scroll = r.scroll.saturating_sub(1),
            C::PageDown => r.scroll = (r.scroll + 5).min(r.run.nodes_view().len().saturating_sub(1)),
            C::PageUp => r.scroll = r.scroll.saturating_sub(5),
            C::Top => r.scroll = 0,
            other => return Some(other),
        }
        None
    }

    /// Steps to the next event, past the planner's next run, or to the next drain (at most to
    /// the horizon).
    fn regime_next(&mut self, target: RegimeTarget) {
        let Some(r) = self.regime.as_mut() else { return };
        let horizon = r.run.window().1;
        let drains = r.run.drains().len();
        let msg = match target {
            RegimeTarget::Event => match r.run.next_event_at() {
                Some(t) => {
                    r.run.run_until(t);
                    "stepped to the next event".to_string()
                }
                None => {
                    r.run.run_until(horizon);
                    "no event left: at the horizon".into()
                }
            },
            RegimeTarget::Plan => match r.run.next_planner_at() {
                Some(t) => {
                    r.run.run_until(t);
                    "stepped past the layout planner's run".into()
                }
                None => "no layout planner in this regime (dynamic MIG)".into(),
            },
            RegimeTarget::Drain => {
                while r.run.drains().len() == drains && r.run.now() < horizon {
                    match r.run.next_event_at() {
                        Some(t) => r.run.run_until(t),
                        None => r.run.run_until(horizon),
                    }
                }
                if r.run.drains().len() > drains {
                    "stepped to the next drain".into()
                } else {
                    "no drain before the horizon".into()
                }
            }
        };
        self.say(msg, Tone::Info);
        self.announce_drains();
    }

    /// A play tick of the regime view.
    pub(super) fn regime_tick(&mut self) {
        let Some(r) = self.regime.as_mut().filter(|r| r.playing) else {
            return;
        };
        let to = r.run.now() + r.step_s;
        r.run.run_until(to);
        if r.finished() {
            r.playing = false;
            self.say("the regime's run reached its horizon", Tone::Info);
        }
        self.announce_drains();
    }

    /// Says on the message line which drains happened since the last one announced.
    fn announce_drains(&mut self) {
        let Some(r) = self.regime.as_mut() else { return };
        let all = r.run.drains();
        if all.len() <= r.drains_seen {
            return;
        }
        let d = &all[all.len() - 1];
        let more = all.len() - r.drains_seen - 1;
        let text = format!(
            "drain at {}: {} ({} pods evicted, {} GPU{} re-laid out){}",
            regime_clock(d.t),
            d.node,
            d.evicted,
            d.gpus.len(),
            if d.gpus.len() == 1 { "" } else { "s" },
            if more > 0 {
                format!(" and {more} more since the last step")
            } else {
                String::new()
            }
        );
        r.drains_seen = all.len();
        self.say(text, Tone::Warning);
    }
}

/// Simulated time of a regime run as `day D HH:MM` (day 0 is the start).
pub(crate) fn regime_clock(t: f64) -> String {
    let s = t.max(0.0).round() as u64;
    format!("day {} {:02}:{:02}", s / 86400, s / 3600 % 24, s / 60 % 60)
}
