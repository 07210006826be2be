//! A window: one capture file being written, from the ring, on its own thread.
//!
//! When a trigger opens a window, the window subscribes to the ring (taking
//! references to the blocks it needs, then to every block sealed later) and a
//! thread merges the interfaces' records by timestamp as the ring's watermark
//! rises, writing packets in [start, end] straight into the capture file under
//! a temporary name (0600), asking the kernel to start writeback as it goes.
//! When the watermark passes `end` the window closes: the section header,
//! written with reserved room at open, is rewritten in place with every
//! trigger line (only known now), the file is synced and renamed; then the
//! sidecar is written the same way. The sidecar appears last, so its presence
//! means the capture is complete.
//!
//! A trigger that fires while the window is open extends `end` (the
//! [`Recorder`](crate::recorder::Recorder) decides); the shared
//! [`WindowShared`] is how it reaches the writer thread.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::capture::InterfaceInfo;
use crate::capture_file::pcapng;
use crate::counters::{self, CounterSnapshot};
use crate::private_file::{create_private, rename_noreplace, tmp_path, write_private_atomically};
use crate::ring::{Block, Ring, RingEvent, RingSpan, WATERMARK_END};
use crate::sidecar::{self, InterfaceReport, RdmaCounters, Sidecar, TriggerRecord, WindowReport};
use crate::tasks::Tasks;

/// Buffer of the file writer, for records written one at a time. Smaller than a
/// ring block, so whole blocks bypass it and are written without a copy.
const WRITE_BUFFER: usize = 64 << 10;
/// Start kernel writeback every this many bytes, so the final sync is short.
const WRITEBACK_STEP: u64 = 16 << 20;

/// State of an open window shared between the recorder and the writer thread.
#[derive(Debug)]
pub struct WindowShared {
    inner: Mutex<WindowState>,
}

/// What the recorder may change while the window is open.
#[derive(Debug)]
pub struct WindowState {
    /// Start of the window (fixed once opened).
    pub start: i64,
    /// End of the window (a later trigger may extend it).
    pub end: i64,
    /// Set by the writer when it has decided to close; no more changes then.
    pub closed: bool,
    /// Triggers recorded in this window.
    pub triggers: Vec<TriggerRecord>,
    /// Matches merged into this window without being recorded.
    pub suppressed: u64,
    /// Earliest start any trigger asked for (may precede `start`).
    pub asked_start: i64,
}

impl WindowShared {
    /// A window in `state`.
    pub fn new(state: WindowState) -> WindowShared {
        WindowShared {
            inner: Mutex::new(state),
        }
    }

    /// Lock the state (a poisoned lock still holds valid data).
    pub fn lock(&self) -> MutexGuard<'_, WindowState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a window ended.
#[derive(Debug, Clone)]
pub enum CaptureOutcome {
    /// The capture file and sidecar are written.
    Written {
        /// Path of the pcapng file.
        pcapng: PathBuf,
        /// Path of the JSON sidecar.
        sidecar: PathBuf,
        /// The sidecar's content.
        report: Box<Sidecar>,
    },
    /// Writing failed (disk full, permission…); the temporary files were removed.
    Failed {
        /// The file that could not be written.
        path: PathBuf,
        /// What went wrong, one line.
        error: String,
    },
}

/// What a window writes besides the capture file and its sidecar.
#[derive(Debug, Clone, Default)]
pub struct WindowOptions {
    /// Write `<stem>.summary.json` and `<stem>.svg` (the analysis) before the sidecar.
    pub reports: bool,
    /// Read RDMA counters under this sysfs root at open and at close (`None`: don't).
    pub sysfs_root: Option<PathBuf>,
}

/// Everything a window writer needs, fixed at open.
pub struct WindowPlan {
    /// File stem and incident id.
    pub incident: String,
    /// Directory of the output.
    pub dir: PathBuf,
    /// Host name for the sidecar and comment.
    pub host: String,
    /// The interfaces of the ring, in ring order.
    pub interfaces: Arc<Vec<InterfaceInfo>>,
    /// Reports and counters.
    pub options: WindowOptions,
}

/// Start a window: subscribe to the ring and spawn the writer thread.
/// `done` receives the outcome when the window closes.
/// The thread is tracked by `tasks`; the RDMA counters "at trigger" are read
/// on it, not on the caller's (which holds the recorder's lock).
pub fn open(
    ring: &Arc<Ring>,
    plan: WindowPlan,
    shared: Arc<WindowShared>,
    done: tokio::sync::mpsc::UnboundedSender<CaptureOutcome>,
    tasks: &Tasks,
) -> io::Result<()> {
    let (tx, rx) = mpsc::channel();
    let start = shared.lock().start;
    let counters_at_open: Vec<[u64; 2]> =
        plan.interfaces.iter().map(|i| i.counters.drops()).collect();
    let stats = ring.stats();
    let ring_at_open = [
        stats.evicted_blocks.load(Ordering::Relaxed),
        stats.ring_full_drops.load(Ordering::Relaxed),
    ];
    let span = ring.subscribe(start, tx);
    let ring = Arc::clone(ring);
    let name = format!("window-{}", plan.incident);
    tasks.thread(name, move || {
        let counters_at_trigger = read_counters(&plan);
        let mut w = Writer::new(plan, shared, span);
        let outcome = w
            .run(rx)
            .and_then(|()| w.finish(&ring, &counters_at_open, ring_at_open, counters_at_trigger));
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                w.cleanup();
                CaptureOutcome::Failed {
                    path: w.final_path(),
                    error: explain_write_error(&e, &w.plan.dir),
                }
            }
        };
        let _ = done.send(outcome);
    })
}

/// One interface's pinned blocks, read front to back.
struct Queue {
    blocks: VecDeque<(Arc<Block>, usize)>,
    /// Timestamp of the record at the front (kept, so choosing the next record
    /// across interfaces decodes nothing).
    head: Option<i64>,
}

impl Queue {
    fn push(&mut self, block: Arc<Block>) {
        self.blocks.push_back((block, 0));
        if self.head.is_none() {
            self.refresh();
        }
    }

    /// Drop exhausted blocks (their buffers may go back to the pool) and
    /// re-read the front record's timestamp.
    fn refresh(&mut self) {
        self.head = loop {
            let Some((b, off)) = self.blocks.front() else {
                break None;
            };
            match b.record_at(*off) {
                Some((r, _)) => break Some(r.ts),
                None => {
                    self.blocks.pop_front();
                }
            }
        };
    }
}

struct Writer {
    plan: WindowPlan,
    shared: Arc<WindowShared>,
    reaches_back_to: i64,
    evicted: bool,
    queues: Vec<Queue>,
    file: Option<BufWriter<File>>,
    tmp_path: PathBuf,
    /// The capture, in place, whose sidecar could not be written.
    kept: Option<PathBuf>,
    written: u64,
    synced: u64,
    packets: u64,
    bytes: u64,
    wire_bytes: u64,
    per_iface: Vec<u64>,
    last_watermark: i64,
}

impl Writer {
    fn new(plan: WindowPlan, shared: Arc<WindowShared>, span: RingSpan) -> Writer {
        let n = plan.interfaces.len();
        let tmp_path = tmp_path(&plan.dir.join(format!("{}.pcapng", plan.incident)));
        Writer {
            plan,
            shared,
            reaches_back_to: span.reaches_back_to,
            evicted: span.evicted,
            queues: (0..n)
                .map(|_| Queue {
                    blocks: VecDeque::new(),
                    head: None,
                })
                .collect(),
            file: None,
            tmp_path,
            kept: None,
            written: 0,
            synced: 0,
            packets: 0,
            bytes: 0,
            wire_bytes: 0,
            per_iface: vec![0; n],
            last_watermark: i64::MIN,
        }
    }

    fn final_path(&self) -> PathBuf {
        self.plan.dir.join(format!("{}.pcapng", self.plan.incident))
    }

    fn cleanup(&mut self) {
        self.file = None;
        let _ = fs::remove_file(&self.tmp_path);
    }

    fn run(&mut self, rx: Receiver<RingEvent>) -> io::Result<()> {
        let mut file = BufWriter::with_capacity(WRITE_BUFFER, create_private(&self.tmp_path)?);
        let descs: Vec<_> = self
            .plan
            .interfaces
            .iter()
            .map(|i| i.desc.clone())
            .collect();
        file.write_all(&pcapng::section_header(&[]))?;
        file.write_all(&pcapng::interface_blocks(&descs))?;
        self.file = Some(file);
        let (start, _) = self.window();
        for ev in rx {
            match ev {
                RingEvent::Block(b) => {
                    if let Some(q) = self.queues.get_mut(usize::from(b.iface())) {
                        q.push(b);
                    }
                }
                RingEvent::Watermark(w) => {
                    let (_, end) = self.window();
                    self.emit_until(start, end, w.min(end))?;
                    if w != WATERMARK_END {
                        self.last_watermark = w;
                    }
                    if w >= end && self.try_close(w) {
                        return Ok(());
                    }
                }
            }
        }
        // The ring went away (agent stopping): write what arrived.
        let (_, end) = self.window();
        self.emit_until(start, end, end)?;
        self.shared.lock().closed = true;
        Ok(())
    }

    fn window(&self) -> (i64, i64) {
        let st = self.shared.lock();
        (st.start, st.end)
    }

    /// Close unless a trigger extended the window past `w` meanwhile.
    fn try_close(&self, w: i64) -> bool {
        let mut st = self.shared.lock();
        if w >= st.end {
            st.closed = true;
            true
        } else {
            false
        }
    }

    /// Write every record with ts <= `limit`, merged across interfaces by time;
    /// records outside [start, end] are skipped.
    fn emit_until(&mut self, start: i64, end: i64, limit: i64) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        loop {
            // Few interfaces (1–8): a linear scan beats a heap.
            let mut best: Option<(usize, i64)> = None;
            for (i, q) in self.queues.iter().enumerate() {
                if let Some(ts) = q.head {
                    if best.is_none_or(|(_, b)| ts < b) {
                        best = Some((i, ts));
                    }
                }
            }
            let Some((i, ts)) = best else { break };
            if ts > limit {
                break;
            }
            // The front block goes out whole when every record in it falls in
            // the window, is released, and comes before the other interfaces'
            // next records: exactly what the per-record merge below would write.
            // (On equal times the merge takes the lower interface index first.)
            let before_others = self.queues[i].blocks.front().is_some_and(|(b, _)| {
                let last = b.last_ts();
                self.queues
                    .iter()
                    .enumerate()
                    .all(|(j, q)| j == i || q.head.is_none_or(|h| last < h || (j > i && last == h)))
            });
            let q = &mut self.queues[i];
            let Some((block, off)) = q.blocks.front_mut() else {
                break;
            };
            if *off == 0
                && before_others
                && block.min_ts() >= start
                && block.last_ts() <= end.min(limit)
            {
                file.write_all(block.pcapng())?;
                self.written += block.pcapng().len() as u64;
                self.packets += u64::from(block.packets());
                self.bytes += block.data_bytes();
                self.wire_bytes += block.wire_bytes();
                self.per_iface[i] += u64::from(block.packets());
                q.blocks.pop_front();
                q.refresh();
            } else {
                let Some((rec, next)) = block.record_at(*off) else {
                    q.refresh();
                    continue;
                };
                if ts >= start && ts <= end {
                    file.write_all(rec.pcapng)?;
                    self.written += rec.pcapng.len() as u64;
                    self.packets += 1;
                    self.bytes += rec.data.len() as u64;
                    self.wire_bytes += u64::from(rec.orig_len);
                    self.per_iface[i] += 1;
                }
                *off = next;
                q.refresh();
            }
            if self.written >= self.synced + WRITEBACK_STEP {
                start_writeback(file.get_ref(), self.synced, self.written - self.synced);
                self.synced = self.written;
            }
        }
        Ok(())
    }

    fn finish(
        &mut self,
        ring: &Ring,
        counters_at_open: &[[u64; 2]],
        ring_at_open: [u64; 2],
        counters_at_trigger: Option<CounterSnapshot>,
    ) -> io::Result<CaptureOutcome> {
        let Some(file) = self.file.take() else {
            return Err(io::Error::other("capture file was never opened"));
        };
        let out = file.into_inner().map_err(|e| e.into_error())?;
        self.queues.clear();
        let (triggers, suppressed, start, end, asked_start) = {
            let st = self.shared.lock();
            (
                st.triggers.clone(),
                st.suppressed,
                st.start,
                st.end,
                st.asked_start,
            )
        };

        // Coverage: the ring's reach at open bounds the start; the last real
        // watermark bounds the end (a replay ending or the agent stopping early).
        let covered_start = start.max(self.reaches_back_to);
        let covered_end = end.min(self.last_watermark.max(covered_start));
        let mut shortfall = Vec::new();
        if asked_start < start {
            shortfall.push(format!(
                "a later trigger asked for packets from {} but the file had already started at {}",
                crate::clock::rfc3339(asked_start),
                crate::clock::rfc3339(start)
            ));
        }
        if covered_start > start {
            let at = triggers.first().map_or(covered_start, |t| t.at_ns);
            let what = if self.evicted {
                "the ring reached back only to"
            } else {
                "tripcap started capturing at"
            };
            let fix = if self.evicted {
                "raise memory_limit (or max_age) or narrow the filter"
            } else {
                "nothing before that was recorded"
            };
            shortfall.push(format!(
                "{what} {} ({:.3} s before the trigger; the window asked for {:.3} s): {fix}",
                crate::clock::rfc3339(covered_start),
                seconds(at.saturating_sub(covered_start)),
                seconds(at.saturating_sub(start)),
            ));
        }
        if covered_end < end {
            shortfall.push(format!(
                "capture stopped at {} before the window's end {} (replay ended or agent stopped)",
                crate::clock::rfc3339(covered_end),
                crate::clock::rfc3339(end)
            ));
        }
        let stats = ring.stats();
        let ring_evictions = stats
            .evicted_blocks
            .load(Ordering::Relaxed)
            .saturating_sub(ring_at_open[0]);
        let ring_full_drops = stats
            .ring_full_drops
            .load(Ordering::Relaxed)
            .saturating_sub(ring_at_open[1]);
        if ring_full_drops > 0 {
            shortfall.push(format!(
                "{ring_full_drops} packets dropped because every ring buffer was held by captures being written (disk too slow?)"
            ));
        }
        let interfaces: Vec<InterfaceReport> = self
            .plan
            .interfaces
            .iter()
            .enumerate()
            .map(|(i, info)| {
                let [k0, f0] = counters_at_open.get(i).copied().unwrap_or_default();
                let [k1, f1] = info.counters.drops();
                InterfaceReport {
                    name: info.desc.name.clone(),
                    linktype: info.desc.linktype,
                    snaplen: info.desc.snaplen,
                    filter: info.desc.filter.clone(),
                    tstamp_precision: info.precision.to_string(),
                    packets: self.per_iface.get(i).copied().unwrap_or(0),
                    kernel_drops: k1.saturating_sub(k0),
                    if_drops: f1.saturating_sub(f0),
                }
            })
            .collect();
        for info in self.plan.interfaces.iter() {
            if let Some((at, why)) = info.counters.stopped() {
                if at <= end {
                    shortfall.push(format!(
                        "capture on `{}` stopped at {} ({why}): its packets after that are missing",
                        info.desc.name,
                        crate::clock::rfc3339(at)
                    ));
                }
            }
        }
        let kernel_drops: u64 = interfaces.iter().map(|i| i.kernel_drops + i.if_drops).sum();
        if kernel_drops > 0 {
            shortfall.push(format!(
                "the kernel dropped {kernel_drops} packets while the window was open: raise buffer_size or narrow the filter"
            ));
        }
        let complete = shortfall.is_empty();
        let file = format!("{}.pcapng", self.plan.incident);
        let report = Sidecar {
            schema: sidecar::SCHEMA.to_string(),
            tripcap_version: env!("CARGO_PKG_VERSION").to_string(),
            incident: self.plan.incident.clone(),
            host: self.plan.host.clone(),
            file: file.clone(),
            triggers,
            suppressed_matches: suppressed,
            window: WindowReport {
                asked_start_ns: asked_start.min(start),
                asked_end_ns: end,
                covered_start_ns: covered_start,
                covered_end_ns: covered_end,
                asked: [
                    crate::clock::rfc3339(asked_start.min(start)),
                    crate::clock::rfc3339(end),
                ],
                covered: [
                    crate::clock::rfc3339(covered_start),
                    crate::clock::rfc3339(covered_end),
                ],
                complete,
                shortfall,
            },
            packets: self.packets,
            bytes: self.bytes,
            wire_bytes: self.wire_bytes,
            interfaces,
            ring_evictions,
            ring_full_drops,
            rdma_counters: counters_at_trigger.map(|at_trigger| {
                let at_end = read_counters(&self.plan).unwrap_or_default();
                let delta = counters::delta(&at_trigger, &at_end);
                RdmaCounters {
                    at_trigger,
                    at_end,
                    delta,
                }
            }),
        };

        let comments = comments(&self.plan.host, &report);
        out.write_all_at(&pcapng::section_header(&comments), 0)?;
        out.sync_all()?;
        drop(out);
        let final_path = self.final_path();
        rename_noreplace(&self.tmp_path, &final_path)?;

        if self.plan.options.reports {
            // The analysis and picture go beside the capture before the sidecar,
            // whose presence marks the unit complete. A failure loses only them.
            if let Err(e) = crate::analyze::write_capture_report_with(&final_path, &report) {
                tracing::warn!(file = %final_path.display(), error = %e, "capture written, but its report could not be");
            }
        }
        let sidecar_path = self.plan.dir.join(format!("{}.json", self.plan.incident));
        let json = serde_json::to_vec_pretty(&report).map_err(io::Error::other)?;
        if let Err(e) = write_private_atomically(&sidecar_path, &json) {
            // The packets are in place: keep them. The next start completes the
            // unit from the file (`deliver::recover`), so it is not stranded.
            self.kept = Some(final_path);
            return Err(e);
        }
        sync_dir(&self.plan.dir);
        Ok(CaptureOutcome::Written {
            pcapng: final_path,
            sidecar: sidecar_path,
            report: Box::new(report),
        })
    }
}

fn seconds(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// The section-header comments: one summary, then one per trigger line.
fn comments(host: &str, report: &Sidecar) -> Vec<String> {
    let mut out = vec![format!(
        "tripcap {} on {host}: incident {}; window {} .. {}{}",
        report.tripcap_version,
        report.incident,
        report.window.asked[0],
        report.window.asked[1],
        if report.window.complete {
            String::new()
        } else {
            format!("; INCOMPLETE: {}", report.window.shortfall.join("; "))
        }
    )];
    for t in &report.triggers {
        let mut c = format!("trigger {} ({}) at {}", t.name, t.class, t.at);
        if let Some(src) = &t.source {
            c.push_str(&format!(" from {src}"));
            if let Some(n) = t.line_no {
                c.push_str(&format!(":{n}"));
            }
        }
        if let Some(line) = &t.line {
            c.push_str(&format!(": {line}"));
        }
        out.push(c);
    }
    out
}

/// A write error as one line that says what to do.
fn explain_write_error(e: &io::Error, dir: &Path) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => format!(
            "the disk holding {} is full ({e}): free space there, point output.dir elsewhere, or bound it with spool.max_spool; the packets stay in the ring until evicted",
            dir.display()
        ),
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
            format!("cannot write in {} ({e}): fix its permissions or point output.dir elsewhere", dir.display())
        }
        _ => format!("writing in {} failed: {e}", dir.display()),
    }
}

/// RDMA counters of the devices behind the plan's interfaces, or `None` when
/// counters are off or no RDMA device sits behind them.
fn read_counters(plan: &WindowPlan) -> Option<CounterSnapshot> {
    let root = plan.options.sysfs_root.as_deref()?;
    let netdevs: Vec<String> = plan
        .interfaces
        .iter()
        .map(|i| i.desc.name.clone())
        .collect();
    let snap = counters::snapshot(root, &netdevs);
    (!snap.devices.is_empty()).then_some(snap)
}

/// Ask the kernel to start writing `len` bytes at `offset` to disk, without waiting.
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::unix::io::AsRawFd;
    // SAFETY: plain syscall on a valid descriptor; failure only loses the hint.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
