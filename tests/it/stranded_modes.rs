//! Stranded capacity across GPU modes (docs/simulation.md): the fractional-GPU scheduling note's
//! fragmentation example, through the function the TUI's gauge calls.

use migplan::catalog::embedded;
use migplan::fleet::{Fleet, GiRequest, GiSlot, GpuMode, Host, Placement, Vm};
use migplan::metrics::{stranded_capacity, stranded_for};

fn h100() -> usize {
    embedded().model_id("h100-80gb").unwrap()
}

/// Two hosts of eight H100s: 16 GPUs, 112 compute slices (the note's "112 slices").
fn sixteen() -> Fleet {
    let hosts = (0..2)
        .map(|i| Host::new(format!("n{i}"), 256, 4096, vec![h100(); 8], 0))
        .collect();
    Fleet::new(embedded(), hosts)
}

fn one_g(id: u64) -> Vm {
    Vm::job(
        id,
        GiRequest::named(embedded(), "h100-80gb", &["1g.10gb"]).unwrap(),
        1,
        8,
    )
}

fn pending_3g(f: &mut Fleet) {
    let v = Vm::job(
        1000,
        GiRequest::named(embedded(), "h100-80gb", &["3g.40gb"]).unwrap(),
        1,
        8,
    );
    f.add_pending(v).unwrap();
}

#[test]
fn the_notes_fragmentation_example_strands_52_spread_and_3_packed() {
    // Spread: GI i on GPU i mod 16, so twelve GPUs get 4 and four get 3; within a GPU the
    // tenants sit on instances spread over the slices (as a fixed 7 x 1g.10gb layout hands them
    // out): starts 0, 4, 6 and then 2, so both halves a 3g.40gb needs hold a tenant.
    let mut spread = sixteen();
    let starts = [0u8, 4, 6, 2];
    for i in 0..60u64 {
        let gpu = (i % 16) as usize;
        let p = Placement {
            host: gpu / 8,
            gis: vec![GiSlot {
                gpu: gpu % 8,
                start: starts[(i / 16) as usize],
            }],
        };
        spread.add_placed(one_g(i + 1), p).unwrap();
    }
    pending_3g(&mut spread);
    spread.check_invariants().unwrap();
    let s = stranded_capacity(&spread);
    assert!(s.from_pending);
    assert_eq!((s.mig_free_slices, s.mig_stranded_slices), (52, 52));
    assert_eq!(s.profiles.len(), 1);
    assert_eq!(s.profiles[0].profile, "3g.40gb");
    assert_eq!(s.profiles[0].stranded_slices, 52);

    // Packed: first fit with the default GI placement (Eq. 3) fills 8 GPUs (56) and puts 4 on a
    // ninth, at starts 6, 5, 4, 0: the 3g.40gb fits neither at 0 nor at 4 there, so its 3 free
    // slices are stranded; the 49 free slices of the 7 empty GPUs are not.
    let mut packed = sixteen();
    for i in 0..60u64 {
        let v = one_g(i + 1);
        let p = packed.ff_placement(&v).unwrap();
        packed.add_placed(v, p).unwrap();
    }
    pending_3g(&mut packed);
    packed.check_invariants().unwrap();
    let used: Vec<usize> = packed
        .hosts
        .iter()
        .flat_map(|h| &h.gpus)
        .map(|g| g.gis.len())
        .collect();
    assert_eq!(used, [7, 7, 7, 7, 7, 7, 7, 7, 4, 0, 0, 0, 0, 0, 0, 0]);
    let ninth: Vec<u8> = packed.hosts[1].gpus[0].gis.iter().map(|g| g.start).collect();
    assert_eq!(ninth, [0, 4, 5, 6]);
    let p = stranded_capacity(&packed);
    assert_eq!((p.mig_free_slices, p.mig_stranded_slices), (52, 3));

    // The same 60 GIs spread over the GPUs but at Eq. 3's default starts (6, 5, 4, then 0):
    // the four GPUs with three GIs keep slices 0-3 free for the 3g.40gb (3 of their 4 free
    // compute slices usable), so this fleet strands 12 x 3 + 4 x 1 = 40.
    let mut default_spread = sixteen();
    for i in 0..60u64 {
        let gpu = (i % 16) as usize;
        let v = one_g(i + 1);
        let occ = default_spread.hosts[gpu / 8].gpus[gpu % 8].occ;
        let model = embedded().model(h100());
        let z = migplan::mig::default_start(model, &occ, v.gis[0].profile).unwrap();
        default_spread
            .add_placed(
                v,
                Placement {
                    host: gpu / 8,
                    gis: vec![GiSlot {
                        gpu: gpu % 8,
                        start: z,
                    }],
                },
            )
            .unwrap();
    }
    pending_3g(&mut default_spread);
    let d = stranded_capacity(&default_spread);
    assert_eq!((d.mig_free_slices, d.mig_stranded_slices), (52, 40));
}

#[test]
fn shared_gpus_strand_the_gb_no_pending_share_can_use() {
    let m = h100();
    let mut host = Host::new("n", 128, 1024, vec![m; 3], 0);
    for g in &mut host.gpus {
        g.mode = GpuMode::Shared;
    }
    let mut f = Fleet::new(embedded(), vec![host]);
    let on = |gpu| Placement {
        host: 0,
        gis: vec![GiSlot { gpu, start: 0 }],
    };
    // GPU 0: 70 GB taken, 10 free; GPU 1: 45 taken, 35 free; GPU 2 empty (80 free, never stranded).
    f.add_placed(Vm::share(0, m, 70, 0.5, false, 1, 1), on(0))
        .unwrap();
    f.add_placed(Vm::share(0, m, 45, 0.5, false, 1, 1), on(1))
        .unwrap();
    // A pending 20 GB share: GPU 0's 10 GB are stranded, GPU 1 takes one (20 of 35; 15 stranded).
    let want = Vm::share(0, m, 20, 0.2, false, 1, 1);
    let s = stranded_for(&f, &[&want]);
    assert_eq!((s.shared_free_gb, s.shared_stranded_gb), (125, 25));
    // With a 10 GB share pending as well, GPU 0's 10 GB and 30 of GPU 1's 35 are usable.
    let small = Vm::share(0, m, 10, 0.1, false, 1, 1);
    let s = stranded_for(&f, &[&want, &small]);
    assert_eq!(s.shared_stranded_gb, 5);
    // An isolated request never uses a shared GPU: it leaves all 45 GB stranded.
    let iso = Vm::share(0, m, 10, 0.1, true, 1, 1);
    assert_eq!(stranded_for(&f, &[&iso]).shared_stranded_gb, 45);
    assert!((stranded_for(&f, &[&iso]).shared_share() - 45.0 / 125.0).abs() < 1e-12);
}
