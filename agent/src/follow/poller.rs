//! Scheduling: one poll over all followed files, the synchronous heart of the follower.
//!
//! A poll scans the globs, stats what they match (and re-stats followed paths they no longer
//! match), lets `decide.rs` reconcile that with what was followed, observe each file, and plan
//! descriptors, then carries the decisions out: opens, closes, reads up to a budget, and flushes
//! idle partial lines. It does blocking file I/O and is run on tokio's blocking pool by
//! [`super::Follower::run`], which owns the timing, the channel and shutdown.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::decide::{self, FdView, Limits, PathState, Rewrite, Step};
use super::identity::{FileId, Observed};
use super::scan::{self, Pattern};
use super::warnings::Warnings;
use super::watched::WatchedFile;
use super::{FollowOptions, FollowStats, LogLine};

/// Bytes read from one file per poll before others get their turn.
const FILE_BUDGET: usize = 1 << 20;
/// Bytes read per poll before the lines are handed over (bounds memory while the channel is full).
const POLL_BUDGET: usize = 8 << 20;
/// Read buffer size.
const CHUNK: usize = 64 << 10;
/// Files held open at once, unless `EMFILE` says fewer.
const DEFAULT_MAX_OPEN: usize = 256;
/// `max_open` is never lowered below this.
const MIN_OPEN: usize = 4;

/// What a poll tells the async side.
#[derive(Debug)]
pub(crate) struct PollReport {
    /// A read budget ran out: poll again right away.
    pub more: bool,
    /// Directories to watch for early wake-ups.
    pub dirs: Vec<(PathBuf, FileId)>,
}

/// All follower state for files (stdin is separate). See the module docs.
#[derive(Debug)]
pub(crate) struct Poller {
    patterns: Vec<Pattern>,
    opts: FollowOptions,
    limits: Limits,
    stats: Arc<FollowStats>,
    files: HashMap<FileId, WatchedFile>,
    by_path: BTreeMap<PathBuf, FileId>,
    first: bool,
    warnings: Warnings,
    buf: Vec<u8>,
}

impl Poller {
    pub(crate) fn new(
        patterns: Vec<Pattern>,
        opts: FollowOptions,
        stats: Arc<FollowStats>,
    ) -> Poller {
        Poller {
            patterns,
            opts,
            limits: Limits {
                max_open: DEFAULT_MAX_OPEN,
                close_idle_after: Duration::from_secs(30),
                rotate_wait: Duration::from_secs(5),
            },
            stats,
            files: HashMap::new(),
            by_path: BTreeMap::new(),
            first: true,
            warnings: Warnings::default(),
            buf: vec![0; CHUNK],
        }
    }

    /// One poll; lines read are appended to `out`.
    pub(crate) fn poll(&mut self, out: &mut Vec<LogLine>) -> PollReport {
        let now = Instant::now();
        let wall = SystemTime::now();
        self.discover(now);
        self.observe(out, wall);
        self.plan_descriptors(out, wall, now);
        let more = self.read(out, wall, now);
        for f in self.files.values_mut() {
            if decide::flush_due(f.has_partial(), f.last_data, now, self.opts.idle_flush) {
                f.flush_partial(out, wall, &self.stats);
            }
        }
        self.stats
            .files_followed
            .store(self.files.len() as u64, Ordering::Relaxed);
        PollReport {
            more,
            dirs: scan::watch_dirs(&self.patterns, self.by_path.keys().map(PathBuf::as_path)),
        }
    }

    /// Scan, reconcile, adopt new files, mark orphans.
    fn discover(&mut self, now: Instant) {
        let found = scan::scan(&self.patterns, &mut self.warnings);
        let mut seen: HashMap<FileId, Observed> = HashMap::new();
        let mut observed: Vec<(PathBuf, PathState)> = Vec::with_capacity(found.len());
        for (path, f) in &found {
            seen.insert(f.id, f.observed);
            observed.push((path.clone(), PathState::Present(f.id)));
        }
        for path in self.by_path.keys() {
            if !found.contains_key(path) {
                observed.push((path.clone(), restat(path, &mut seen, &mut self.warnings)));
            }
        }
        let files = &self.files;
        let rec = decide::reconcile(&self.by_path, |id| files.contains_key(id), &observed);
        self.stats
            .rotations
            .fetch_add(rec.rotations, Ordering::Relaxed);
        for (path, id) in rec.adopt {
            let size = seen.get(&id).map_or(0, |o| o.size);
            let offset = if self.first && self.opts.start_existing_at_end {
                size
            } else {
                0
            };
            tracing::debug!(path = %path.display(), offset, "following log file");
            let path: Arc<Path> = Arc::from(path.as_path());
            self.files.insert(
                id,
                WatchedFile::new(id, path, offset, self.opts.max_line_bytes, now),
            );
        }
        self.by_path = rec.by_path;
        self.first = false;
        let named: HashSet<FileId> = self.by_path.values().copied().collect();
        for f in self.files.values_mut() {
            f.orphan = !named.contains(&f.id);
            if !f.is_open() {
                // Closed files are observed through the scan's stat (same identity).
                f.wants_read = false;
                if let Some(o) = seen.get(&f.id) {
                    decide_closed(f, *o);
                }
            }
        }
    }

    /// Observe open files through their descriptors and decide what each needs.
    fn observe(&mut self, out: &mut Vec<LogLine>, wall: SystemTime) {
        let mut stop = Vec::new();
        for f in self.files.values_mut() {
            let meta = match f.fstat() {
                None => continue,
                Some(Ok(meta)) => meta,
                Some(Err(e)) => {
                    self.warnings.once(&f.path, "fstat", || {
                        format!("cannot stat open log file: {e}")
                    });
                    continue;
                }
            };
            let now_obs = Observed::of(&meta);
            let mut s = decide::step(f.offset, f.last_seen, now_obs);
            if s == Step::Verify {
                s = match f.verify_tail() {
                    Ok(same) => decide::after_verify(same, f.offset, now_obs),
                    Err(e) => {
                        self.warnings
                            .once(&f.path, "read", || format!("cannot read log file: {e}"));
                        Step::Idle
                    }
                };
            }
            if s == Step::Restart {
                match decide::on_rewrite(f.orphan_before) {
                    Rewrite::ReadFromStart => {
                        tracing::debug!(path = %f.path.display(), "log file truncated; reading from its start");
                        f.restart(out, wall, &self.stats);
                    }
                    Rewrite::StopFollowing => {
                        stop.push(f.id);
                        continue;
                    }
                }
            }
            f.wants_read = now_obs.size > f.offset;
            f.last_seen = Some(now_obs);
            f.orphan_before = f.orphan;
        }
        for id in stop {
            if let Some(mut f) = self.files.remove(&id) {
                f.flush_partial(out, wall, &self.stats);
                tracing::debug!(path = %f.path.display(), "rotated log file rewritten; stopped following it");
            }
        }
    }

    /// Forget drained orphans, close idle files, open files that want reading.
    fn plan_descriptors(&mut self, out: &mut Vec<LogLine>, wall: SystemTime, now: Instant) {
        let views: Vec<FdView> = self
            .files
            .values()
            .map(|f| FdView {
                id: f.id,
                open: f.is_open(),
                orphan: f.orphan,
                at_eof: f.at_eof(),
                wants_read: f.wants_read,
                last_active: f.last_active,
            })
            .collect();
        let plan = decide::plan_fds(&views, now, &self.limits);
        for id in &plan.forget {
            if let Some(mut f) = self.files.remove(id) {
                f.flush_partial(out, wall, &self.stats);
                tracing::debug!(path = %f.path.display(), "stopped following rotated or deleted log file");
            }
        }
        for id in &plan.close {
            if let Some(f) = self.files.get_mut(id) {
                f.close();
            }
        }
        let mut open_count = self.files.values().filter(|f| f.is_open()).count();
        for id in &plan.open {
            let Some(f) = self.files.get_mut(id) else {
                continue;
            };
            match f.open(now) {
                Ok(true) => {
                    open_count += 1;
                    self.warnings.clear(&f.path);
                    match f.verify_tail() {
                        Ok(true) => {}
                        // Opened files are named by a followed path (orphans are never reopened).
                        Ok(false) => f.restart(out, wall, &self.stats),
                        Err(e) => self.warnings.once(&f.path, "read", || {
                            format!("cannot read log file: {e}")
                        }),
                    }
                }
                // The path names another file now: the next scan sorts it out.
                Ok(false) => {}
                Err(e) if is_fd_limit(&e) => {
                    let lowered = (open_count * 3 / 4).max(MIN_OPEN);
                    if lowered < self.limits.max_open {
                        self.limits.max_open = lowered;
                    }
                    let max = self.limits.max_open;
                    self.warnings.once(Path::new(""), "fd-limit", || {
                        format!("too many open files ({e}); following with at most {max} log files open at once (raise `ulimit -n` to keep more open)")
                    });
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => self.warnings.once(&f.path, "open", || {
                    format!("cannot open log file: {e}; will retry (grant tripcap read permission on it)")
                }),
            }
        }
    }

    /// Read open files that want it, within the budgets. Returns whether a budget ran out.
    fn read(&mut self, out: &mut Vec<LogLine>, wall: SystemTime, now: Instant) -> bool {
        let mut order: Vec<&mut WatchedFile> = self
            .files
            .values_mut()
            .filter(|f| f.is_open() && f.wants_read)
            .collect();
        // Longest-unserved first, so budgets never starve a file.
        order.sort_by_key(|f| f.last_data);
        let mut used = 0usize;
        let mut more = false;
        for f in order {
            if used >= POLL_BUDGET {
                more = true;
                break;
            }
            match f.read(&mut self.buf, FILE_BUDGET, out, wall, now, &self.stats) {
                Ok(r) => {
                    used += r.bytes;
                    more |= r.hit_budget;
                }
                Err(e) => self.warnings.once(&f.path, "read", || {
                    format!("cannot read log file: {e}; will retry")
                }),
            }
        }
        more
    }
}

/// Decides for a closed file from the scan's stat: it wants opening if anything changed.
fn decide_closed(f: &mut WatchedFile, now_obs: Observed) {
    match decide::step(f.offset, f.last_seen, now_obs) {
        // A file never opened is opened at once even if empty: holding it open pins its inode,
        // so lines written just before a rotation can still be read.
        Step::Idle => f.wants_read = f.last_seen.is_none(),
        // Verified (or restarted) right after opening.
        Step::Read | Step::Verify | Step::Restart => f.wants_read = true,
    }
    f.last_seen = Some(now_obs);
}

/// Stats a followed path the globs did not match this time.
fn restat(path: &Path, seen: &mut HashMap<FileId, Observed>, warnings: &mut Warnings) -> PathState {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            let id = FileId::of(&meta);
            seen.insert(id, Observed::of(&meta));
            PathState::Present(id)
        }
        Ok(_) => PathState::Gone,
        Err(e) if e.kind() == io::ErrorKind::NotFound => PathState::Gone,
        Err(e) => {
            warnings.once(path, "stat", || format!("cannot stat log file: {e}"));
            PathState::Unknown
        }
    }
}

fn is_fd_limit(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}
