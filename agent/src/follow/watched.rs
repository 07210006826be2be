//! One followed file: its descriptor, offset, fingerprint and line splitter, and the I/O on them.
//!
//! A [`WatchedFile`] is keyed by identity, not path. It may be closed while idle (keeping its
//! offset, the last [`TAIL_LEN`] bytes before the offset, and any partial line) and reopened later;
//! reads use `pread` at the saved offset so a descriptor has no position of its own to get wrong.
//! What to do with the file is decided in `decide.rs`; this file only carries it out.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::identity::{FileId, Observed};
use super::lines::{Line, LineSplitter};
use super::{FollowStats, LogLine};

/// Bytes before the offset kept as a fingerprint: if they change, the file was rewritten.
pub(crate) const TAIL_LEN: usize = 64;

/// State of one followed file. See the module docs.
#[derive(Debug)]
pub(crate) struct WatchedFile {
    pub id: FileId,
    /// Where the file was found (kept across renames: lines keep naming the file that wrote them).
    pub path: Arc<Path>,
    file: Option<File>,
    /// Next byte to read.
    pub offset: u64,
    /// The bytes just before `offset` (`None`: not known yet, read on next open).
    tail: Option<Vec<u8>>,
    /// Size and mtime at the last look.
    pub last_seen: Option<Observed>,
    splitter: LineSplitter,
    line_no: u64,
    /// Last time the file was opened or yielded bytes.
    pub last_active: Instant,
    /// Last time the file yielded bytes.
    pub last_data: Instant,
    /// No followed path names this file any more (rotated away or deleted).
    pub orphan: bool,
    /// It was already an orphan at the previous look through its descriptor.
    pub orphan_before: bool,
    /// The last look found something to read.
    pub wants_read: bool,
    /// Reading restarted at 0 after a truncation: skip a leading sparse hole.
    skip_hole: bool,
}

impl WatchedFile {
    pub(crate) fn new(
        id: FileId,
        path: Arc<Path>,
        offset: u64,
        max_line_bytes: usize,
        now: Instant,
    ) -> WatchedFile {
        WatchedFile {
            id,
            path,
            file: None,
            offset,
            tail: (offset == 0).then(Vec::new),
            last_seen: None,
            splitter: LineSplitter::new(max_line_bytes),
            line_no: 0,
            last_active: now,
            last_data: now,
            orphan: false,
            orphan_before: false,
            wants_read: true,
            skip_hole: false,
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Everything seen at the last look has been read.
    pub(crate) fn at_eof(&self) -> bool {
        self.last_seen.is_none_or(|o| self.offset >= o.size)
    }

    pub(crate) fn has_partial(&self) -> bool {
        self.splitter.has_partial()
    }

    /// `fstat` of the open descriptor (`None` when closed).
    pub(crate) fn fstat(&self) -> Option<io::Result<Metadata>> {
        self.file.as_ref().map(File::metadata)
    }

    /// Opens the file at its path. `Ok(false)`: the path names another file now (left closed).
    pub(crate) fn open(&mut self, now: Instant) -> io::Result<bool> {
        let file = File::open(&self.path)?;
        if FileId::of(&file.metadata()?) != self.id {
            return Ok(false);
        }
        self.file = Some(file);
        self.last_active = now;
        Ok(true)
    }

    pub(crate) fn close(&mut self) {
        self.file = None;
    }

    /// Compares the bytes before the offset with the fingerprint (or records it if unknown).
    /// `Ok(false)`: they differ, or the file is now shorter than the offset.
    pub(crate) fn verify_tail(&mut self) -> io::Result<bool> {
        let Some(file) = self.file.as_ref() else {
            return Ok(true);
        };
        let want = self.tail.as_ref().map_or(
            TAIL_LEN.min(usize::try_from(self.offset).unwrap_or(TAIL_LEN)),
            Vec::len,
        );
        if want == 0 {
            return Ok(true);
        }
        let mut buf = vec![0u8; want];
        match file.read_exact_at(&mut buf, self.offset - want as u64) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e),
        }
        match &self.tail {
            Some(tail) => Ok(*tail == buf),
            None => {
                self.tail = Some(buf);
                Ok(true)
            }
        }
    }

    /// The file was truncated or rewritten: emit the held partial line, then read from 0.
    pub(crate) fn restart(
        &mut self,
        out: &mut Vec<LogLine>,
        wall: SystemTime,
        stats: &FollowStats,
    ) {
        self.flush_partial(out, wall, stats);
        self.splitter.reset();
        self.offset = 0;
        self.tail = Some(Vec::new());
        self.line_no = 0;
        self.skip_hole = true;
        stats.truncations.fetch_add(1, Ordering::Relaxed);
    }

    /// Emits the held partial line, if any.
    pub(crate) fn flush_partial(
        &mut self,
        out: &mut Vec<LogLine>,
        wall: SystemTime,
        stats: &FollowStats,
    ) {
        if let Some(line) = self.splitter.flush() {
            self.line_no += 1;
            out.push(log_line(&self.path, self.line_no, line, wall, stats));
        }
    }

    /// Reads from the offset until end of file or `budget` bytes, emitting complete lines.
    pub(crate) fn read(
        &mut self,
        buf: &mut [u8],
        budget: usize,
        out: &mut Vec<LogLine>,
        wall: SystemTime,
        now: Instant,
        stats: &FollowStats,
    ) -> io::Result<ReadOutcome> {
        let mut outcome = ReadOutcome::default();
        let Some(file) = self.file.as_ref() else {
            return Ok(outcome);
        };
        if std::mem::take(&mut self.skip_hole) {
            if let Some(data) = next_data(file, self.offset) {
                if data > self.offset {
                    let skipped = data - self.offset;
                    self.offset = data;
                    self.tail = Some(vec![
                        0;
                        TAIL_LEN
                            .min(usize::try_from(skipped).unwrap_or(TAIL_LEN))
                    ]);
                }
            }
        }
        let mut left = budget;
        while left > 0 {
            let want = buf.len().min(left);
            let n = match file.read_at(&mut buf[..want], self.offset) {
                Ok(0) => return Ok(outcome),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let chunk = &buf[..n];
            self.offset += n as u64;
            left -= n;
            outcome.bytes += n;
            self.last_active = now;
            self.last_data = now;
            stats.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
            let tail = self.tail.get_or_insert_with(Vec::new);
            if n >= TAIL_LEN {
                tail.clear();
                tail.extend_from_slice(&chunk[n - TAIL_LEN..]);
            } else {
                tail.extend_from_slice(chunk);
                let excess = tail.len().saturating_sub(TAIL_LEN);
                tail.drain(..excess);
            }
            let (path, line_no) = (&self.path, &mut self.line_no);
            self.splitter.push(chunk, |line| {
                *line_no += 1;
                out.push(log_line(path, *line_no, line, wall, stats));
            });
        }
        outcome.hit_budget = true;
        Ok(outcome)
    }
}

/// What one [`WatchedFile::read`] did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReadOutcome {
    /// Bytes consumed.
    pub bytes: usize,
    /// The budget ran out before the end of the file.
    pub hit_budget: bool,
}

fn log_line(
    path: &Arc<Path>,
    line_no: u64,
    line: Line,
    wall: SystemTime,
    stats: &FollowStats,
) -> LogLine {
    stats.lines_read.fetch_add(1, Ordering::Relaxed);
    if line.truncated {
        stats.lines_cut.fetch_add(1, Ordering::Relaxed);
    }
    LogLine {
        path: Arc::clone(path),
        line_no,
        bytes: line.bytes,
        read_at: wall,
        truncated: line.truncated,
    }
}

/// The first offset at or after `from` holding data (not a hole), per `lseek(SEEK_DATA)`.
/// `None` when the filesystem cannot tell; the end of file when only a hole follows.
fn next_data(file: &File, from: u64) -> Option<u64> {
    let from_off = libc::off_t::try_from(from).ok()?;
    // SAFETY: lseek on a descriptor we own; it only moves the file position, which nothing here
    // uses (all reads are positioned).
    let r = unsafe { libc::lseek(file.as_raw_fd(), from_off, libc::SEEK_DATA) };
    if r >= 0 {
        return u64::try_from(r).ok();
    }
    if io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
        // No data after `from`: the rest is a hole (or `from` is the end).
        return file.metadata().ok().map(|m| m.len().max(from));
    }
    None
}
