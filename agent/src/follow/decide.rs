//! The follower's decisions, as pure functions of observed state.
//!
//! Nothing here does I/O: the poller (`poller.rs`) stats and reads, hands what it saw to these
//! functions, and carries out what they return. That keeps every rule — rotated? truncated? read
//! now? open or close which file? — small enough to unit-test exhaustively, which Vector's file
//! source, our model, only does through I/O.
//!
//! - [`reconcile`]: which files a scan found, which are new, which left their path.
//! - [`step`] and [`after_verify`]: what to do with one file whose size/mtime were just observed.
//! - [`plan_fds`]: which files to open, close (keeping their state) or forget, under a limit of
//!   open descriptors.
//! - [`flush_due`]: when a held partial line is emitted.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::identity::{FileId, Observed};

/// What a scan or a follow-up stat found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathState {
    /// A regular file with this identity is there.
    Present(FileId),
    /// Nothing is there (`ENOENT`, or not a regular file any more).
    Gone,
    /// The path could not be checked (permissions, I/O error, descriptor limit): keep what was
    /// known, so a failing directory listing never looks like a deleted file.
    Unknown,
}

/// The result of comparing a scan with what was followed before.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// Path → identity after this scan.
    pub by_path: BTreeMap<PathBuf, FileId>,
    /// Identities never followed before, with the path they were found at.
    pub adopt: Vec<(PathBuf, FileId)>,
    /// Followed paths whose file left (renamed away, replaced, deleted).
    pub rotations: u64,
}

/// Compares what is at each path now with the previous path → identity map.
///
/// `observed` holds every path the globs matched plus every previously followed path that they did
/// not match (stat'ed again by the caller). `known` tells whether an identity is already followed
/// (possibly under another path: a rename to a name that also matches keeps following it).
pub(crate) fn reconcile(
    prev: &BTreeMap<PathBuf, FileId>,
    known: impl Fn(&FileId) -> bool,
    observed: &[(PathBuf, PathState)],
) -> Reconciled {
    let mut out = Reconciled::default();
    let mut adopted = HashSet::new();
    for (path, state) in observed {
        let before = prev.get(path);
        match *state {
            PathState::Present(id) => {
                if before.is_some_and(|b| *b != id) {
                    out.rotations += 1;
                }
                out.by_path.insert(path.clone(), id);
                if !known(&id) && adopted.insert(id) {
                    out.adopt.push((path.clone(), id));
                }
            }
            PathState::Gone => {
                if before.is_some() {
                    out.rotations += 1;
                }
            }
            PathState::Unknown => {
                if let Some(b) = before {
                    out.by_path.insert(path.clone(), *b);
                }
            }
        }
    }
    out
}

/// What to do with one followed file after observing its size and mtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing new.
    Idle,
    /// Bytes past the offset are waiting.
    Read,
    /// The file changed: compare the bytes just before the offset with the ones read there before
    /// (copytruncate followed by regrowth, a reused inode), then [`after_verify`].
    Verify,
    /// The file is shorter than the offset: it was truncated. Restart at 0.
    Restart,
}

/// Decides what to do with a file read up to `offset`, last observed as `last`, now as `now`.
pub(crate) fn step(offset: u64, last: Option<Observed>, now: Observed) -> Step {
    if now.size < offset {
        Step::Restart
    } else if last == Some(now) || offset == 0 {
        // Unchanged since the last look (bytes may remain after a read budget ran out), or
        // nothing before the offset to verify.
        if now.size > offset {
            Step::Read
        } else {
            Step::Idle
        }
    } else {
        Step::Verify
    }
}

/// Decides after a [`Step::Verify`]: `same` tells whether the bytes before the offset are the ones
/// read there before.
pub(crate) fn after_verify(same: bool, offset: u64, now: Observed) -> Step {
    if !same || now.size < offset {
        Step::Restart
    } else if now.size > offset {
        Step::Read
    } else {
        Step::Idle
    }
}

/// What to do with a file found truncated or rewritten ([`Step::Restart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// Still at a followed path: the log starts over (copytruncate); read it from 0.
    ReadFromStart,
    /// Rotated away at an earlier look, and rewritten since: what is written into it now is not
    /// this log any more (a rotated copy overwritten in place); reading it again would only
    /// repeat lines. Stop following it.
    StopFollowing,
}

/// Decides what a truncation means. `orphan_before`: the file was already no longer named by a
/// followed path at the previous look. A file that left its path only since then may have been
/// truncated while it was still the log (copytruncate, new lines, then rotated or deleted before
/// this poll), so it is read from its start like any truncated log.
pub(crate) fn on_rewrite(orphan_before: bool) -> Rewrite {
    if orphan_before {
        Rewrite::StopFollowing
    } else {
        Rewrite::ReadFromStart
    }
}

/// A held partial line is emitted once its file has been idle for `idle_flush`.
pub(crate) fn flush_due(
    has_partial: bool,
    last_data: Instant,
    now: Instant,
    idle_flush: Duration,
) -> bool {
    has_partial && now.saturating_duration_since(last_data) >= idle_flush
}

/// Bounds on open descriptors and how long idle files stay open.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most files held open at once. Lowered at run time when `open` fails with `EMFILE`/`ENFILE`.
    pub max_open: usize,
    /// A file (still at its path) with nothing new for this long is closed; its offset and state
    /// are kept and it is reopened when stat shows it changed.
    pub close_idle_after: Duration,
    /// A file that left its path (rotated, deleted) is read to its end, then kept open this long
    /// for a writer that still has it open (Fluent Bit's `rotate_wait`), then forgotten.
    pub rotate_wait: Duration,
}

/// One followed file as [`plan_fds`] sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FdView {
    pub id: FileId,
    pub open: bool,
    /// No followed path names this file any more.
    pub orphan: bool,
    /// Everything observed so far has been read.
    pub at_eof: bool,
    /// Stat showed something to read or verify (needs the file open).
    pub wants_read: bool,
    /// Last time the file was opened or yielded bytes.
    pub last_active: Instant,
}

/// What to do with descriptors this poll.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FdPlan {
    /// Stop following (flush its partial line first): an orphan read to its end.
    pub forget: Vec<FileId>,
    /// Close the descriptor, keep the state.
    pub close: Vec<FileId>,
    /// Open these (closed files that want reading), least recently served first.
    pub open: Vec<FileId>,
}

/// Plans opens and closes so that at most `limits.max_open` files are open, unread data of
/// rotated files is never given up, and files waiting longest to be read go first.
pub(crate) fn plan_fds(files: &[FdView], now: Instant, limits: &Limits) -> FdPlan {
    let mut plan = FdPlan::default();
    let idle = |f: &FdView| now.saturating_duration_since(f.last_active);
    let mut open_count = 0usize;
    let mut evictable: Vec<&FdView> = Vec::new();
    let mut want: Vec<&FdView> = Vec::new();
    for f in files {
        if f.orphan {
            if !f.open || (f.at_eof && idle(f) >= limits.rotate_wait) {
                plan.forget.push(f.id);
            } else {
                open_count += 1;
                if f.at_eof {
                    evictable.push(f);
                }
            }
        } else if f.open {
            if f.at_eof && !f.wants_read && idle(f) >= limits.close_idle_after {
                plan.close.push(f.id);
            } else {
                open_count += 1;
                if f.at_eof && !f.wants_read {
                    evictable.push(f);
                }
            }
        } else if f.wants_read {
            want.push(f);
        }
    }
    want.sort_by_key(|f| (f.last_active, f.id));
    // Least recently active first; among equals, files still at their path before orphans
    // (closing those keeps their state, forgetting an orphan gives up its late writes).
    evictable.sort_by_key(|f| (f.last_active, f.orphan, f.id));
    let mut evict = evictable.into_iter();
    // Over the limit (it was just lowered after EMFILE): make room even if nothing waits, so the
    // directory listings of the next scan get descriptors too.
    while open_count > limits.max_open {
        match evict.next() {
            Some(e) if e.orphan => plan.forget.push(e.id),
            Some(e) => plan.close.push(e.id),
            None => break,
        }
        open_count -= 1;
    }
    for f in want {
        if open_count >= limits.max_open {
            match evict.next() {
                Some(e) if e.orphan => plan.forget.push(e.id),
                Some(e) => plan.close.push(e.id),
                None => break,
            }
            open_count -= 1;
        }
        plan.open.push(f.id);
        open_count += 1;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ino: u64) -> FileId {
        FileId { dev: 1, ino }
    }
    fn obs(size: u64, t: i64) -> Observed {
        Observed {
            size,
            mtime: (t, 0),
        }
    }
    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn reconcile_adopts_new_files_once() {
        let r = reconcile(
            &BTreeMap::new(),
            |_| false,
            &[
                (p("a"), PathState::Present(id(1))),
                (p("hardlink-of-a"), PathState::Present(id(1))),
                (p("b"), PathState::Present(id(2))),
            ],
        );
        assert_eq!(r.adopt, vec![(p("a"), id(1)), (p("b"), id(2))]);
        assert_eq!(r.rotations, 0);
        assert_eq!(r.by_path.len(), 3);
    }

    #[test]
    fn reconcile_rename_and_create_is_a_rotation() {
        let prev = BTreeMap::from([(p("a"), id(1))]);
        let r = reconcile(
            &prev,
            |i| *i == id(1),
            &[(p("a"), PathState::Present(id(2)))],
        );
        assert_eq!(r.adopt, vec![(p("a"), id(2))]);
        assert_eq!(r.rotations, 1);
        // id(1) is no longer named by any path: the caller treats it as an orphan.
        assert!(!r.by_path.values().any(|i| *i == id(1)));
    }

    #[test]
    fn reconcile_rename_to_matched_name_keeps_following() {
        let prev = BTreeMap::from([(p("a"), id(1))]);
        let r = reconcile(
            &prev,
            |i| *i == id(1),
            &[
                (p("a.1"), PathState::Present(id(1))),
                (p("a"), PathState::Gone),
            ],
        );
        assert!(r.adopt.is_empty());
        assert_eq!(r.by_path.get(&p("a.1")), Some(&id(1)));
        assert_eq!(r.rotations, 1);
    }

    #[test]
    fn reconcile_unknown_keeps_previous_mapping() {
        let prev = BTreeMap::from([(p("a"), id(1))]);
        let r = reconcile(&prev, |i| *i == id(1), &[(p("a"), PathState::Unknown)]);
        assert_eq!(r.by_path.get(&p("a")), Some(&id(1)));
        assert_eq!(r.rotations, 0);
        assert!(r.adopt.is_empty());
    }

    #[test]
    fn reconcile_delete_is_counted_and_recreate_adopted() {
        let prev = BTreeMap::from([(p("a"), id(1))]);
        let r = reconcile(&prev, |i| *i == id(1), &[(p("a"), PathState::Gone)]);
        assert!(r.by_path.is_empty());
        assert_eq!(r.rotations, 1);
        let r2 = reconcile(
            &r.by_path,
            |_| false,
            &[(p("a"), PathState::Present(id(3)))],
        );
        assert_eq!(r2.adopt, vec![(p("a"), id(3))]);
    }

    #[test]
    fn step_rules() {
        // Shorter than the offset: truncated.
        assert_eq!(step(10, Some(obs(10, 1)), obs(5, 2)), Step::Restart);
        // Unchanged: idle, or read what a budget left.
        assert_eq!(step(10, Some(obs(10, 1)), obs(10, 1)), Step::Idle);
        assert_eq!(step(10, Some(obs(20, 1)), obs(20, 1)), Step::Read);
        // Grew or touched: verify before trusting the offset.
        assert_eq!(step(10, Some(obs(10, 1)), obs(30, 2)), Step::Verify);
        assert_eq!(step(10, Some(obs(10, 1)), obs(10, 2)), Step::Verify);
        assert_eq!(step(10, None, obs(10, 1)), Step::Verify);
        // At offset 0 nothing can be verified.
        assert_eq!(step(0, None, obs(0, 1)), Step::Idle);
        assert_eq!(step(0, Some(obs(0, 1)), obs(7, 2)), Step::Read);
    }

    #[test]
    fn after_verify_rules() {
        assert_eq!(after_verify(false, 10, obs(30, 1)), Step::Restart);
        assert_eq!(after_verify(true, 10, obs(30, 1)), Step::Read);
        assert_eq!(after_verify(true, 10, obs(10, 1)), Step::Idle);
        assert_eq!(after_verify(true, 10, obs(3, 1)), Step::Restart);
    }

    #[test]
    fn rewritten_orphan_is_dropped_not_reread() {
        // Truncated while still at its path (or in the same poll as it left it): re-read.
        assert_eq!(on_rewrite(false), Rewrite::ReadFromStart);
        // Rewritten after it was seen rotated away: drop.
        assert_eq!(on_rewrite(true), Rewrite::StopFollowing);
    }

    #[test]
    fn flush_due_after_idle() {
        let t = Instant::now();
        let d = Duration::from_secs(1);
        assert!(!flush_due(true, t, t + Duration::from_millis(999), d));
        assert!(flush_due(true, t, t + d, d));
        assert!(!flush_due(false, t, t + d * 5, d));
    }

    fn view(
        ino: u64,
        open: bool,
        orphan: bool,
        at_eof: bool,
        wants: bool,
        age_s: u64,
        now: Instant,
    ) -> FdView {
        FdView {
            id: id(ino),
            open,
            orphan,
            at_eof,
            wants_read: wants,
            last_active: now - Duration::from_secs(age_s),
        }
    }

    fn limits(max_open: usize) -> Limits {
        Limits {
            max_open,
            close_idle_after: Duration::from_secs(30),
            rotate_wait: Duration::from_secs(5),
        }
    }

    #[test]
    fn plan_forgets_drained_orphans_after_rotate_wait_only() {
        let now = Instant::now() + Duration::from_secs(100);
        let files = [
            view(1, true, true, true, false, 6, now), // drained, waited: forget
            view(2, true, true, true, false, 1, now), // drained, still waiting
            view(3, true, true, false, false, 60, now), // unread data: keep
            view(4, false, true, true, false, 0, now), // orphan without fd: nothing to read
        ];
        let plan = plan_fds(&files, now, &limits(10));
        assert_eq!(plan.forget, vec![id(1), id(4)]);
        assert!(plan.close.is_empty() && plan.open.is_empty());
    }

    #[test]
    fn plan_closes_idle_files_and_opens_wanted() {
        let now = Instant::now() + Duration::from_secs(100);
        let files = [
            view(1, true, false, true, false, 31, now),
            view(2, true, false, true, false, 3, now),
            view(3, false, false, true, true, 50, now),
            view(4, false, false, true, false, 50, now),
        ];
        let plan = plan_fds(&files, now, &limits(10));
        assert_eq!(plan.close, vec![id(1)]);
        assert_eq!(plan.open, vec![id(3)]);
    }

    #[test]
    fn plan_respects_max_open_by_evicting_least_recent_idle() {
        let now = Instant::now() + Duration::from_secs(100);
        let files = [
            view(1, true, false, true, false, 2, now),
            view(2, true, false, true, false, 9, now),
            view(3, true, false, false, true, 20, now), // busy: never evicted
            view(5, false, false, true, true, 40, now),
            view(6, false, false, true, true, 70, now),
            view(7, false, false, true, true, 10, now),
        ];
        let plan = plan_fds(&files, now, &limits(3));
        // Longest waiting first; two idle files make room; the third must wait.
        assert_eq!(plan.open, vec![id(6), id(5)]);
        assert_eq!(plan.close, vec![id(2), id(1)]);
        assert!(plan.forget.is_empty());
    }

    #[test]
    fn plan_closes_down_to_a_lowered_limit() {
        let now = Instant::now() + Duration::from_secs(100);
        let files = [
            view(1, true, false, true, false, 3, now),
            view(2, true, false, true, false, 5, now),
            view(3, true, false, true, false, 1, now),
            view(4, true, false, false, true, 9, now), // unread: kept
        ];
        let plan = plan_fds(&files, now, &limits(2));
        assert_eq!(plan.close, vec![id(2), id(1)]);
        assert!(plan.open.is_empty() && plan.forget.is_empty());
    }

    #[test]
    fn plan_never_evicts_an_orphan_with_unread_data() {
        let now = Instant::now() + Duration::from_secs(100);
        let files = [
            view(1, true, true, false, false, 90, now),
            view(2, false, false, true, true, 10, now),
        ];
        let plan = plan_fds(&files, now, &limits(1));
        assert!(plan.open.is_empty() && plan.close.is_empty() && plan.forget.is_empty());
    }
}
