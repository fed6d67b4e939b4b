//! `:mode` on a fleet with all three GPU modes (tests/it/fixtures/modes.toml): the preview is a
//! drain (the host when MIG is on either side, else the GPU), each leaver's destination is the
//! first-fit place of the fleet after the change (worked out by hand below), applying adopts the
//! preview as one undo step, and the fleet invariants hold after any sequence of changes.

use migplan::fleet::{GpuMode, Shape};
use migplan::ops::mode::{self, Destination, ModeTarget};
use migplan::scenario;
use migplan::session::{parse_command, update, Action, Outcome, Session};
use rand::{Rng, SeedableRng};

/// The fixture as the file places it (see `modes_without_pending_shapes`).
fn session() -> Session {
    let text = crate::common::fleet::modes_without_pending_shapes();
    Session::new(scenario::parse(&text, "modes.toml").unwrap(), None).unwrap()
}

fn host(s: &Session, name: &str) -> usize {
    s.fleet().hosts.iter().position(|h| h.name == name).unwrap()
}

fn run(s: &mut Session, line: &str) -> anyhow::Result<Outcome> {
    let a = parse_command(s, line)?;
    update(s, a)
}

fn dest(p: &mode::ModePreview, vm: u64) -> Destination {
    p.leavers.iter().find(|l| l.vm == vm).unwrap().to.clone()
}

#[test]
fn shared_to_whole_drains_the_gpu_only_and_moves_the_shares_to_the_next_shared_gpu() {
    let s = session();
    let mix = host(&s, "mix");
    let p = s.mode_preview(mix, 2, &ModeTarget::Whole).unwrap();
    assert!(!p.host_drain);
    assert!(!p.needs_reset);
    // Only the two shares of GPU 2 leave; VM 3 (40 GB) then VM 4 (32 GB) both fit on GPU 3 (80 GB).
    let ids: Vec<u64> = p.leavers.iter().map(|l| l.vm).collect();
    assert_eq!(ids, vec![3, 4]);
    for id in [3, 4] {
        match dest(&p, id) {
            Destination::Moved(pl) => assert_eq!((pl.host, pl.gis[0].gpu), (mix, 3)),
            o => panic!("VM {id}: {o:?}"),
        }
    }
    assert_eq!(p.after.hosts[mix].gpus[2].mode, GpuMode::Whole);
    assert_eq!(p.after.hosts[mix].gpus[3].shared_gb(), 72);
    p.after.check_invariants().unwrap();
}

#[test]
fn an_isolated_share_leaving_a_gpu_made_shared_goes_to_a_free_whole_gpu() {
    let s = session();
    let (mix, g1) = (host(&s, "mix"), host(&s, "gang-1"));
    let p = s.mode_preview(mix, 1, &ModeTarget::Shared).unwrap();
    assert!(!p.host_drain);
    assert_eq!(p.leavers.len(), 1);
    // mix has no other whole GPU; gang-0 is held by a gang; gang-1's GPU 0 is the first free one.
    match dest(&p, 2) {
        Destination::Moved(pl) => assert_eq!((pl.host, pl.gis[0].gpu), (g1, 0)),
        o => panic!("{o:?}"),
    }
    p.after.check_invariants().unwrap();
}

#[test]
fn a_mig_change_drains_the_host_and_h100_needs_no_reset() {
    let s = session();
    let mix = host(&s, "mix");
    let layout = mode::parse_target(s.fleet(), mix, 2, &["mig", "all-balanced"]).unwrap();
    let p = s.mode_preview(mix, 2, &layout).unwrap();
    assert!(p.host_drain);
    assert!(!p.needs_reset);
    let ids: Vec<u64> = p.leavers.iter().map(|l| l.vm).collect();
    assert_eq!(ids, vec![1, 2, 3, 4], "every GPU pod of the host");
    assert_eq!(dest(&p, 1), Destination::InPlace);
    assert_eq!(dest(&p, 2), Destination::InPlace);
    assert!(matches!(dest(&p, 3), Destination::Moved(ref pl) if pl.host == mix && pl.gis[0].gpu == 3));
    assert!(matches!(dest(&p, 4), Destination::Moved(ref pl) if pl.host == mix && pl.gis[0].gpu == 3));
    let text = p.lines(s.fleet()).join("\n");
    assert!(text.contains("needs no GPU reset"), "{text}");
    assert!(text.contains("drain: host mix"), "{text}");
}

#[test]
fn a_share_with_no_room_anywhere_stays_pending() {
    let mut s = session();
    let mix = host(&s, "mix");
    // Fill GPU 3 first so that VM 3 (40 GB) has nowhere else to go.
    run(&mut s, "mode! mix/3 whole").unwrap();
    let p = s.mode_preview(mix, 2, &ModeTarget::Whole).unwrap();
    // GPU 3 is now whole, no other shared GPU: both shares stay pending.
    assert_eq!(p.stranded(), vec![3, 4]);
    assert!(p
        .lines(s.fleet())
        .iter()
        .any(|l| l.contains("nowhere: stays pending")));
    p.after.check_invariants().unwrap();
    assert!(p.after.pending().contains(&3));
}

#[test]
fn enabling_mig_on_an_a100_says_it_needs_a_reset() {
    let text = r#"
name = "a100"
[[host]]
name = "n"
cores = 64
ram_gb = 512
gpus = ["a100-40gb"]
modes = ["whole"]
[workload]
enabled = false
"#;
    let s = Session::new(scenario::parse(text, "a100.toml").unwrap(), None).unwrap();
    let t = mode::parse_target(s.fleet(), 0, 0, &["mig", "all-balanced"]).unwrap();
    let p = s.mode_preview(0, 0, &t).unwrap();
    assert!(p.needs_reset);
    assert!(p
        .lines(s.fleet())
        .iter()
        .any(|l| l == "enabling MIG on this model needs a GPU reset"));
}

#[test]
fn preview_changes_nothing_apply_is_one_undo_step() {
    let mut s = session();
    let before = s.fleet().clone();
    let rev = s.revision();
    let o = run(&mut s, "mode mix/2 whole").unwrap();
    assert!(matches!(o, Outcome::Info(_)), "{o:?}");
    assert_eq!(s.fleet(), &before);
    assert_eq!(s.revision(), rev);
    let o = run(&mut s, "mode! mix/2 whole").unwrap();
    assert!(matches!(o, Outcome::Changed(_)), "{o:?}");
    let mix = host(&s, "mix");
    assert_eq!(s.fleet().hosts[mix].gpus[2].mode, GpuMode::Whole);
    s.fleet().check_invariants().unwrap();
    update(&mut s, Action::Undo).unwrap();
    assert_eq!(s.fleet(), &before);
    update(&mut s, Action::Redo).unwrap();
    assert_eq!(s.fleet().hosts[mix].gpus[2].mode, GpuMode::Whole);
}

#[test]
fn bad_mode_commands_are_refused_with_one_line() {
    let mut s = session();
    for (line, want) in [
        ("mode nohost/0 whole", "no GPU `nohost/0`"),
        ("mode mix/9 whole", "no GPU `mix/9`"),
        ("mode mix/0 mig no-such-layout", "unknown layout `no-such-layout`"),
        ("mode mix/0 mig all-disabled", "has MIG off"),
        ("mode mix/0 mig", "needs a layout name"),
        ("mode mix/0 turbo", "say whole, shared or mig LAYOUT"),
        ("mode mix/2 shared", "already shared"),
        ("mode mix/0 mig all-balanced", ""),
    ] {
        let r = run(&mut s, line);
        if want.is_empty() {
            assert!(r.is_ok(), "{line}: {r:?}");
            continue;
        }
        let e = format!("{:#}", r.unwrap_err());
        assert!(e.contains(want), "{line}: {e}");
        assert!(!e.contains('\n'), "{line}: {e}");
    }
    // A layout of another class.
    let t = mode::parse_target(s.fleet(), 0, 0, &["mig", "all-1g.5gb"]);
    let t = t.unwrap();
    let e = s.mode_preview(0, 0, &t).unwrap_err().to_string();
    assert!(e.contains("is for a100"), "{e}");
}

/// Random sequences of `:mode!` over every GPU: after each change the invariants hold, no
/// isolated share sits on a shared GPU, and undoing the whole sequence restores the fleet.
#[test]
fn any_sequence_of_mode_changes_keeps_the_invariants() {
    let targets = [
        "whole",
        "shared",
        "mig all-balanced",
        "mig all-1g.10gb",
        "mig whole",
    ];
    for seed in 0..12u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut s = session();
        let before = s.fleet().clone();
        let mut applied = 0;
        for _ in 0..8 {
            let h = rng.gen_range(0..s.fleet().hosts.len());
            let k = rng.gen_range(0..s.fleet().hosts[h].gpus.len());
            let t = targets[rng.gen_range(0..targets.len())];
            let line = format!("mode! {}/{k} {t}", s.fleet().hosts[h].name);
            match run(&mut s, &line) {
                Ok(_) => applied += 1,
                Err(e) => assert!(format!("{e:#}").contains("already"), "{line}: {e:#}"),
            }
            let f = s.fleet();
            f.check_invariants()
                .unwrap_or_else(|e| panic!("seed {seed} {line}: {e}"));
            for v in f.vms() {
                if let (Shape::Share { isolation: true, .. }, Some(p)) = (v.shape, &v.placement) {
                    for sl in &p.gis {
                        assert_ne!(
                            f.hosts[p.host].gpus[sl.gpu].mode,
                            GpuMode::Shared,
                            "seed {seed} {line}"
                        );
                    }
                }
            }
        }
        for _ in 0..applied {
            update(&mut s, Action::Undo).unwrap();
        }
        assert_eq!(s.fleet(), &before, "seed {seed}");
    }
}

fn placed_on(s: &Session, o: &Outcome) -> (String, usize) {
    let Outcome::Changed(msg) = o else { panic!("{o:?}") };
    let id: u64 = msg.split_whitespace().nth(1).unwrap().parse().unwrap();
    let p = s.fleet().vm(id).unwrap().placement.clone().unwrap();
    (s.fleet().hosts[p.host].name.clone(), p.gis[0].gpu)
}

#[test]
fn add_takes_the_three_shapes_and_undo_takes_each_back() {
    let mut s = session();
    let before = s.fleet().clone();
    // mix/2 has 8 GB free, mix/3 80 GB: 10 GB goes to mix/3, 8 GB fits mix/2 exactly.
    let o = run(&mut s, "add h100-80gb share=10 weight=0.2").unwrap();
    assert_eq!(placed_on(&s, &o), ("mix".into(), 3));
    let o = run(&mut s, "add h100-80gb share=8").unwrap();
    assert_eq!(placed_on(&s, &o), ("mix".into(), 2));
    // Isolated: a free whole GPU, never a shared one; mix/1 is held, so gang-1/0.
    let o = run(&mut s, "add h100-80gb share=10 isolation=true").unwrap();
    assert_eq!(placed_on(&s, &o), ("gang-1".into(), 0));
    // A gang of 4: gang-1 has GPUs 1-7 free and whole.
    let o = run(&mut s, "add h100-80gb gang=4 tenant=train").unwrap();
    assert_eq!(placed_on(&s, &o), ("gang-1".into(), 1));
    s.fleet().check_invariants().unwrap();
    for _ in 0..4 {
        update(&mut s, Action::Undo).unwrap();
    }
    assert_eq!(s.fleet(), &before);
    for (line, want) in [
        ("add h100-80gb share=81", "1 to 80 GB"),
        ("add h100-80gb gang=9", "1 to 8 GPUs"),
        ("add h100-80gb share=10 gang=2", "not both"),
        ("add h100-80gb share=10 weight=0", "> 0"),
        ("add h100-80gb share=10 isolation=maybe", "true or false"),
    ] {
        let e = format!("{:#}", run(&mut s, line).unwrap_err());
        assert!(e.contains(want), "{line}: {e}");
    }
}
