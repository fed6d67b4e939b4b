//! The layout menu file: every layout is verified against the placement rules at load time, and
//! a wrong one is an error naming the file, line, model and layout.

use migplan::catalog::embedded as catalog;
use migplan::ops::layouts::{self, Menu, Origin};

fn parse(body: &str) -> Result<Menu, String> {
    Menu::parse(body, "layouts.toml", catalog()).map_err(|e| e.to_string())
}

#[test]
fn embedded_menu_has_the_operator_and_seed_layouts() {
    let c = catalog();
    let menu = layouts::embedded();
    let h = c.model_id("h100-80gb").unwrap();
    let hm = c.model(h);
    let names: Vec<&str> = menu.for_model(h).map(|l| l.name.as_str()).collect();
    for n in [
        "all-disabled",
        "all-enabled",
        "all-1g.10gb",
        "all-1g.10gb.me",
        "all-1g.20gb",
        "all-2g.20gb",
        "all-3g.40gb",
        "all-4g.40gb",
        "all-7g.80gb",
        "all-balanced",
        "tenant-inference-a",
        "tenant-heavy",
        "whole",
    ] {
        assert!(names.contains(&n), "{n}");
    }
    let planner: Vec<&str> = menu.planner_menu(h).iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        planner,
        vec![
            "all-balanced",
            "tenant-inference-a",
            "all-1g.10gb",
            "tenant-heavy",
            "whole"
        ]
    );
    assert_eq!(
        menu.get(h, "tenant-heavy").unwrap().describe(hm),
        "1x3g.40gb + 1x4g.40gb"
    );
    assert_eq!(menu.get(h, "tenant-heavy").unwrap().origin, Origin::Verified);
    assert_eq!(menu.get(h, "all-disabled").unwrap().describe(hm), "MIG disabled");
    // NVIDIA's mig-parted all-balanced config on the A30 is 2 x 1g.6gb + 1 x 2g.12gb.
    let a30 = c.model_id("a30-24gb").unwrap();
    assert_eq!(
        menu.get(a30, "all-balanced").unwrap().describe(c.model(a30)),
        "2x1g.6gb + 1x2g.12gb"
    );
    // all-<profile> holds the largest count: 7 small 1g on an 8-slot GPU, 4 on the A30.
    assert_eq!(menu.get(h, "all-1g.10gb").unwrap().instances(), 7);
    assert_eq!(menu.get(a30, "all-1g.6gb").unwrap().instances(), 4);
    // The name of a geometry: the planner menu's name wins over the operator's.
    assert_eq!(
        menu.name_of(h, &menu.get(h, "all-7g.80gb").unwrap().counts),
        Some("whole")
    );
}

#[test]
fn unplaceable_layout_is_an_error_naming_it() {
    // 4g + 3g + 1g: eight memory slices plus one.
    let e = parse(
        r#"
[[model]]
name = "h100-80gb"
layouts = [
  { name = "ok", origin = "verified", devices = { "3g.40gb" = 2 } },
  { name = "too-much", origin = "verified", devices = { "4g.40gb" = 1, "3g.40gb" = 1, "1g.10gb" = 1 } },
]
"#,
    )
    .unwrap_err();
    assert!(
        e.contains("layouts.toml:6") && e.contains("`too-much`") && e.contains("cannot be placed"),
        "{e}"
    );
    // Slices add up but the start rules forbid it: 1g.10gb cannot use slice 7, so 3g + 2g + 3x1g
    // (4 + 2 + 3 = 9 > 8) fails, and so does 2x3g + 1g (the 1g has no start left).
    let e = parse(
        r#"
[[model]]
name = "h100-80gb"
layouts = [ { name = "no-start", origin = "verified", devices = { "3g.40gb" = 2, "1g.10gb" = 1 } } ]
"#,
    )
    .unwrap_err();
    assert!(e.contains("`no-start`") && e.contains("cannot be placed"), "{e}");
}

#[test]
fn bad_entries_name_what_is_wrong() {
    let cases = [
        (
            r#"[[model]]
name = "h100-80gb"
layouts = [ { name = "x", origin = "verified", devices = { "5g.50gb" = 1 } } ]"#,
            "unknown profile `5g.50gb`",
        ),
        (
            r#"[[model]]
name = "z100"
layouts = []"#,
            "unknown GPU model `z100`",
        ),
        (
            r#"[[model]]
name = "h100-80gb"
layouts = [ { name = "all-2g.20gb", origin = "gpu-operator", devices = { "2g.20gb" = 2 } } ]"#,
            "holds exactly 3 x 2g.20gb",
        ),
        (
            r#"[[model]]
name = "h100-80gb"
menu = ["nope"]
layouts = [ { name = "x", origin = "verified", devices = { "2g.20gb" = 2 } } ]"#,
            "menu names unknown layout `nope`",
        ),
        (
            r#"[[model]]
name = "h100-80gb"
layouts = [ { name = "x", origin = "verified", mig_enabled = false, devices = { "2g.20gb" = 2 } } ]"#,
            "holds no devices",
        ),
        (
            r#"[[model]]
name = "h100-80gb"
layouts = [ { name = "x", origin = "verified" }, { name = "x", origin = "verified" } ]"#,
            "duplicate layout name",
        ),
        (
            r#"[[model]]
name = "h100-80gb"
layouts = [ { name = "x", origin = "verified", colour = "red" } ]"#,
            "unknown field",
        ),
    ];
    for (body, want) in cases {
        let e = parse(body).unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
        assert!(e.starts_with("layouts.toml:"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
