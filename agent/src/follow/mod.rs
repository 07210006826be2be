//! Log following: turns the log files of a training job into a stream of [`LogLine`]s for the
//! triggers, surviving everything PyTorch, NCCL, torchrun and logrotate do to those files.
//!
//! Modelled on Vector's file source and Fluent Bit's tail, one job per file:
//!
//! | file | job |
//! | --- | --- |
//! | `mod.rs` | public API ([`Follower`], [`FollowOptions`], [`LogLine`], [`FollowStats`]) and the async loop: timing, channel, shutdown |
//! | `poller.rs` | discovery and scheduling: one synchronous poll over all files, run on tokio's blocking pool |
//! | `decide.rs` | every decision (new? rotated? truncated? read now? open/close/forget which?) as pure functions, unit-tested |
//! | `scan.rs` | glob expansion and stat, directories to watch |
//! | `watched.rs` | one followed file: descriptor, offset, fingerprint, positioned reads |
//! | `identity.rs` | `(dev, inode)` identity and size/mtime observations |
//! | `lines.rs` | line splitting: partial lines, long-line cuts, NUL holes |
//! | `wake.rs` | inotify (via `notify`) on parent directories, as a wake-up hint only |
//! | `stdin.rs` | the special path `-` |
//! | `warnings.rs` | warn once per path and problem |
//!
//! **Stat-polling is the source of truth.** Every `poll_interval` (or earlier, when inotify says a
//! watched directory changed) the globs are expanded again and every match is stat'ed. Files are
//! known by `(dev, inode)`; the path is only where a file was found. From that:
//!
//! - files present at the first scan start at their end (`start_existing_at_end`); files found
//!   later are read from their beginning;
//! - rename + create rotation: the old file, no longer named by a followed path, is read to its end
//!   through its open descriptor, kept open 5 s for late writes, then closed; the new file is read
//!   from 0. Lines keep the path the file was found under;
//! - truncation and copytruncate: the file is shorter than the offset, or the 64 bytes before the
//!   offset are not the ones read there (truncate-then-regrow, a reused inode): read again from 0,
//!   skipping a leading sparse hole (`SEEK_DATA`); NUL bytes left by writers without `O_APPEND`
//!   are dropped by the line splitter;
//! - delete and re-create, directories removed and re-created (torchrun restarts): the same rules,
//!   since the globs are re-expanded each poll; a path that is gone is simply waited for;
//! - hundreds of files: at most 256 open at once (fewer after an `EMFILE`), files idle for 30 s
//!   are closed (state kept, reopened and fingerprint-checked when stat shows a change);
//! - an unreadable path is warned about once and retried every poll.
//!
//! **Bounds.** A line is at most `max_line_bytes` (longer ones are cut, `truncated = true`, the
//! rest skipped and counted in `lines_cut`). A poll reads at most 1 MiB per file and 8 MiB in all
//! before handing lines over. When the channel is full the follower waits: lines are delayed,
//! never dropped. On shutdown, partial lines still held are discarded.
//!
//! **Known limits** (inherent to tailing by path, as in Vector and Fluent Bit):
//! - a file closed after 30 s idle that is rotated and written within one poll interval loses the
//!   lines written after the last poll (its inode was not pinned by an open descriptor);
//! - a truncation and regrowth past the offset between two of the poller's own syscalls (a few
//!   µs) cannot be told from an append;
//! - a file followed from its end whose last line has no newline yet yields that line's tail;
//! - `line_no` counts lines read by the follower, not lines in the file.

mod decide;
mod identity;
mod lines;
mod poller;
mod scan;
mod stdin;
mod wake;
mod warnings;
mod watched;

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

use poller::Poller;
use scan::Pattern;
use wake::Wake;

/// How the follower polls, splits and starts.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// How often globs are re-expanded and files stat'ed (inotify may wake it earlier).
    /// Default 250 ms.
    pub poll_interval: Duration,
    /// Longest line emitted; longer lines are cut to this and marked `truncated`. Default 64 KiB.
    pub max_line_bytes: usize,
    /// A partial last line (no newline yet) is emitted after its file was idle this long.
    /// Default 1 s.
    pub idle_flush: Duration,
    /// Files present when following starts are read from their end (only new lines), not from
    /// their beginning. Files appearing later are always read from their beginning. Default true.
    pub start_existing_at_end: bool,
}

impl Default for FollowOptions {
    fn default() -> FollowOptions {
        FollowOptions {
            poll_interval: Duration::from_millis(250),
            max_line_bytes: 64 * 1024,
            idle_flush: Duration::from_secs(1),
            start_existing_at_end: true,
        }
    }
}

/// One line read from a followed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// The path the file was found under (`-` for stdin); kept when the file is later renamed.
    pub path: Arc<Path>,
    /// 1-based number of this line among the lines read from this file since following began
    /// (a file followed from its end starts at 1 with its first new line), reset on truncation.
    pub line_no: u64,
    /// The line without its newline; bytes as written (not necessarily UTF-8), NULs removed.
    pub bytes: Vec<u8>,
    /// When the line was read.
    pub read_at: SystemTime,
    /// The line was longer than `max_line_bytes` and was cut there.
    pub truncated: bool,
}

/// Counters, updated as the follower runs (relaxed atomics: read them with `load`).
#[derive(Debug, Default)]
pub struct FollowStats {
    /// Files currently followed (a gauge; stdin not included).
    pub files_followed: AtomicU64,
    /// Lines emitted (including cut and idle-flushed ones).
    pub lines_read: AtomicU64,
    /// Bytes consumed from files and stdin.
    pub bytes_read: AtomicU64,
    /// Lines cut at `max_line_bytes`.
    pub lines_cut: AtomicU64,
    /// Times a file was found truncated or rewritten and read again from its start.
    pub truncations: AtomicU64,
    /// Times a followed path stopped naming its file (renamed away, replaced, deleted).
    pub rotations: AtomicU64,
}

/// A glob the follower cannot use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FollowError {
    /// The glob does not parse.
    #[error("bad log glob `{glob}`: {reason} at character {pos}; fix: write a literal `*`, `?` or `[` as `[*]`, `[?]`, `[[]`, close every `[`, and use `**` only as a whole path component (`logs/**/stderr.log`)")]
    BadGlob {
        /// The glob as given.
        glob: String,
        /// What is wrong with it.
        reason: String,
        /// Character index of the problem.
        pos: usize,
    },
    /// An empty string was given as a glob.
    #[error("empty log glob; fix: remove it, or give a path or glob such as `/var/log/nccl.*.log` (`-` means stdin)")]
    EmptyGlob,
}

/// Follows the files matching a set of globs (and stdin for `-`). See the module docs.
#[derive(Debug)]
pub struct Follower {
    patterns: Vec<Pattern>,
    stdin: bool,
    opts: FollowOptions,
    stats: Arc<FollowStats>,
}

impl Follower {
    /// Validates the globs. `-` means stdin.
    pub fn new(globs: Vec<String>, opts: FollowOptions) -> Result<Follower, FollowError> {
        let mut patterns = Vec::new();
        let mut stdin = false;
        for g in &globs {
            if g == "-" {
                stdin = true;
            } else {
                patterns.push(Pattern::parse(g)?);
            }
        }
        Ok(Follower {
            patterns,
            stdin,
            opts,
            stats: Arc::new(FollowStats::default()),
        })
    }

    /// Counters shared with the running follower.
    pub fn stats(&self) -> Arc<FollowStats> {
        Arc::clone(&self.stats)
    }

    /// Follows until `shutdown` is cancelled or the receiver of `lines` is dropped. Waits when
    /// `lines` is full. Never fails: problems with paths are logged and retried.
    pub async fn run(self, lines: Sender<LogLine>, shutdown: CancellationToken) {
        let Follower {
            patterns,
            stdin,
            opts,
            stats,
        } = self;
        let files = async {
            if !patterns.is_empty() {
                run_files(
                    patterns,
                    opts.clone(),
                    Arc::clone(&stats),
                    &lines,
                    &shutdown,
                )
                .await;
            }
        };
        let input = async {
            if stdin {
                stdin::run(&opts, &stats, &lines, &shutdown).await;
            }
        };
        tokio::join!(files, input);
    }
}

/// The poll loop for files: poll on the blocking pool, hand lines over, wait for the next poll.
async fn run_files(
    patterns: Vec<Pattern>,
    opts: FollowOptions,
    stats: Arc<FollowStats>,
    lines: &Sender<LogLine>,
    shutdown: &CancellationToken,
) {
    let interval = opts.poll_interval.max(Duration::from_millis(1));
    // After an inotify wake-up, let a burst of writes land before polling, but
    // briefly: the trigger path's latency budget is p50 10 ms (BENCHMARKS.md).
    let settle = (interval / 50).clamp(Duration::from_millis(1), Duration::from_millis(3));
    let mut wake = Wake::new();
    let mut poller = Poller::new(patterns, opts, stats);
    loop {
        if shutdown.is_cancelled() {
            return;
        }
        let polled = tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            let report = poller.poll(&mut out);
            (poller, out, report)
        })
        .await;
        let (p, out, report) = match polled {
            Ok(v) => v,
            Err(e) => {
                tracing::error!(error = %e, "log follower poll failed; log following stopped");
                return;
            }
        };
        poller = p;
        wake.set_dirs(report.dirs);
        for line in out {
            if !send(lines, line, shutdown).await {
                return;
            }
        }
        if report.more {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
            _ = wake.notified() => tokio::time::sleep(settle).await,
        }
    }
}

/// Sends one line, waiting while the channel is full. `false`: stop (shutdown or receiver gone).
async fn send(lines: &Sender<LogLine>, line: LogLine, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = shutdown.cancelled() => false,
        sent = lines.send(line) => sent.is_ok(),
    }
}
