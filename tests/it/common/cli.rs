//! Running the real binary.

use assert_cmd::Command;
use std::path::PathBuf;
use std::process::Output;

/// The binary, run from the crate's root so that paths such as `scenarios/demo.toml` resolve.
pub fn migplan() -> Command {
    let mut c = Command::cargo_bin("migplan").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// The standard output of a successful run of the binary.
pub fn stdout_of(args: &[&str]) -> Vec<u8> {
    migplan()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// Runs a command that must succeed; its standard output.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail: exit 2, one stderr line, no panic; returns the line.
pub fn fails(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err.trim_end().to_string()
}

/// Bad input: exit 2, one line on stderr containing each of `want`, nothing on stdout. `args`
/// names the run in the failure messages.
pub fn assert_one_line_error(out: &Output, args: &[&str], want: &[&str]) {
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {err}");
    }
    assert!(out.stdout.is_empty(), "{args:?}");
}

/// A file named `name` holding `text` in a new temporary directory, which lives as long as the
/// returned guard.
pub fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}
