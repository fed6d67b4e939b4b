//! Key latency, measured on the planner's own loop: [`App::run`] runs on a thread of its own
//! (the UI thread, as in the terminal) against a test terminal whose frames are timestamped,
//! steps of the clock run on the worker threads as in the terminal, and keys are sent into the
//! loop's channel the way the terminal's input thread sends them. A key's latency runs from its
//! send to the end of the first frame that shows its effect (a text that was not on the screen
//! when the key was sent). `migplan experiment speed` reports it while OrigaMIG plays, and the
//! tests check it while a long play tick runs.

use super::app::{App, Msg};
use super::theme::Theme;
use crate::session::Session;
use anyhow::{anyhow, bail, Result};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::Terminal;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the frames have shown, shared by the UI thread (which draws) and the prober.
#[derive(Default)]
struct Watch {
    /// The text a key's effect shows, while a key waits for it.
    want: Option<String>,
    /// When the first frame holding `want` was flushed.
    seen: Option<Instant>,
    /// The whole screen of the last frame, one line per row.
    screen: String,
    frames: u64,
}

type Shared = Arc<(Mutex<Watch>, Condvar)>;

/// A [`TestBackend`] that, after each frame, notes its screen and when it was flushed.
struct Probe {
    inner: TestBackend,
    watch: Shared,
}

fn text_of(b: &TestBackend) -> String {
    let buf = b.buffer();
    let a = buf.area;
    let mut s = String::with_capacity((a.width as usize + 1) * a.height as usize);
    for y in a.top()..a.bottom() {
        for x in a.left()..a.right() {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

impl Backend for Probe {
    type Error = <TestBackend as Backend>::Error;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }
    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.clear()
    }
    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)
    }
    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()?;
        let screen = text_of(&self.inner);
        let now = Instant::now();
        let (lock, cv) = &*self.watch;
        let mut w = lock.lock().unwrap_or_else(|e| e.into_inner());
        if w.seen.is_none() && w.want.as_deref().is_some_and(|t| screen.contains(t)) {
            w.seen = Some(now);
        }
        w.screen = screen;
        w.frames += 1;
        cv.notify_all();
        Ok(())
    }
}

/// One key's measurement.
#[derive(Debug, Clone, Copy)]
pub struct KeySample {
    pub latency: Duration,
    /// The last frame before the key showed a step of the clock running (mode STEPPING: under
    /// play, a play tick on its worker thread).
    pub during_step: bool,
}

/// What the loop's thread hands back when it ends.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    /// Simulated time of the session when the loop ended.
    pub now_s: f64,
    /// Optimizer calls the session's arrival policy had made by then.
    pub optimizer_calls: usize,
}

/// The planner's loop on its own thread, drawing into a `width`×`height` test terminal.
pub struct Prober {
    tx: Sender<Msg>,
    watch: Shared,
    ui: Option<JoinHandle<Result<Ended>>>,
}

impl Prober {
    /// Opens the app on `session` (`setup` runs on it before the loop starts) and runs its loop
    /// ([`App::run`]) on a new thread, with steps of the clock on worker threads as in the
    /// terminal. Returns once the first frame is drawn.
    pub fn start(
        session: Session,
        width: u16,
        height: u16,
        setup: impl FnOnce(&mut App) + Send + 'static,
    ) -> Result<Prober> {
        let watch: Shared = Default::default();
        let (tx_back, rx_back) = std::sync::mpsc::channel();
        let w = watch.clone();
        let ui = std::thread::Builder::new()
            .name("ui".into())
            .spawn(move || -> Result<Ended> {
                let mut app = App::new(session, Theme::color());
                app.workers.background_steps = true;
                setup(&mut app);
                let _ = tx_back.send(app.sender());
                let mut term = Terminal::new(Probe {
                    inner: TestBackend::new(width, height),
                    watch: w,
                })?;
                app.run(&mut term)?;
                Ok(Ended {
                    now_s: app.session.now_s(),
                    optimizer_calls: app.session.optimizer_calls(),
                })
            })?;
        let tx = rx_back
            .recv()
            .map_err(|_| anyhow!("the planner's loop ended before it started"))?;
        let p = Prober {
            tx,
            watch,
            ui: Some(ui),
        };
        p.wait_for("", Duration::from_secs(10))?;
        Ok(p)
    }

    /// The screen of the last frame drawn.
    pub fn screen(&self) -> String {
        self.watch
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .screen
            .clone()
    }

    /// Waits until a frame holds `text`.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> Result<()> {
        let (lock, cv) = &*self.watch;
        let t0 = Instant::now();
        let mut w = lock.lock().unwrap_or_else(|e| e.into_inner());
        while w.frames == 0 || !w.screen.contains(text) {
            let left = timeout.saturating_sub(t0.elapsed());
            if left.is_zero() {
                bail!(
                    "`{text}` did not appear in {timeout:?}; the screen:\n{}",
                    w.screen
                );
            }
            w = cv.wait_timeout(w, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        Ok(())
    }

    /// Sends `key` into the loop as the terminal's input thread does and waits for the first
    /// frame that shows `want`, which the screen must not show when the key is sent.
    pub fn key(&self, key: KeyEvent, want: &str, timeout: Duration) -> Result<KeySample> {
        let (lock, cv) = &*self.watch;
        let mut w = lock.lock().unwrap_or_else(|e| e.into_inner());
        if w.screen.contains(want) {
            bail!("`{want}` is on the screen before the key {key:?}:\n{}", w.screen);
        }
        let during_step = w
            .screen
            .lines()
            .last()
            .is_some_and(|l| l.starts_with(" STEPPING "));
        w.want = Some(want.to_string());
        w.seen = None;
        let sent = Instant::now();
        self.tx
            .send(Msg::Term(Event::Key(key)))
            .map_err(|_| anyhow!("the planner's loop has ended"))?;
        let seen = loop {
            if let Some(t) = w.seen {
                break t;
            }
            let left = timeout.saturating_sub(sent.elapsed());
            if left.is_zero() {
                w.want = None;
                bail!(
                    "`{want}` did not appear within {timeout:?} of the key {key:?}; the screen:\n{}",
                    w.screen
                );
            }
            w = cv.wait_timeout(w, left).unwrap_or_else(|e| e.into_inner()).0;
        };
        w.want = None;
        Ok(KeySample {
            latency: seen.saturating_duration_since(sent),
            during_step,
        })
    }

    /// Quits (q, and y when the planner asks) and returns the session's clock at the end; a
    /// step still running is cancelled, as in the terminal.
    pub fn quit(mut self) -> Result<Ended> {
        let _ = self.tx.send(Msg::Term(Event::Key(plain(KeyCode::Char('q')))));
        let _ = self.tx.send(Msg::Term(Event::Key(plain(KeyCode::Char('y')))));
        let ui = self.ui.take().expect("the loop's thread is joined once");
        ui.join().map_err(|_| anyhow!("the planner's loop panicked"))?
    }
}

impl Drop for Prober {
    /// Without [`Prober::quit`] (a failed measurement), the loop is told to quit all the same.
    fn drop(&mut self) {
        if self.ui.is_some() {
            let _ = self.tx.send(Msg::Term(Event::Key(plain(KeyCode::Char('q')))));
            let _ = self.tx.send(Msg::Term(Event::Key(plain(KeyCode::Char('y')))));
        }
    }
}

/// A key without modifiers.
pub fn plain(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Median, 95th percentile and maximum of `xs` (nearest rank), or `None` when empty.
pub fn quantiles(xs: &[Duration]) -> Option<(Duration, Duration, Duration)> {
    let mut v = xs.to_vec();
    v.sort();
    let at = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (!v.is_empty()).then(|| (at(0.5), at(0.95), v[v.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let ms = |x: u64| Duration::from_millis(x);
        let xs: Vec<Duration> = (1..=20).rev().map(ms).collect();
        assert_eq!(quantiles(&xs), Some((ms(10), ms(19), ms(20))));
        assert_eq!(quantiles(&[ms(7)]), Some((ms(7), ms(7), ms(7))));
        assert_eq!(quantiles(&[]), None);
    }
}
