//! GPU modes (docs/model.md, "GPU modes"): whole and shared GPUs beside MIG ones, soft shares
//! and gangs in the fleet and in scenario files.

use crate::common::cli::{assert_one_line_error, migplan, temp_file};
use migplan::catalog::embedded;
use migplan::fleet::{Fleet, FleetError, GiSlot, GpuMode, Host, Placement, Shape, Vm};
use migplan::scenario;

const MODES: &str = include_str!("fixtures/modes.toml");

fn h100() -> usize {
    embedded().model_id("h100-80gb").unwrap()
}

/// One host of four H100s in the given modes.
fn host_fleet(modes: [GpuMode; 4]) -> Fleet {
    let mut host = Host::new("n", 128, 1024, vec![h100(); 4], 0);
    for (g, m) in host.gpus.iter_mut().zip(modes) {
        g.mode = m;
    }
    Fleet::new(embedded(), vec![host])
}

fn on(host: usize, gpus: &[usize]) -> Placement {
    Placement {
        host,
        gis: gpus.iter().map(|&gpu| GiSlot { gpu, start: 0 }).collect(),
    }
}

#[test]
fn the_fixture_loads_with_its_modes_shares_and_gangs() {
    let s = scenario::parse(MODES, "modes.toml").unwrap();
    let f = &s.fleet;
    f.check_invariants().unwrap();
    // Host groups come first in the fleet: gang-0, gang-1, then mix.
    let names: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["gang-0", "gang-1", "mix"]);
    let mix = &f.hosts[2];
    let modes: Vec<GpuMode> = mix.gpus.iter().map(|g| g.mode).collect();
    assert_eq!(
        modes,
        [GpuMode::Mig, GpuMode::Whole, GpuMode::Shared, GpuMode::Shared]
    );
    assert!(f.hosts[..2]
        .iter()
        .all(|h| h.gpus.iter().all(|g| g.mode == GpuMode::Whole)));
    // The isolated share holds GPU 1 alone; two soft shares take 72 of GPU 2's 80 GB.
    assert_eq!(mix.gpus[1].holder, Some(2));
    assert_eq!(mix.gpus[2].shared_gb(), 72);
    assert_eq!(mix.gpus[2].free_share_gb(embedded()), 8);
    // Weights 0.5 + 0.75: oversubscribed, which is allowed.
    assert!((mix.gpus[2].weight_sum() - 1.25).abs() < 1e-12);
    // The gang holds all eight GPUs of gang-0.
    assert!(f.hosts[0].gpus.iter().all(|g| g.holder == Some(5)));
    // Pending: a share with the default weight gb / GPU GB, a 15 GB need turned into the
    // smallest H100 profile with 15 GB (1g.20gb: 20 GB, 2 slices, 1 compute slice), a gang.
    let v6 = f.vm(6).unwrap();
    assert_eq!(
        v6.shape,
        Shape::Share {
            model: h100(),
            gb: 12,
            weight: 12.0 / 80.0,
            isolation: false
        }
    );
    let v7 = f.vm(7).unwrap();
    assert_eq!(v7.shape, Shape::Mig);
    let p = &embedded().model(h100()).profiles[v7.gis[0].profile];
    assert_eq!(p.name, "1g.20gb");
    assert_eq!(
        f.vm(8).unwrap().shape,
        Shape::Gang {
            model: h100(),
            gpus: 8
        }
    );
    assert_eq!(f.pending(), &[6, 7, 8]);
    // Active GPUs count every mode: GPU 0 (MIG), 1 (whole), 2 (shared) and the gang's 8.
    assert_eq!(f.active_gpus(), 11);
}

#[test]
fn modes_shares_and_gangs_round_trip_through_a_save() {
    let s = scenario::parse(MODES, "modes.toml").unwrap();
    let text = s.to_toml().unwrap();
    assert!(text.contains("modes = ["), "{text}");
    let back = scenario::parse(&text, "saved.toml").unwrap();
    assert_eq!(back.fleet, s.fleet);
    assert_eq!(back.to_toml().unwrap(), text);
    // An all-MIG scenario writes no `modes`: files of earlier versions save unchanged.
    let demo = scenario::parse(scenario::DEMO, "demo.toml").unwrap();
    assert!(!demo.to_toml().unwrap().contains("modes"));
}

#[test]
fn a_shared_gpu_at_90_percent_refuses_a_share_that_does_not_fit_and_says_why() {
    let mut f = host_fleet([GpuMode::Shared; 4]);
    let m = h100();
    f.add_placed(Vm::share(0, m, 72, 0.9, false, 4, 16), on(0, &[0]))
        .unwrap();
    f.check_invariants().unwrap();
    let before = f.clone();
    let e = f
        .add_placed(Vm::share(0, m, 10, 0.1, false, 4, 16), on(0, &[0]))
        .unwrap_err();
    assert_eq!(
        e,
        FleetError::ShareMemory {
            host: "n".into(),
            gpu: 0,
            vm: 2,
            need: 10,
            free: 8,
            total: 80
        }
    );
    assert_eq!(
        e.to_string(),
        "host n GPU 0 has 8 GB of its 80 GB free for shares, VM 2 asks for 10 GB"
    );
    assert_eq!(f, before, "a refused operation changes nothing");
    // 8 GB still fits exactly; then the GPU is full.
    f.add_placed(Vm::share(0, m, 8, 0.1, false, 4, 16), on(0, &[0]))
        .unwrap();
    assert_eq!(f.hosts[0].gpus[0].free_share_gb(embedded()), 0);
    f.check_invariants().unwrap();
    // First fit sends a share that does not fit on GPU 0 to GPU 1.
    let v = Vm::share(0, m, 10, 0.1, false, 4, 16);
    assert_eq!(f.ff_placement(&v).unwrap(), on(0, &[1]));
}

#[test]
fn isolation_never_lands_on_a_shared_gpu() {
    let m = h100();
    let mut f = host_fleet([GpuMode::Shared, GpuMode::Whole, GpuMode::Mig, GpuMode::Shared]);
    let iso = Vm::share(0, m, 10, 0.2, true, 4, 16);
    let e = f.add_placed(iso.clone(), on(0, &[0])).unwrap_err();
    assert!(matches!(e, FleetError::IsolationOnShared { gpu: 0, .. }), "{e:?}");
    assert!(e.to_string().contains("no memory or fault isolation"), "{e}");
    // Nor on a MIG GPU as a share: it takes the whole GPU 1, which first fit finds.
    let e = f.add_placed(iso.clone(), on(0, &[2])).unwrap_err();
    assert!(
        matches!(
            e,
            FleetError::ModeMismatch {
                mode: GpuMode::Mig,
                need: GpuMode::Whole,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(f.ff_placement(&iso).unwrap(), on(0, &[1]));
    let id = f.add_placed(iso.clone(), on(0, &[1])).unwrap();
    assert_eq!(f.hosts[0].gpus[1].holder, Some(id));
    // The whole GPU is taken now; no other GPU can hold an isolated share.
    let e = f.add_placed(iso.clone(), on(0, &[1])).unwrap_err();
    assert!(matches!(e, FleetError::GpuHeld { by, .. } if by == id), "{e:?}");
    assert_eq!(f.ff_placement(&iso), None);
    // A MIG request does not go on a shared or whole GPU either.
    let gi = crate::common::fleet::job(0, "h100-80gb", &["1g.10gb"], 4, 16);
    let e = f.add_placed(
        gi.clone(),
        Placement {
            host: 0,
            gis: vec![GiSlot { gpu: 3, start: 0 }],
        },
    );
    assert!(
        matches!(
            e,
            Err(FleetError::ModeMismatch {
                mode: GpuMode::Shared,
                need: GpuMode::Mig,
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(f.ff_placement(&gi).unwrap().gis[0].gpu, 2);
    f.check_invariants().unwrap();
}

#[test]
fn a_gang_takes_free_whole_gpus_of_one_host_and_gives_them_back() {
    let m = h100();
    let mut f = host_fleet([GpuMode::Whole, GpuMode::Whole, GpuMode::Shared, GpuMode::Whole]);
    let gang = Vm::gang(0, m, 3, 16, 64);
    // First fit: the three whole GPUs 0, 1, 3.
    assert_eq!(f.ff_placement(&gang).unwrap(), on(0, &[0, 1, 3]));
    let e = f.add_placed(gang.clone(), on(0, &[0, 1, 2])).unwrap_err();
    assert!(matches!(e, FleetError::ModeMismatch { gpu: 2, .. }), "{e:?}");
    let e = f.add_placed(gang.clone(), on(0, &[0, 1, 1])).unwrap_err();
    assert!(matches!(e, FleetError::GpuTwice { gpu: 1, .. }), "{e:?}");
    let e = f.add_placed(gang.clone(), on(0, &[0, 1])).unwrap_err();
    assert!(matches!(e, FleetError::GiCount { want: 3, got: 2, .. }), "{e:?}");
    let before = f.clone();
    let id = f.add_placed(gang.clone(), on(0, &[0, 1, 3])).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.active_gpus(), 3);
    // A second gang finds no room; a mode change of a held GPU is refused (drain first).
    assert_eq!(f.ff_placement(&Vm::gang(0, m, 1, 1, 1)), None);
    let e = f.set_gpu_mode(0, 0, GpuMode::Mig).unwrap_err();
    assert!(
        matches!(
            e,
            FleetError::GpuBusy {
                gpu: 0,
                residents: 1,
                ..
            }
        ),
        "{e:?}"
    );
    f.remove(id).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.hosts, before.hosts);
    // Empty, the GPU changes mode; a gang then finds only two whole GPUs.
    f.set_gpu_mode(0, 0, GpuMode::Mig).unwrap();
    f.check_invariants().unwrap();
    assert_eq!(f.ff_placement(&gang), None);
    assert_eq!(f.ff_placement(&Vm::gang(0, m, 2, 1, 1)).unwrap(), on(0, &[1, 3]));
}

#[test]
fn a_share_moves_between_shared_gpus_counting_its_own_memory_as_free() {
    let m = h100();
    let mut f = host_fleet([GpuMode::Shared, GpuMode::Shared, GpuMode::Whole, GpuMode::Whole]);
    let a = f
        .add_placed(Vm::share(0, m, 60, 0.5, false, 4, 16), on(0, &[0]))
        .unwrap();
    f.add_placed(Vm::share(0, m, 30, 0.5, false, 4, 16), on(0, &[1]))
        .unwrap();
    // 60 GB does not fit beside 30 GB on GPU 1; on its own GPU it does (a no-op move).
    let e = f.move_vm(a, on(0, &[1])).unwrap_err();
    assert!(
        matches!(
            e,
            FleetError::ShareMemory {
                free: 50,
                need: 60,
                ..
            }
        ),
        "{e:?}"
    );
    f.move_vm(a, on(0, &[0])).unwrap();
    f.check_invariants().unwrap();
    // Unplaced, it goes back to the queue and its memory is free.
    f.unplace(a).unwrap();
    assert_eq!(f.hosts[0].gpus[0].free_share_gb(embedded()), 80);
    f.check_invariants().unwrap();
}

fn scenario_error(text: &str, want: &[&str]) {
    let (_dir, path) = temp_file("bad.toml", text);
    let p = path.to_str().unwrap();
    let out = migplan().args(["check", p]).output().unwrap();
    assert_one_line_error(&out, &["check", p], want);
}

#[test]
fn scenario_files_refuse_bad_modes_and_shapes_naming_file_line_and_field() {
    let host = "[[host]]\nname = \"n\"\ncores = 64\nram_gb = 512\ngpus = [\"h100-80gb\", \"h100-80gb\"]\n";
    scenario_error(
        &format!("{host}modes = [\"mig\"]\n"),
        &["bad.toml:6:", "field `modes`", "1 modes for 2 GPUs"],
    );
    scenario_error(
        &format!("{host}modes = [\"mig\", \"half\"]\n"),
        &["bad.toml:6:", "field `modes`", "unknown GPU mode `half`"],
    );
    let vm = "[[vm]]\nid = 1\nmodel = \"h100-80gb\"\ncores = 1\nram_gb = 1\n";
    scenario_error(
        &format!("{host}modes = [\"shared\", \"whole\"]\n{vm}share_gb = 81\n"),
        &["bad.toml:12:", "field `share_gb`", "1..=80 GB"],
    );
    scenario_error(
        &format!("{host}{vm}gpus = 3\n"),
        &[
            "bad.toml:11:",
            "field `gpus`",
            "a gang of 3 h100-80gb GPUs must be 1..=2",
        ],
    );
    scenario_error(
        &format!("{host}{vm}gpus = 1\nshare_gb = 10\n"),
        &[
            "bad.toml:11:",
            "field `gpus`",
            "gives both `share_gb` and `gpus`: a VM has one shape",
        ],
    );
    scenario_error(
        &format!("{host}{vm}weight = 0.5\n"),
        &["bad.toml:11:", "field `weight`", "belongs to a share"],
    );
    scenario_error(
        &format!("{host}{vm}memory_gb = 100\n"),
        &[
            "bad.toml:11:",
            "field `memory_gb`",
            "no MIG profile of h100-80gb holds 100 GB",
        ],
    );
    // The workload's shape mix.
    scenario_error(
        &format!("{host}[workload.mix]\nshare = 0.8\ngang = 0.3\n"),
        &[
            "bad.toml:8:",
            "field `workload.mix.gang`",
            "share + gang must be at most 1",
        ],
    );
    scenario_error(
        &format!("{host}[workload.mix]\ngang_gpus = 0\n"),
        &[
            "bad.toml:7:",
            "field `workload.mix.gang_gpus`",
            "must be at least 1, not 0",
        ],
    );
    // A share placed on a MIG GPU: the fleet's reason, on the `at` line.
    scenario_error(
        &format!("{host}{vm}share_gb = 10\nhost = \"n\"\nat = [\"0\"]\n"),
        &[
            "bad.toml:13:",
            "field `at`",
            "is in mig mode",
            "needs a GPU in shared mode",
        ],
    );
}

#[test]
fn mig_on_a_model_without_mig_is_refused_naming_file_line_and_field() {
    // A catalog with a model that has no MIG (as the L40S): no profiles, `mig = false`.
    let gpus = "[[model]]\nname = \"l40s-48gb\"\nmemory_slices = 1\ncompute_slices = 1\nmemory_gb = 48\nidle_w = 35\nmax_w = 350\nmig = false\n";
    let hosts = include_str!("../../assets/hosts.toml");
    let catalog: &'static migplan::catalog::Catalog = Box::leak(Box::new(
        migplan::catalog::Catalog::parse(gpus, "gpus.toml", hosts, "hosts.toml").unwrap(),
    ));
    assert!(!catalog.models[0].mig);
    let host = "[[host]]\nname = \"n\"\ncores = 64\nram_gb = 512\ngpus = [\"l40s-48gb\", \"l40s-48gb\"]\n";
    // The catalog has no A100 for the default trace model: name this one (after the rest).
    let parse = |text: &str, file: &str| {
        scenario::parse_with(
            &format!("{text}[workload]\ntrace_model = \"l40s-48gb\"\n"),
            file,
            catalog,
        )
    };
    // Without modes its GPUs are whole; they may be shared; MIG is refused.
    let s = parse(host, "ok.toml").unwrap();
    assert!(s.fleet.hosts[0].gpus.iter().all(|g| g.mode == GpuMode::Whole));
    assert!(!s.to_toml().unwrap().contains("modes"));
    let shared = format!("{host}modes = [\"shared\", \"whole\"]\n");
    assert!(parse(&shared, "ok.toml").is_ok());
    let e = parse(&format!("{host}modes = [\"whole\", \"mig\"]\n"), "bad.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "bad.toml:6:19: field `modes`: l40s-48gb has no MIG: its GPUs can be whole or shared"
    );
    // A memory need with no shape has no MIG profile to turn into.
    let vm = "[[vm]]\nid = 1\nmodel = \"l40s-48gb\"\ncores = 1\nram_gb = 1\nmemory_gb = 10\n";
    let e = parse(&format!("{host}{vm}"), "bad.toml").unwrap_err().to_string();
    assert!(
        e.starts_with("bad.toml:11:") && e.contains("field `memory_gb`") && e.contains("has no MIG"),
        "{e}"
    );
    // And the fleet refuses to switch such a GPU to MIG.
    let mut f = s.fleet.clone();
    let e = f.set_gpu_mode(0, 0, GpuMode::Mig).unwrap_err();
    assert_eq!(
        e,
        FleetError::NoMig {
            model: "l40s-48gb".into()
        }
    );
    // A catalog model with MIG must list profiles; one without must not.
    let bad = gpus.replace("mig = false\n", "mig = false\nprofiles = [{ name = \"1g.48gb\", compute = 1, size = 1, memory_gb = 48, starts = [0] }]\n");
    let e = migplan::catalog::Catalog::parse(&bad, "gpus.toml", hosts, "hosts.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`mig = false` lists no profiles"), "{e}");
}
