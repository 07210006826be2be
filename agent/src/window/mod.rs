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

mod coverage;
mod merge;
mod writer;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::capture::InterfaceInfo;
use crate::counters::{self, CounterSnapshot};
use crate::ring::Ring;
use crate::sidecar::{Sidecar, TriggerRecord};
use crate::tasks::Tasks;
use writer::{AtOpen, Writer};

/// An open window as the recorder and its writer thread share it. Its state
/// is private: the recorder extends or records through [`WindowShared::merge`],
/// the writer reads the bounds and closes it, and nothing else changes it.
#[derive(Debug)]
pub struct WindowShared {
    inner: Mutex<WindowState>,
}

#[derive(Debug)]
struct WindowState {
    /// Start of the window (fixed once opened).
    start: i64,
    /// End of the window (a later trigger may extend it).
    end: i64,
    /// Set by the writer when it has decided to close; no more changes then.
    closed: bool,
    /// Triggers recorded in this window.
    triggers: Vec<TriggerRecord>,
    /// Matches merged into this window without being recorded.
    suppressed: u64,
    /// Earliest start any trigger asked for (may precede `start`).
    asked_start: i64,
    /// The fleet incident this window was tied to, and the file stem it takes
    /// at close (the incident id, made unique in the directory).
    fleet: Option<(String, String)>,
}

/// What [`WindowShared::merge`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merged {
    /// The firing is recorded in the window.
    Recorded,
    /// Only counted (cooling down, or the window holds its most trigger lines).
    Counted,
    /// The window had closed meanwhile: nothing changed.
    Closed,
}

/// What the window holds when its writer closes it.
#[derive(Debug, Clone)]
pub(crate) struct Closing {
    pub(crate) start: i64,
    pub(crate) end: i64,
    pub(crate) asked_start: i64,
    pub(crate) triggers: Vec<TriggerRecord>,
    pub(crate) suppressed: u64,
    pub(crate) fleet: Option<(String, String)>,
}

impl WindowShared {
    /// A window over [start, end] opened by `first`; `suppressed` matches of
    /// its trigger were suppressed since that trigger's previous capture.
    pub fn new(start: i64, end: i64, first: TriggerRecord, suppressed: u64) -> WindowShared {
        WindowShared {
            inner: Mutex::new(WindowState {
                start,
                end,
                closed: false,
                asked_start: start,
                triggers: vec![first],
                suppressed,
                fleet: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, WindowState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// [start, end] while the window is open; `None` once its writer closed it.
    pub fn bounds(&self) -> Option<(i64, i64)> {
        let st = self.lock();
        (!st.closed).then_some((st.start, st.end))
    }

    /// Tie the window to fleet incident `incident`, to be written as `stem`;
    /// false when it is closed or already tied (the first tie holds).
    pub fn tie(&self, incident: &str, stem: &str) -> bool {
        let mut st = self.lock();
        if st.closed || st.fleet.is_some() {
            return false;
        }
        st.fleet = Some((incident.to_string(), stem.to_string()));
        true
    }

    /// The fleet incident the window is tied to, if any.
    pub fn fleet_incident(&self) -> Option<String> {
        self.lock().fleet.as_ref().map(|(id, _)| id.clone())
    }

    /// Whether the writer has closed it.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Extend the window to `new_end` and, when `record` is given and fewer than
    /// `max_triggers` are recorded, record it (with the start it asked for);
    /// otherwise count the match. Nothing changes once the window closed.
    pub fn merge(
        &self,
        new_end: i64,
        record: Option<(TriggerRecord, i64)>,
        max_triggers: usize,
    ) -> Merged {
        let mut st = self.lock();
        if st.closed {
            return Merged::Closed;
        }
        st.end = new_end;
        match record {
            Some((r, asked_start)) if st.triggers.len() < max_triggers => {
                st.asked_start = st.asked_start.min(asked_start);
                st.triggers.push(r);
                Merged::Recorded
            }
            _ => {
                st.suppressed += 1;
                Merged::Counted
            }
        }
    }

    /// The writer: [start, end] now (a trigger may have extended `end`).
    pub(crate) fn window(&self) -> (i64, i64) {
        let st = self.lock();
        (st.start, st.end)
    }

    /// The writer: close unless a trigger extended the window past `w`.
    pub(crate) fn try_close(&self, w: i64) -> bool {
        let mut st = self.lock();
        if w >= st.end {
            st.closed = true;
        }
        st.closed
    }

    /// The writer: close now (the ring went away).
    pub(crate) fn close(&self) {
        self.lock().closed = true;
    }

    /// The writer, once closed: what the window holds.
    pub(crate) fn closing(&self) -> Closing {
        let st = self.lock();
        Closing {
            start: st.start,
            end: st.end,
            asked_start: st.asked_start,
            triggers: st.triggers.clone(),
            suppressed: st.suppressed,
            fleet: st.fleet.clone(),
        }
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
    /// Who took part in a fleet incident, asked when a window tied to one closes.
    pub fleet: Option<Arc<dyn FleetParticipants>>,
    /// The host's baseline, which the report compares the capture with (issue 14).
    pub baseline: Option<crate::analyze::baseline::SharedProfile>,
}

/// Tells a closing window who took part in its fleet incident (the agent's
/// fleet link implements it; the window knows nothing of NATS).
pub trait FleetParticipants: Send + Sync + std::fmt::Debug {
    /// The sidecar's `fleet` section for incident `incident`.
    fn report(&self, incident: &str) -> Option<crate::sidecar::FleetReport>;
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
    let (start, _) = shared.window();
    let stats = ring.stats();
    let at_open = AtOpen {
        drops: plan.interfaces.iter().map(|i| i.counters.drops()).collect(),
        ring: [
            stats.evicted_blocks.load(Ordering::Relaxed),
            stats.ring_full_drops.load(Ordering::Relaxed),
        ],
    };
    let span = ring.subscribe(start, tx);
    let ring = Arc::clone(ring);
    let name = format!("window-{}", plan.incident);
    tasks.thread(name, move || {
        let began = std::time::Instant::now();
        let counters_at_trigger = read_counters(&plan);
        let mut w = Writer::new(plan, shared, span, &ring);
        let outcome = w
            .run(rx)
            .and_then(|()| w.finish(&ring, &at_open, counters_at_trigger));
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                w.cleanup();
                let mut error = explain_write_error(&e, &w.plan.dir);
                if let Some(kept) = &w.kept {
                    error.push_str(&format!(
                        "; the capture {} is kept without its sidecar and is completed when the agent next starts",
                        kept.display()
                    ));
                }
                CaptureOutcome::Failed {
                    path: w.final_path(),
                    error,
                }
            }
        };
        if let CaptureOutcome::Written { report, .. } = &outcome {
            // From the window opening to its unit complete (a window opened after
            // its end, as a replay's at the end, is its dump time: `bench-history.sh`).
            tracing::debug!(
                packets = report.packets,
                seconds = began.elapsed().as_secs_f64(),
                "window thread done"
            );
        }
        let _ = done.send(outcome);
    })
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
