//! The worker threads of the TUI: a step of the clock and an optimizer call run off the
//! event loop, report progress through its channel and can be cancelled, so the screen keeps
//! drawing and the keys keep working while they run.

use super::*;

impl App {
    /// Sets the cancel flags of the running solve and step (on the way out).
    pub(super) fn stop_workers(&mut self) {
        if let Some(s) = &self.workers.solving {
            s.cancel.store(true, Ordering::SeqCst);
        }
        if let Some(s) = &self.workers.stepping {
            s.cancel.store(true, Ordering::SeqCst);
        }
    }

    /// Runs a step of the clock on a worker thread, which reports progress and its result
    /// through the loop's channel; or, with `background_steps` off, at once on this thread.
    pub(super) fn start_step(&mut self, req: session::StepRequest) {
        let cancel = Arc::new(AtomicBool::new(false));
        if !self.workers.background_steps {
            let result = req.run(cancel, |_| {}).map_err(|e| format!("{e:#}"));
            self.finish_step(result);
            return;
        }
        let flag = cancel.clone();
        let tx = self.workers.tx.clone();
        let (from_s, target_s, play) = (req.from_s, req.target_s, req.play);
        let id = self.workers.steps_started;
        self.workers.steps_started += 1;
        std::thread::spawn(move || {
            let progress_tx = tx.clone();
            let mut last = Instant::now();
            let mut last_calls = 0;
            let result = req.run(flag, move |p| {
                // A finished optimizer call is news at once; the clock, every 100 ms.
                if p.calls != last_calls || last.elapsed() >= STEP_PROGRESS_EVERY {
                    last = Instant::now();
                    last_calls = p.calls;
                    let _ = progress_tx.send(Msg::Stepper(id, StepMsg::Progress(p)));
                }
            });
            let _ = tx.send(Msg::Stepper(
                id,
                StepMsg::Done(Box::new(result.map_err(|e| format!("{e:#}")))),
            ));
        });
        self.workers.stepping = Some(Stepping {
            id,
            started: Instant::now(),
            progress: StepProgress {
                from_s,
                now_s: from_s,
                target_s,
                calls: 0,
            },
            cancel,
            cancelled: false,
            play,
        });
        if !play {
            let key = self
                .keymap
                .key_for(Layer::Step, &Command::Cancel)
                .unwrap_or_else(|| "Esc".into());
            self.say(
                format!(
                    "stepping {}… ({key} cancels)",
                    session::format_duration(target_s - from_s)
                ),
                Tone::Info,
            );
        }
    }

    /// A report of step `id`; one of a play tick dropped since ([`App::drop_play_tick`]) is
    /// ignored.
    pub(super) fn on_stepper(&mut self, id: u64, m: StepMsg) {
        if self.workers.stepping.as_ref().is_none_or(|s| s.id != id) {
            return;
        }
        match m {
            StepMsg::Progress(p) => {
                if let Some(s) = &mut self.workers.stepping {
                    s.progress = p;
                }
            }
            StepMsg::Done(result) => {
                self.workers.stepping = None;
                self.finish_step(*result);
            }
        }
    }

    /// Takes a step's result into the session (the reducer checks that nothing changed since
    /// the step was asked for).
    fn finish_step(&mut self, result: std::result::Result<StepResult, String>) {
        match result {
            Ok(r) => match session::update(&mut self.session, Action::Stepped(Box::new(r))) {
                Ok(o) => {
                    self.say(o.message(), o.tone().into());
                    self.clamp_slice();
                }
                Err(e) => self.say(format!("{e:#}"), Tone::Error),
            },
            Err(e) => {
                if self.session.playing() {
                    // The failed tick must not be retried every 250 ms.
                    let _ = session::update(&mut self.session, Action::TogglePlay);
                }
                self.say(format!("step: {e}"), Tone::Error);
            }
        }
    }

    pub(super) fn start_solve(&mut self, req: session::SolveRequest) {
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let tx = self.workers.tx.clone();
        let mode = req.mode;
        std::thread::spawn(move || {
            let progress_tx = tx.clone();
            let result = req.run(flag, move |p| {
                let _ = progress_tx.send(Msg::Solver(SolverMsg::Progress(p)));
            });
            let _ = tx.send(Msg::Solver(SolverMsg::Done(Box::new(
                result.map_err(|e| format!("{e:#}")),
            ))));
        });
        self.workers.solving = Some(Solving {
            mode,
            started: Instant::now(),
            progress: SolveProgress::default(),
            cancel,
            cancelled: false,
        });
        self.view.preview_scroll = 0;
        self.say(format!("optimizing ({})…", mode.name()), Tone::Info);
    }

    pub(super) fn on_solver(&mut self, m: SolverMsg) {
        match m {
            SolverMsg::Progress(p) => {
                if let Some(s) = &mut self.workers.solving {
                    s.progress = p;
                }
            }
            SolverMsg::Done(result) => {
                self.workers.solving = None;
                match *result {
                    Ok(p) => self.dispatch(Action::Proposed(Box::new(p))),
                    Err(e) => self.say(format!("optimizer: {e}"), Tone::Error),
                }
            }
        }
    }
}
