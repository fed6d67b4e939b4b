//! Running the real binary.

use assert_cmd::Command;
use std::process::Output;

pub fn migplan() -> Command {
    Command::cargo_bin("migplan").unwrap()
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
