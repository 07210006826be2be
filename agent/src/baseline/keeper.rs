//! The baseline's thread: it reads every sealed ring block (off the capture
//! thread, as the packet triggers do), summarises each interval per interface
//! and traffic class, appends the summaries to the [`History`] on disk, keeps
//! the host's [`Profile`] current for the windows that compare their captures
//! with it, and watches the `deviation` triggers on one-second summaries.
//!
//! Time is the capture clock ([`DetectorClock`]): an interval closes when
//! every interface has delivered its packets past its end. The interval open
//! when the agent stops is not kept (it is partial, and its rates would read
//! low).
//!
//! The capture path comes first: a block this thread holds is memory the
//! capture threads cannot reuse. When it falls more than [`MAX_LAG_NS`] of
//! capture time behind the ring's newest packet, it lets blocks go unread,
//! and the intervals (and seconds) they fall in are left out of the history
//! rather than kept with rates that read low.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use super::deviation::Watch;
use super::history::History;
use crate::analyze::baseline::{Profile, SharedProfile, Summarizer, Summary};
use crate::capture::InterfaceInfo;
use crate::packet_triggers::{fire_all, DetectorClock, PacketTriggerDef};
use crate::recorder::{Recorder, TriggerId};
use crate::ring::{Ring, RingEvent, WATERMARK_END};
use crate::tasks::Tasks;
use crate::wire;

/// Summaries kept in memory for the profile (a week of minutes on a few
/// classes); the history on disk has its own bound.
const MAX_KEPT: usize = 50_000;

/// How far behind the ring's newest packet a block may be and still be read.
pub const MAX_LAG_NS: i64 = 2_000_000_000;

/// What the baseline thread has done, for `/status` and `/metrics`.
#[derive(Debug, Default)]
pub struct BaselineStats {
    /// Summaries in the profile now.
    pub summaries: AtomicU64,
    /// Start of the oldest of them, ns (0: none).
    pub oldest_ns: AtomicI64,
    /// Summaries written to the history.
    pub written: AtomicU64,
    /// Appends to the history that failed.
    pub write_errors: AtomicU64,
    /// Blocks let go unread because the thread was behind.
    pub skipped_blocks: AtomicU64,
}

/// What the thread needs.
pub struct KeeperParts {
    /// The ring to read.
    pub ring: Arc<Ring>,
    /// Its interfaces, in ring order (names key the summaries).
    pub interfaces: Arc<Vec<InterfaceInfo>>,
    /// Where `deviation` firings go.
    pub recorder: Arc<Recorder>,
    /// The history on disk (`None`: kept in memory only, for a replay).
    pub history: Option<History>,
    /// Summary interval.
    pub interval: Duration,
    /// How far back the profile reaches.
    pub keep: Duration,
    /// Where the current profile is published.
    pub profile: SharedProfile,
    /// The `deviation` triggers, with their ids in the recorder.
    pub deviations: Vec<(TriggerId, PacketTriggerDef)>,
    /// Let blocks go unread when behind (live capture); a replay waits for
    /// free blocks instead of dropping packets, so it reads every one.
    pub may_skip: bool,
    /// Its counters.
    pub stats: Arc<BaselineStats>,
}

/// Blocks let go unread, per interface: their capture-time ranges.
#[derive(Debug, Default)]
struct Skipped {
    ranges: Vec<(String, i64, i64)>,
    blocks: u64,
}

impl Skipped {
    /// Whether `s` lost packets to a skipped block.
    fn touches(&self, s: &Summary) -> bool {
        self.ranges
            .iter()
            .any(|(i, a, b)| *i == s.interface && *a < s.end_ns && *b >= s.start_ns)
    }

    /// Forget ranges that ended before `oldest`.
    fn prune(&mut self, oldest: i64) {
        self.ranges.retain(|(_, _, b)| *b >= oldest);
    }
}

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// Starts the baseline thread, tracked by `tasks`. It loads the history kept
/// so far (so a restarted agent compares against the days before), then
/// follows the ring until its watermark reaches the end.
pub fn spawn(parts: KeeperParts, tasks: &Tasks) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    parts.ring.subscribe(i64::MAX, tx);
    tasks.thread("baseline", move || run(rx, parts))
}

struct State {
    kept: VecDeque<Summary>,
    keep_ns: i64,
    history: Option<History>,
    shared: SharedProfile,
    profile: Option<Arc<Profile>>,
    write_failed: bool,
    stats: Arc<BaselineStats>,
}

impl State {
    /// Keep `closed` (on disk and in memory) and publish the new profile.
    fn closed(&mut self, closed: Vec<Summary>, now: i64) {
        if closed.is_empty() {
            return;
        }
        if let Some(h) = &self.history {
            let r = h.append(&closed, now);
            let counter = match &r {
                Ok(()) => &self.stats.written,
                Err(_) => &self.stats.write_errors,
            };
            counter.fetch_add(
                if r.is_ok() { closed.len() as u64 } else { 1 },
                Ordering::Relaxed,
            );
            match r {
                Ok(()) => self.write_failed = false,
                Err(e) if !self.write_failed => {
                    self.write_failed = true;
                    tracing::warn!(dir = %h.dir().display(), error = %e, "cannot write the baseline history (kept in memory; retried each interval)");
                }
                Err(_) => {}
            }
        }
        self.kept.extend(closed);
        let oldest = now.saturating_sub(self.keep_ns);
        while self
            .kept
            .front()
            .is_some_and(|s| s.start_ns < oldest || self.kept.len() > MAX_KEPT)
        {
            self.kept.pop_front();
        }
        self.publish();
    }

    fn publish(&mut self) {
        self.stats
            .summaries
            .store(self.kept.len() as u64, Ordering::Relaxed);
        self.stats.oldest_ns.store(
            self.kept.front().map_or(0, |s| s.start_ns),
            Ordering::Relaxed,
        );
        if self.kept.is_empty() {
            return;
        }
        let profile = Profile::of(self.kept.make_contiguous());
        self.shared.set(profile);
        self.profile = self.shared.get();
    }
}

fn run(rx: mpsc::Receiver<RingEvent>, parts: KeeperParts) {
    let KeeperParts {
        ring,
        interfaces,
        recorder,
        history,
        interval,
        keep,
        profile: shared,
        deviations,
        may_skip,
        stats,
    } = parts;
    let keep_ns = nanos(keep);
    let since = crate::clock::now_ns().saturating_sub(keep_ns);
    let kept = match history.as_ref().map(|h| (h, h.load(since))) {
        None => Vec::new(),
        Some((_, Ok(v))) => v,
        Some((h, Err(e))) => {
            tracing::warn!(dir = %h.dir().display(), error = %e, "cannot read the baseline history: starting a new one");
            Vec::new()
        }
    };
    let mut state = State {
        kept: kept.into_iter().collect(),
        keep_ns,
        history,
        shared,
        profile: None,
        write_failed: false,
        stats: Arc::clone(&stats),
    };
    state.publish();

    let names: Vec<(String, u32)> = interfaces
        .iter()
        .map(|i| (i.desc.name.clone(), u32::from(i.desc.linktype)))
        .collect();
    let mut coarse = Summarizer::new(nanos(interval));
    let mut watch = Watch::new(deviations);
    let mut fine = (!watch.is_empty()).then(|| Summarizer::new(1_000_000_000));
    let mut clock = DetectorClock::new(interfaces.len());
    let (mut closed, mut seconds, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let mut skipped = Skipped::default();
    while let Ok(event) = rx.recv() {
        let now = match event {
            RingEvent::Block(block) => {
                let iface = usize::from(block.iface());
                let (name, linktype) = names
                    .get(iface)
                    .map_or(("?", wire::linktype::ETHERNET), |(n, l)| (n.as_str(), *l));
                let lag = ring
                    .span()
                    .newest_ts
                    .map_or(0, |n| n.saturating_sub(block.last_ts()));
                if may_skip && lag > MAX_LAG_NS {
                    if skipped.blocks == 0 {
                        tracing::warn!(lag_s = lag as f64 / 1e9, "the baseline falls behind the capture: letting blocks go unread (the intervals they fall in are left out)");
                    }
                    skipped.blocks += 1;
                    stats.skipped_blocks.fetch_add(1, Ordering::Relaxed);
                    skipped
                        .ranges
                        .push((name.to_string(), block.first_ts(), block.last_ts()));
                    let last = block.last_ts();
                    drop(block);
                    clock.delivered(iface, last)
                } else {
                    let mut newest = i64::MIN;
                    for rec in block.records() {
                        // Parsed once for both summaries.
                        let frame = wire::parse_frame(linktype, rec.data);
                        let (ts, data, len) = (rec.ts, rec.data, rec.orig_len);
                        closed.extend(coarse.parsed_packet(name, ts, data, len, &frame));
                        if let Some(f) = &mut fine {
                            seconds.extend(f.parsed_packet(name, ts, data, len, &frame));
                        }
                        newest = newest.max(rec.ts);
                    }
                    clock.delivered(iface, newest)
                }
            }
            // Subscribed from now on: every block comes raw.
            RingEvent::Packed(_) => None,
            RingEvent::Watermark(WATERMARK_END) => break,
            RingEvent::Watermark(w) => clock.watermark(w),
        };
        let Some(now) = now else {
            continue;
        };
        // Seconds first, against the profile from before the interval that
        // holds them closes: a storm is judged against what came before it.
        if let Some(f) = &mut fine {
            seconds.extend(f.tick(now));
            seconds.retain(|s| !skipped.touches(s));
            if !seconds.is_empty() {
                watch.seconds(&seconds, state.profile.as_deref(), now, &mut out);
                seconds.clear();
                fire_all(&recorder, &mut out);
            }
        }
        closed.extend(coarse.tick(now));
        closed.retain(|s| !skipped.touches(s));
        state.closed(std::mem::take(&mut closed), now);
        skipped.prune(now.saturating_sub(2 * nanos(interval)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_a_skipped_block_falls_in_are_left_out() {
        let s = |iface: &str, start: i64| Summary {
            start_ns: start,
            end_ns: start + 10,
            interface: iface.into(),
            ..Summary::default()
        };
        let mut k = Skipped::default();
        k.ranges.push(("eth0".into(), 15, 22));
        assert!(!k.touches(&s("eth0", 0)), "ends before the block");
        assert!(k.touches(&s("eth0", 10)));
        assert!(k.touches(&s("eth0", 20)));
        assert!(!k.touches(&s("eth0", 30)), "starts after it");
        assert!(!k.touches(&s("eth1", 10)), "another interface");
        k.prune(23);
        assert!(!k.touches(&s("eth0", 20)));
    }
}
