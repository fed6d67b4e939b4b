//! Unit tests of `catalog`.

use super::*;

#[test]
fn embedded_catalog_loads_every_model() {
    let c = embedded();
    for name in [
        "a100-40gb",
        "a30-24gb",
        "a100-80gb",
        "h100-80gb",
        "h100-nvl-94gb",
        "h200-141gb",
        "b200-180gb",
    ] {
        assert!(c.model_id(name).is_some(), "{name}");
    }
    let a30 = c.model(c.model_id("a30-24gb").unwrap());
    assert_eq!(a30.memory_slices, 4);
    assert_eq!(a30.profiles[a30.profile("1g.6gb+me").unwrap()].max_instances, 1);
}

#[test]
fn bad_start_names_file_and_entry() {
    let gpus = r#"
[[model]]
name = "x"
memory_slices = 8
compute_slices = 7
memory_gb = 40
idle_w = 1
max_w = 2
profiles = [ { name = "2g", compute = 2, size = 2, memory_gb = 10, starts = [0, 3] } ]
"#;
    let err = Catalog::parse(gpus, "g.toml", HOSTS_TOML, "h.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("g.toml") && err.contains("`x`") && err.contains("`2g`"),
        "{err}"
    );
    assert!(err.contains("multiple"), "{err}");
    let gpus = gpus.replace("[0, 3]", "[0, 8]");
    let err = Catalog::parse(&gpus, "g.toml", HOSTS_TOML, "h.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("runs past"), "{err}");
}

#[test]
fn specpower_curve_interpolates() {
    let c = embedded();
    let curve = &c.curves[c.default_curve()];
    assert_eq!(curve.watts(0.0), 127.0);
    assert!((curve.watts(0.55) - 334.0).abs() < 1e-9);
    assert_eq!(curve.watts(1.0), 619.0);
}
