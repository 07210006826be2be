//! The recorder: turns trigger firings into windows.
//!
//! A firing at time T asks for [T - pre, T + post] (or [onset - pre, T + post]
//! when the line said when the failure began). [`decide`] is the whole policy,
//! a pure function: merge into an open window that overlaps (extending its end,
//! bounded by `max_window`), open a new one, or suppress (cooldown). The
//! recorder applies the decision: it owns the list of open windows and the
//! per-trigger cooldown clocks, and nothing else.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::capture::InterfaceInfo;
use crate::ring::Ring;
use crate::sidecar::TriggerRecord;
use crate::window::{self, CaptureOutcome, WindowPlan, WindowShared, WindowState};

/// Triggers recorded per window at most; further matches are only counted.
pub const MAX_TRIGGERS_PER_WINDOW: usize = 64;

/// What the recorder knows of a trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerSpec {
    /// Name.
    pub name: String,
    /// Class.
    pub class: String,
    /// Time kept before.
    pub pre: Duration,
    /// Time kept after.
    pub post: Duration,
    /// Minimum time between two captures of this trigger.
    pub cooldown: Duration,
}

/// One firing of a trigger.
#[derive(Debug, Clone, Default)]
pub struct Firing {
    /// Index of the trigger in the recorder's list.
    pub trigger: usize,
    /// When it fired (capture clock, ns).
    pub at_ns: i64,
    /// When the failure began, if known (ns); the window starts `pre` before it.
    pub onset_ns: Option<i64>,
    /// Source file.
    pub source: Option<String>,
    /// Line number.
    pub line_no: Option<u64>,
    /// The line.
    pub line: Option<Vec<u8>>,
    /// Named groups.
    pub groups: Vec<(String, String)>,
}

/// What [`decide`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Open a new window.
    Open,
    /// Merge into open window `window`, whose end becomes `new_end`;
    /// `record` is false when the trigger is cooling down (only counted).
    Merge {
        /// Index into the open windows given.
        window: usize,
        /// The window's new end.
        new_end: i64,
        /// Whether to record the firing in the window.
        record: bool,
    },
    /// Drop it (cooldown, no open window to merge into).
    Suppress,
}

/// An open window as [`decide`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenWindow {
    /// Start.
    pub start: i64,
    /// End.
    pub end: i64,
}

/// The window policy. `asked` is the firing's [start, end]; `last_fired` the
/// last time this trigger opened or was recorded in a window.
pub fn decide(
    open: &[OpenWindow],
    asked: [i64; 2],
    at: i64,
    last_fired: Option<i64>,
    cooldown: Duration,
    max_window: Duration,
) -> Decision {
    let cooling = last_fired.is_some_and(|last| at.saturating_sub(last) < nanos(cooldown));
    let overlapping = open
        .iter()
        .position(|w| asked[0] <= w.end && asked[1] >= w.start);
    match overlapping {
        Some(i) => {
            let w = open[i];
            if cooling {
                Decision::Merge {
                    window: i,
                    new_end: w.end,
                    record: false,
                }
            } else {
                let cap = w.start.saturating_add(nanos(max_window));
                Decision::Merge {
                    window: i,
                    new_end: w.end.max(asked[1].min(cap)),
                    record: true,
                }
            }
        }
        None if cooling => Decision::Suppress,
        None => Decision::Open,
    }
}

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// What happened to a firing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fired {
    /// A new capture was opened (its incident id).
    Opened(String),
    /// Merged into the capture with this incident id.
    Merged(String),
    /// Dropped: the trigger is cooling down.
    Suppressed,
}

struct Open {
    incident: String,
    shared: Arc<WindowShared>,
}

struct State {
    open: Vec<Open>,
    last_fired: Vec<Option<i64>>,
    handles: Vec<JoinHandle<()>>,
    incidents: std::collections::HashSet<String>,
    /// Per trigger: matches suppressed with no window open since its last
    /// capture; carried into its next capture's `suppressed_matches`.
    pending_suppressed: Vec<u64>,
}

/// Counters of the recorder.
#[derive(Debug, Default)]
pub struct RecorderStats {
    /// Captures opened.
    pub opened: AtomicU64,
    /// Firings merged into an open capture.
    pub merged: AtomicU64,
    /// Firings suppressed (cooldown or per-window line cap).
    pub suppressed: AtomicU64,
    /// Per trigger (index as in [`Recorder::specs`]): firings that opened or
    /// were recorded in a capture.
    pub fired_by_trigger: Vec<AtomicU64>,
    /// Per trigger: firings suppressed.
    pub suppressed_by_trigger: Vec<AtomicU64>,
}

impl RecorderStats {
    fn for_triggers(n: usize) -> RecorderStats {
        RecorderStats {
            fired_by_trigger: (0..n).map(|_| AtomicU64::new(0)).collect(),
            suppressed_by_trigger: (0..n).map(|_| AtomicU64::new(0)).collect(),
            ..RecorderStats::default()
        }
    }

    fn count(list: &[AtomicU64], trigger: usize) {
        if let Some(c) = list.get(trigger) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Turns firings into windows on a ring.
pub struct Recorder {
    ring: Arc<Ring>,
    interfaces: Arc<Vec<InterfaceInfo>>,
    dir: PathBuf,
    host: String,
    specs: Vec<TriggerSpec>,
    max_window: Duration,
    done: tokio::sync::mpsc::UnboundedSender<CaptureOutcome>,
    state: Mutex<State>,
    stats: RecorderStats,
    window_options: window::WindowOptions,
}

impl Recorder {
    /// A recorder writing captures of `ring` into `dir`. `done` receives each
    /// capture's outcome.
    pub fn new(
        ring: Arc<Ring>,
        interfaces: Arc<Vec<InterfaceInfo>>,
        dir: PathBuf,
        host: String,
        specs: Vec<TriggerSpec>,
        max_window: Duration,
        done: tokio::sync::mpsc::UnboundedSender<CaptureOutcome>,
    ) -> Recorder {
        let n = specs.len();
        Recorder {
            window_options: window::WindowOptions::default(),
            ring,
            interfaces,
            dir,
            host,
            specs,
            max_window,
            done,
            state: Mutex::new(State {
                open: Vec::new(),
                last_fired: vec![None; n],
                handles: Vec::new(),
                incidents: Default::default(),
                pending_suppressed: vec![0; n],
            }),
            stats: RecorderStats::for_triggers(n),
        }
    }

    /// What windows write besides the capture (reports, RDMA counters).
    pub fn with_window_options(mut self, options: window::WindowOptions) -> Recorder {
        self.window_options = options;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The triggers.
    pub fn specs(&self) -> &[TriggerSpec] {
        &self.specs
    }

    /// Counters.
    pub fn stats(&self) -> &RecorderStats {
        &self.stats
    }

    /// Matches suppressed since their trigger's last capture, not yet in any
    /// capture's metadata (they go into the trigger's next capture).
    pub fn pending_suppressed(&self) -> u64 {
        self.lock().pending_suppressed.iter().sum()
    }

    /// Captures currently open (not yet closed by their writer).
    pub fn open_windows(&self) -> usize {
        self.lock()
            .open
            .iter()
            .filter(|o| !o.shared.lock().closed)
            .count()
    }

    /// The longest `post` of any trigger: how long after its last firing a
    /// capture can stay open.
    pub fn longest_post(&self) -> Duration {
        self.specs
            .iter()
            .map(|s| s.post)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// Apply a firing. Errors only when a new capture could not be started
    /// (the output directory is not writable…).
    pub fn fire(&self, f: Firing) -> std::io::Result<Fired> {
        let Some(spec) = self.specs.get(f.trigger).cloned() else {
            return Ok(Fired::Suppressed);
        };
        let from = f.onset_ns.unwrap_or(f.at_ns).min(f.at_ns);
        let asked = [
            from.saturating_sub(nanos(spec.pre)),
            f.at_ns.saturating_add(nanos(spec.post)),
        ];
        let record = TriggerRecord {
            name: spec.name.clone(),
            class: spec.class.clone(),
            at_ns: f.at_ns,
            at: crate::clock::rfc3339(f.at_ns),
            onset_ns: f.onset_ns,
            source: f.source,
            line_no: f.line_no,
            line: f.line.map(|l| String::from_utf8_lossy(&l).into_owned()),
            groups: f.groups,
            asked,
        };

        let mut st = self.lock();
        st.open.retain(|o| !o.shared.lock().closed);
        let views: Vec<OpenWindow> = st
            .open
            .iter()
            .map(|o| {
                let w = o.shared.lock();
                OpenWindow {
                    start: w.start,
                    end: w.end,
                }
            })
            .collect();
        let decision = decide(
            &views,
            asked,
            f.at_ns,
            st.last_fired[f.trigger],
            spec.cooldown,
            self.max_window,
        );
        match decision {
            Decision::Suppress => {
                st.pending_suppressed[f.trigger] += 1;
                self.stats.suppressed.fetch_add(1, Ordering::Relaxed);
                RecorderStats::count(&self.stats.suppressed_by_trigger, f.trigger);
                Ok(Fired::Suppressed)
            }
            Decision::Merge {
                window,
                new_end,
                record: keep,
            } => {
                let open = &st.open[window];
                let incident = open.incident.clone();
                let mut w = open.shared.lock();
                if !w.closed {
                    w.end = new_end;
                    if keep && w.triggers.len() < MAX_TRIGGERS_PER_WINDOW {
                        w.asked_start = w.asked_start.min(asked[0]);
                        w.triggers.push(record);
                        drop(w);
                        st.last_fired[f.trigger] = Some(f.at_ns);
                        self.stats.merged.fetch_add(1, Ordering::Relaxed);
                        RecorderStats::count(&self.stats.fired_by_trigger, f.trigger);
                    } else {
                        w.suppressed += 1;
                        self.stats.suppressed.fetch_add(1, Ordering::Relaxed);
                        RecorderStats::count(&self.stats.suppressed_by_trigger, f.trigger);
                    }
                    return Ok(Fired::Merged(incident));
                }
                drop(w);
                // It closed between our look and now: open a fresh window.
                self.open_window(&mut st, f.trigger, asked, record)
            }
            Decision::Open => self.open_window(&mut st, f.trigger, asked, record),
        }
    }

    fn open_window(
        &self,
        st: &mut State,
        trigger: usize,
        asked: [i64; 2],
        record: TriggerRecord,
    ) -> std::io::Result<Fired> {
        let incident = self.incident_name(st, &record);
        let shared = Arc::new(WindowShared::new(WindowState {
            start: asked[0],
            end: asked[1],
            closed: false,
            triggers: vec![record.clone()],
            // Matches of this trigger suppressed since its previous capture closed.
            suppressed: std::mem::take(&mut st.pending_suppressed[trigger]),
            asked_start: asked[0],
        }));
        let plan = WindowPlan {
            incident: incident.clone(),
            dir: self.dir.clone(),
            host: self.host.clone(),
            interfaces: Arc::clone(&self.interfaces),
            options: self.window_options.clone(),
        };
        let handle = window::open(&self.ring, plan, Arc::clone(&shared), self.done.clone())?;
        st.handles.push(handle);
        st.open.push(Open {
            incident: incident.clone(),
            shared,
        });
        st.last_fired[trigger] = Some(record.at_ns);
        self.stats.opened.fetch_add(1, Ordering::Relaxed);
        RecorderStats::count(&self.stats.fired_by_trigger, trigger);
        tracing::info!(incident = %incident, trigger = %record.name, "capture opened");
        Ok(Fired::Opened(incident))
    }

    /// `<time>-<host>-<trigger>`, unique in the directory and this run.
    fn incident_name(&self, st: &mut State, record: &TriggerRecord) -> String {
        let time: String = record
            .at
            .chars()
            .take(19)
            .filter(|c| *c != '-' && *c != ':')
            .collect();
        let base = format!("{time}Z-{}-{}", safe(&self.host), safe(&record.name));
        let mut name = base.clone();
        let mut n = 2;
        while st.incidents.contains(&name) || self.dir.join(format!("{name}.pcapng")).exists() {
            name = format!("{base}-{n}");
            n += 1;
        }
        st.incidents.insert(name.clone());
        name
    }

    /// Wait for every window thread to finish (call after the ring's watermark
    /// reached the end, or the windows close by themselves).
    pub fn join(&self) {
        let handles = std::mem::take(&mut self.lock().handles);
        for h in handles {
            let _ = h.join();
        }
    }
}

/// Keep file names to `[A-Za-z0-9._-]`.
fn safe(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() {
        "unnamed".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn first_firing_opens() {
        assert_eq!(
            decide(&[], [70 * S, 130 * S], 100 * S, None, secs(60), secs(600)),
            Decision::Open
        );
    }

    #[test]
    fn overlapping_firing_of_another_trigger_extends_the_window() {
        let open = [OpenWindow {
            start: 70 * S,
            end: 130 * S,
        }];
        assert_eq!(
            decide(&open, [90 * S, 150 * S], 120 * S, None, secs(60), secs(600)),
            Decision::Merge {
                window: 0,
                new_end: 150 * S,
                record: true
            }
        );
    }

    #[test]
    fn extension_is_bounded_by_max_window() {
        let open = [OpenWindow {
            start: 0,
            end: 100 * S,
        }];
        assert_eq!(
            decide(&open, [50 * S, 500 * S], 90 * S, None, secs(60), secs(200)),
            Decision::Merge {
                window: 0,
                new_end: 200 * S,
                record: true
            }
        );
    }

    #[test]
    fn cooling_trigger_is_counted_in_the_open_window_or_suppressed() {
        let open = [OpenWindow {
            start: 70 * S,
            end: 130 * S,
        }];
        assert_eq!(
            decide(
                &open,
                [80 * S, 140 * S],
                110 * S,
                Some(100 * S),
                secs(60),
                secs(600)
            ),
            Decision::Merge {
                window: 0,
                new_end: 130 * S,
                record: false
            }
        );
        assert_eq!(
            decide(
                &[],
                [100 * S, 160 * S],
                130 * S,
                Some(100 * S),
                secs(60),
                secs(600)
            ),
            Decision::Suppress
        );
        // After the cooldown it opens again.
        assert_eq!(
            decide(
                &[],
                [140 * S, 200 * S],
                170 * S,
                Some(100 * S),
                secs(60),
                secs(600)
            ),
            Decision::Open
        );
    }

    #[test]
    fn names_are_file_safe() {
        assert_eq!(safe("nccl/watch dog"), "nccl_watch_dog");
        assert_eq!(safe(""), "unnamed");
    }
}
