//! Kill-safe file writes. Every file migplan writes goes through [`write_atomic`]: the bytes go
//! to a temporary file beside the target, are synced to disk, and the temporary file is renamed
//! over the target, then the folder is synced. A reader, or a process killed at any moment,
//! sees either the old file or the complete new one.
//!
//! The temporary file is named `.NAME.migplan-tmp-PID` after the target and the writing process.
//! A process killed between creating and renaming it leaves it behind; the next write of the
//! same target removes those whose process is gone, so they do not pile up.

use std::io::Write;
use std::path::{Path, PathBuf};

const TMP_TAG: &str = ".migplan-tmp-";

/// Writes `bytes` to `path` atomically (temporary file in the same folder, fsync, rename, fsync
/// of the folder). On error the target is unchanged and the temporary file is removed.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(fname) = path.file_name().map(|f| f.to_string_lossy().into_owned()) else {
        anyhow::bail!("{}: cannot save: not a file name", path.display());
    };
    remove_stale_temps(dir, &fname);
    let tmp = temp_path(dir, &fname, std::process::id());
    let res = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        // The rename is durable once the folder is synced; a folder that cannot be opened
        // (some platforms) keeps the rename, only without that guarantee.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("{}: cannot save: {e}", path.display());
    }
    Ok(())
}

/// Reads a text file; bytes that are not UTF-8 are an error naming the file, the line and the
/// column of the first bad byte.
pub(crate) fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", path.display()))?;
    text_of(bytes, &path.display().to_string())
}

/// `bytes` as text; bytes that are not UTF-8 are an error naming `name`, the line, the column
/// and the byte offset of the first bad byte.
pub(crate) fn text_of(bytes: Vec<u8>, name: &str) -> anyhow::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let bad = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..bad];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        anyhow::anyhow!(
            "{name}:{line}:{col}: not UTF-8 text (byte 0x{:02x} at offset {bad})",
            e.as_bytes()[bad]
        )
    })
}

/// The temporary file of target `fname` in `dir` written by process `pid`.
pub(crate) fn temp_path(dir: &Path, fname: &str, pid: u32) -> PathBuf {
    dir.join(format!(".{fname}{TMP_TAG}{pid}"))
}

/// The temporary files of target `fname` left in `dir`, with the id of the process that wrote each.
pub fn temp_files(dir: &Path, fname: &str) -> Vec<(PathBuf, u32)> {
    let prefix = format!(".{fname}{TMP_TAG}");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix(&prefix)?.parse::<u32>().ok()?;
            Some((e.path(), pid))
        })
        .collect()
}

/// Removes the temporary files of target `fname` in `dir` whose writing process is gone.
fn remove_stale_temps(dir: &Path, fname: &str) {
    let me = std::process::id();
    for (path, pid) in temp_files(dir, fname) {
        if pid != me && !process_alive(pid) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Whether process `pid` still runs. Where this cannot be told (no `/proc`), every other process
/// counts as alive and its temporary files are left alone.
fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    // A zombie (killed, not yet reaped) holds no file open any more: it counts as gone.
    match std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replaces_and_removes_stale_temps_only() {
        let dir = std::env::temp_dir().join(format!("migplan-fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let target = dir.join("out.txt");
        write_atomic(&target, b"one").expect("first write");
        write_atomic(&target, b"two").expect("second write");
        assert_eq!(std::fs::read(&target).expect("read"), b"two");
        // A temp of a dead process (pid beyond any pid_max) goes; one of a live process stays.
        let dead = temp_path(&dir, "out.txt", 4_194_305);
        let live = temp_path(&dir, "out.txt", 1);
        std::fs::write(&dead, b"x").expect("dead temp");
        std::fs::write(&live, b"x").expect("live temp");
        write_atomic(&target, b"three").expect("third write");
        assert!(!dead.exists());
        assert!(live.exists());
        assert_eq!(temp_files(&dir, "out.txt").len(), 1);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, b"ok\nab\xffc\n").expect("bad file");
        let err = read_text(&bad).unwrap_err().to_string();
        assert!(
            err.ends_with("bad.txt:2:3: not UTF-8 text (byte 0xff at offset 5)"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
