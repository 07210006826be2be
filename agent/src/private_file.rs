//! Files that hold other people's packets: created 0600, written under a
//! temporary name (`.NAME.tmp` beside the final one), synced, then renamed,
//! so a reader never sees half a file and a crash leaves only a temporary
//! that the spool sweeps at start.
//!
//! A leaf module: it imports nothing from the crate.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The temporary name `path` is written under: `.NAME.tmp` in the same directory.
pub fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Whether `name` is a temporary written by [`tmp_path`].
pub fn is_tmp_name(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Create (truncate) a file readable by its owner only.
pub fn create_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// Write `data` to `path` via a 0600 temporary file, synced, then renamed.
pub fn write_private_atomically(path: &Path, data: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = create_private(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn written_file_is_private_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        write_private_atomically(&path, b"{}").expect("write");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!tmp_path(&path).exists());
        assert!(is_tmp_name(".a.json.tmp") && !is_tmp_name("a.json"));
    }
}
