//! The collector's storage: `DIR/<incident>/<host>/<file>`.
//!
//! Every name is checked ([`safe_name`]) before it touches a path. A file is
//! streamed to a private temporary (`.<file>.<n>.tmp`, 0600) while it is hashed,
//! checked against the SHA-256 (and size) the sender announced, synced, and
//! hard-linked to its name, which fails if the name exists (create-exclusive:
//! no check-then-rename window), then the temporary is removed; a body that
//! fails the check is deleted. A file that is already stored with the same
//! SHA-256 is not written again, which makes a retried upload idempotent: it
//! never makes two copies. The same name with a different digest is a
//! conflict, never an overwrite. Of concurrent uploads of one name, the first
//! to finish is stored ([`Stored::Created`], 201); each other one gets
//! [`Stored::Existing`] (200) if its content is the same, else
//! [`StoreError::Conflict`] (409).

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

/// Why a file was not stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A name that cannot be used as a path component.
    #[error("{what} `{name}` is not a safe name: use letters, digits, `.`, `-`, `_` (not starting with `.`)")]
    BadName {
        /// Which name.
        what: &'static str,
        /// The name (already checked to be printable).
        name: String,
    },
    /// The body's digest differs from the one announced.
    #[error("sha256 mismatch for {file}: announced {announced}, received {received}: the file changed or was corrupted in transit; send it again")]
    Digest {
        /// File.
        file: String,
        /// What the sender said.
        announced: String,
        /// What arrived.
        received: String,
    },
    /// The body's size differs from the one announced.
    #[error("size mismatch for {file}: announced {announced} bytes, received {received}: the upload was cut; send it again")]
    Size {
        /// File.
        file: String,
        /// What the sender said.
        announced: u64,
        /// What arrived.
        received: u64,
    },
    /// The same name is stored with other content.
    #[error("{file} is already stored with sha256 {stored}: incidents are immutable; use a new incident id")]
    Conflict {
        /// File.
        file: String,
        /// Digest stored.
        stored: String,
    },
    /// The file is larger than the collector accepts.
    #[error("{file} is {size} bytes or more, over this collector's limit of {limit} bytes per file: start the collector with a larger --max-file-size, or make captures smaller (shorter pre/post, a smaller snaplen)")]
    TooLarge {
        /// File.
        file: String,
        /// Bytes announced, or received when it went over.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The body could not be read from the client.
    #[error("upload of {file} was interrupted: {message}")]
    Body {
        /// File.
        file: String,
        /// What happened.
        message: String,
    },
    /// Disk trouble.
    #[error("cannot store {file}: {source}: check the collector's directory")]
    Io {
        /// File.
        file: String,
        /// Cause.
        source: io::Error,
    },
}

/// A body refused before it is read (the disk cannot hold it) is still read and
/// dropped up to this size, so the client gets the answer instead of a reset.
const REFUSED_BODY_DRAIN: u64 = 16 << 20;

/// Read and drop what is left of a refused body, up to [`REFUSED_BODY_DRAIN`].
async fn drain<S, E>(chunks: &mut S)
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
{
    use futures_util::StreamExt;
    let mut drained = 0u64;
    while drained <= REFUSED_BODY_DRAIN {
        match chunks.next().await {
            Some(Ok(c)) => drained += c.len() as u64,
            _ => break,
        }
    }
}

/// What [`receive`] wrote.
pub struct Received {
    /// Bytes.
    pub len: u64,
    /// SHA-256, hex: the one announced.
    pub sha256: String,
}

/// Write `chunks` to `out`, checking them against `max` bytes, the announced
/// `size` and SHA-256; also feed them to `md5` when given (a bucket wants it).
/// A body refused for its size or for the disk is drained, so the client gets
/// the answer rather than a reset mid-send.
pub async fn receive<S, E>(
    out: &mut tokio::fs::File,
    chunks: &mut S,
    file: &str,
    max: u64,
    size: Option<u64>,
    sha256: &str,
    mut md5: Option<&mut md5::Md5>,
) -> Result<Received, StoreError>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    use futures_util::StreamExt;
    let mut h = Sha256::new();
    let mut got = 0u64;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| StoreError::Body {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        h.update(&chunk);
        if let Some(m) = md5.as_deref_mut() {
            m.update(&chunk);
        }
        got += chunk.len() as u64;
        if got > max {
            drain(chunks).await;
            return Err(StoreError::TooLarge {
                file: file.to_string(),
                size: got,
                limit: max,
            });
        }
        if let Err(e) = out.write_all(&chunk).await {
            drain(chunks).await;
            return Err(StoreError::Io {
                file: file.to_string(),
                source: e,
            });
        }
    }
    if let Some(s) = size.filter(|s| *s != got) {
        return Err(StoreError::Size {
            file: file.to_string(),
            announced: s,
            received: got,
        });
    }
    let received = hex::encode(h.finalize());
    if !received.eq_ignore_ascii_case(sha256) {
        return Err(StoreError::Digest {
            file: file.to_string(),
            announced: sha256.to_string(),
            received,
        });
    }
    Ok(Received {
        len: got,
        sha256: received,
    })
}

/// Whether an I/O error means the disk (or quota) is full.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// Whether `name` can be a path component here.
pub fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Check a name, or say why not.
pub fn check_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    if safe_name(name) {
        Ok(())
    } else {
        Err(StoreError::BadName {
            what,
            name: name.chars().filter(|c| !c.is_control()).take(80).collect(),
        })
    }
}

/// Whether a digest looks like lowercase/uppercase hex SHA-256.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What a successful store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Written now.
    Created,
    /// Already there with the same digest; nothing written.
    Existing,
}

/// The storage root.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    seq: AtomicU64,
    max_file: u64,
}

impl Store {
    /// Storage under `root` (created 0700), refusing files over `max_file` bytes.
    pub fn open(root: PathBuf, max_file: u64) -> io::Result<Store> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)?;
        Ok(Store {
            root,
            seq: AtomicU64::new(0),
            max_file,
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of a stored file (names already checked).
    pub fn path(&self, incident: &str, host: &str, file: &str) -> PathBuf {
        self.root.join(incident).join(host).join(file)
    }

    /// If `file` is stored, its digest; a conflict if it differs from `sha256`.
    pub async fn existing(
        &self,
        incident: &str,
        host: &str,
        file: &str,
        sha256: &str,
    ) -> Result<Option<Stored>, StoreError> {
        let path = self.path(incident, host, file);
        let name = file.to_string();
        let digest = tokio::task::spawn_blocking(move || match std::fs::metadata(&path) {
            Ok(_) => crate::digest::sha256_file(&path).map(|(_, h)| Some(h)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        })
        .await
        .map_err(|e| StoreError::Io {
            file: name.clone(),
            source: io::Error::other(e),
        })?
        .map_err(|source| StoreError::Io {
            file: name.clone(),
            source,
        })?;
        match digest {
            None => Ok(None),
            Some(d) if d.eq_ignore_ascii_case(sha256) => Ok(Some(Stored::Existing)),
            Some(d) => Err(StoreError::Conflict {
                file: name,
                stored: d,
            }),
        }
    }

    /// Stream `chunks` into `incident/host/file`, checking size and digest.
    pub async fn put<S, E>(
        &self,
        incident: &str,
        host: &str,
        file: &str,
        sha256: &str,
        size: Option<u64>,
        mut chunks: S,
    ) -> Result<Stored, StoreError>
    where
        S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        if let Some(s) = self.existing(incident, host, file, sha256).await? {
            return Ok(s);
        }
        let io_err = |source| StoreError::Io {
            file: file.to_string(),
            source,
        };
        if let Some((announced, e)) = size.and_then(|s| Some((s, self.refusal(file, s)?))) {
            // Refused before a byte is written; read a modest body so the
            // client gets the answer rather than a connection reset mid-send.
            if announced <= REFUSED_BODY_DRAIN {
                drain(&mut chunks).await;
            }
            return Err(e);
        }
        let dir = self.root.join(incident).join(host);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io_err)?;
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{file}.{}-{n}.tmp", std::process::id()));
        let result = async {
            let mut out = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)
                .await
                .map_err(io_err)?;
            let got = receive(
                &mut out,
                &mut chunks,
                file,
                self.max_file,
                size,
                sha256,
                None,
            )
            .await?;
            let received = got.sha256;
            out.sync_all().await.map_err(io_err)?;
            drop(out);
            self.publish(&tmp, incident, host, file, &received).await
        }
        .await;
        // Published or not, the temporary goes: once linked, the name holds it.
        let _ = tokio::fs::remove_file(&tmp).await;
        result
    }

    /// Why a body of `announced` bytes cannot be stored, known before reading
    /// it: over the per-file limit (413), or more than the disk has free (507).
    fn refusal(&self, file: &str, announced: u64) -> Option<StoreError> {
        if announced > self.max_file {
            return Some(StoreError::TooLarge {
                file: file.to_string(),
                size: announced,
                limit: self.max_file,
            });
        }
        let free = crate::private_file::free_bytes(&self.root)?;
        (announced > free).then(|| StoreError::Io {
            file: file.to_string(),
            source: io::Error::from_raw_os_error(libc::ENOSPC),
        })
    }

    /// Give the finished temporary `tmp` its name, unless the name is taken:
    /// a hard link is created only if the name is free, atomically, so of two
    /// uploads racing for one name exactly one is stored. The other gets
    /// [`Stored::Existing`] when its content is the same, else a conflict.
    async fn publish(
        &self,
        tmp: &Path,
        incident: &str,
        host: &str,
        file: &str,
        sha256: &str,
    ) -> Result<Stored, StoreError> {
        let dir = self.root.join(incident).join(host);
        match tokio::fs::hard_link(tmp, dir.join(file)).await {
            Ok(()) => {
                if let Ok(d) = std::fs::File::open(&dir) {
                    let _ = d.sync_all();
                }
                Ok(Stored::Created)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => self
                .existing(incident, host, file, sha256)
                .await?
                .ok_or_else(|| StoreError::Io {
                    file: file.to_string(),
                    source: io::Error::other(
                        "the name was taken and then freed during this upload; send it again",
                    ),
                }),
            Err(source) => Err(StoreError::Io {
                file: file.to_string(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(safe_name("20261130T021427Z-node1-nccl_timeout.pcapng"));
        assert!(!safe_name(".hidden"));
        assert!(!safe_name("../etc"));
        assert!(!safe_name("a/b"));
        assert!(!safe_name(""));
        assert!(!safe_name("a b"));
        assert!(is_sha256_hex(&"ab".repeat(32)));
        assert!(!is_sha256_hex("xyz"));
    }
}
