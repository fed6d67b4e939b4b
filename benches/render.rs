//! Frame time of the planner: one full frame (fleet view, GPU detail, gauges, log, charts,
//! status bar) of a filled fleet of 128 hosts (the paper's §6.1 fleet) and of 4096 hosts (§6.7),
//! drawn into a 160x48 `TestBackend`. Only visible rows are drawn, so the large fleet should
//! cost about what the small one costs.

use criterion::{criterion_group, criterion_main, Criterion};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use migplan::fleet::{GiRequest, Vm, VmKind};
use migplan::session::Session;
use migplan::session::{Action, CallMode};
use migplan::tui::app::Msg;
use migplan::tui::theme::Theme;
use migplan::tui::App;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::Duration;

/// `hosts` hosts, three quarters with two A100s and a quarter with two A30s, filled by first fit
/// with a deterministic mix of profiles until a request no longer fits.
fn filled(hosts: usize) -> Session {
    let a100 = hosts * 3 / 4;
    let text = format!(
        "name = \"bench-{hosts}\"\n\
         [[host_group]]\nprefix = \"a100-\"\ncount = {a100}\ncores = 80\nram_gb = 512\ngpus = [\"a100-40gb\", \"a100-40gb\"]\n\
         [[host_group]]\nprefix = \"a30-\"\ncount = {}\ncores = 80\nram_gb = 512\ngpus = [\"a30-24gb\", \"a30-24gb\"]\n",
        hosts - a100
    );
    let mut sc = migplan::scenario::parse(&text, "bench.toml").unwrap();
    let c = sc.fleet.catalog;
    let models = [c.model_id("a100-40gb").unwrap(), c.model_id("a30-24gb").unwrap()];
    let mut misses = 0;
    let mut i = 0usize;
    while misses < 50 {
        let m = models[usize::from(i % 5 == 4)];
        let profiles: Vec<usize> = c.model(m).cf_profiles().collect();
        let p = profiles[(i * 7 + i / 3) % profiles.len()];
        let compute = c.model(m).profiles[p].compute as u32;
        let vm = Vm {
            id: 0,
            shape: migplan::fleet::Shape::Mig,
            gis: vec![GiRequest { model: m, profile: p }],
            cores: 4 * compute,
            ram_gb: 16 * compute,
            kind: VmKind::Job,
            arrival: 0.0,
            lifetime: Some(3600.0 * (1 + i % 24) as f64),
            admitted_at: Some(0.0),
            tenant: None,
            placement: None,
        };
        match sc.fleet.ff_placement(&vm) {
            Some(pl) => {
                sc.fleet.add_placed(vm, pl).unwrap();
            }
            None => misses += 1,
        }
        i += 1;
    }
    Session::new(sc, None).unwrap()
}

fn frames(c: &mut Criterion) {
    for hosts in [128usize, 4096] {
        let mut app = App::new(filled(hosts), Theme::color());
        // Put the cursor in the middle of the fleet, so the view scrolls.
        app.view.sel.host = hosts / 2;
        let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
        c.bench_function(&format!("frame_{hosts}_hosts_160x48"), |b| {
            b.iter(|| {
                term.draw(|f| f.render_widget(&app, f.area())).unwrap();
            })
        });
    }
}

/// Input-to-redraw latency while an optimizer call runs: a whole-fleet OPT solve of the filled
/// 128-host fleet runs on its worker thread (one solver thread, up to the 10 s time limit) and
/// each iteration handles one key (`j`, next host) and draws the frame, as the event loop does.
fn input_during_solve(c: &mut Criterion) {
    let mut app = App::new(filled(128), Theme::color());
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    app.dispatch(Action::Optimize(CallMode::Opt));
    assert!(app.workers.solving.is_some(), "the solve started");
    let mut g = c.benchmark_group("while_solving");
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("key_to_frame_128_hosts_160x48", |b| {
        b.iter(|| {
            let key = KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE);
            app.handle(Msg::Term(Event::Key(key)));
            term.draw(|f| f.render_widget(&app, f.area())).unwrap();
        })
    });
    g.finish();
    // The solver reports through the loop's channel, which this bench does not read: the
    // elapsed time says how long the solve had been running when the measurement ended.
    if let Some(s) = &app.workers.solving {
        eprintln!(
            "solve running for {:.1} s at the end",
            s.started.elapsed().as_secs_f64()
        );
    }
}

criterion_group!(benches, frames, input_during_solve);
criterion_main!(benches);
