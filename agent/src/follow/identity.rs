//! File identity and what one `stat` shows of a file.
//!
//! A followed file is known by `(dev, inode)`, never by its path alone: a path is only where the
//! file was last seen. Rotation by rename keeps the inode and changes the path; delete and re-create
//! keeps the path and changes the inode. While the follower holds the file open the kernel cannot
//! reuse its inode number, so `(dev, inode)` is exact; for files closed while idle, the bytes just
//! before the saved offset are compared on reopen (see `decide::step`) to catch a reused inode.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

/// `(dev, inode)` of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub(crate) fn of(meta: &Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// Size and modification time: what decides whether a file changed since the last look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Observed {
    pub size: u64,
    /// Modification time as (seconds, nanoseconds) since the epoch.
    pub mtime: (i64, i64),
}

impl Observed {
    pub(crate) fn of(meta: &Metadata) -> Observed {
        Observed {
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}
