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

/// Bytes available to this process on the file system holding `dir`, if it
/// can be asked (`statvfs`).
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a zeroed struct to fill.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then_some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Rename `from` to `to` unless `to` exists (then `AlreadyExists`, and
/// nothing moves): `renameat2(RENAME_NOREPLACE)`, or a hard link then an
/// unlink on file systems without it. Two writers racing for one name can
/// never overwrite each other.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (cf, ct) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            cf.as_ptr(),
            libc::AT_FDCWD,
            ct.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            fs::hard_link(from, to)?;
            fs::remove_file(from)
        }
        _ => Err(e),
    }
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

    #[test]
    fn rename_noreplace_never_overwrites() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&a, b"new").expect("write");
        fs::write(&b, b"old").expect("write");
        let e = rename_noreplace(&a, &b).expect_err("target exists");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&b).expect("read"), b"old");
        fs::remove_file(&b).expect("rm");
        rename_noreplace(&a, &b).expect("free name");
        assert_eq!(fs::read(&b).expect("read"), b"new");
        assert!(!a.exists());
    }
}
