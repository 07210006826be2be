//! The recorder: turns trigger firings into windows.
//!
//! A firing at time T asks for [T - pre, T + post] (or [onset - pre, T + post]
//! when the line said when the failure began). [`decide`] is the whole policy,
//! a pure function: merge into an open window that overlaps (extending its end,
//! bounded by `max_window`), open a new one, or suppress (cooldown). The
//! recorder applies the decision: it owns the list of open windows and the
//! per-trigger cooldown clocks, and nothing else.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::capture::InterfaceInfo;
use crate::ring::Ring;
use crate::sidecar::TriggerRecord;
use crate::tasks::Tasks;
use crate::window::{self, CaptureOutcome, Merged, WindowPlan, WindowShared};

/// Triggers recorded per window at most; further matches are only counted.
pub const MAX_TRIGGERS_PER_WINDOW: usize = 64;
/// Incident names remembered to keep new ones unique; beyond it the oldest
/// are forgotten (a name holds its trigger's second, so only a firing that
/// many incidents in the past could collide, and then the writer's
/// no-replace rename still refuses to overwrite).
pub const MAX_REMEMBERED_INCIDENTS: usize = 4096;

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

/// A trigger of the recorder, as handed out by [`TriggerTable::add`]: the
/// only way to name one, so no caller counts positions in a list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TriggerId(usize);

impl TriggerId {
    /// Its position in [`Recorder::specs`] (for per-trigger counters).
    pub fn index(self) -> usize {
        self.0
    }
}

/// The triggers a recorder knows, registered one by one before it starts.
#[derive(Debug, Clone, Default)]
pub struct TriggerTable {
    specs: Vec<TriggerSpec>,
}

impl TriggerTable {
    /// Register a trigger; its id names it in [`Firing`]s.
    pub fn add(&mut self, spec: TriggerSpec) -> TriggerId {
        self.specs.push(spec);
        TriggerId(self.specs.len() - 1)
    }

    /// The trigger `id` names.
    pub fn get(&self, id: TriggerId) -> Option<&TriggerSpec> {
        self.specs.get(id.0)
    }

    /// Every trigger, in registration order.
    pub fn specs(&self) -> &[TriggerSpec] {
        &self.specs
    }

    /// The trigger named `name`.
    pub fn find(&self, name: &str) -> Option<TriggerId> {
        self.specs
            .iter()
            .position(|s| s.name == name)
            .map(TriggerId)
    }
}

/// One firing of a trigger.
#[derive(Debug, Clone, Default)]
pub struct Firing {
    /// The trigger.
    pub trigger: TriggerId,
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

/// A capture this agent opened on its own trigger, for the fleet to announce.
#[derive(Debug, Clone)]
pub struct Opened {
    /// Its local incident name (file stem).
    pub incident: String,
    /// The first trigger.
    pub record: TriggerRecord,
    /// The trigger's `pre` and `post`.
    pub pre: Duration,
    /// See `pre`.
    pub post: Duration,
    /// The recorder's `max_window`.
    pub max_window: Duration,
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

impl Open {
    /// The fleet incident it is tied to, or its local name.
    fn fleet_or_local(&self) -> String {
        self.shared
            .fleet_incident()
            .unwrap_or_else(|| self.incident.clone())
    }
}

struct State {
    open: Vec<Open>,
    last_fired: Vec<Option<i64>>,
    /// Incident names taken (this run's, and the output directory's at
    /// start), oldest first by name (names start with the time); at most
    /// [`MAX_REMEMBERED_INCIDENTS`].
    incidents: BTreeSet<String>,
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
    /// Per trigger ([`TriggerId::index`]): firings that opened or
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

    fn count(list: &[AtomicU64], trigger: TriggerId) {
        if let Some(c) = list.get(trigger.0) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Everything a [`Recorder`] is built from.
pub struct RecorderParts {
    /// The ring windows read.
    pub ring: Arc<Ring>,
    /// The ring's interfaces.
    pub interfaces: Arc<Vec<InterfaceInfo>>,
    /// Output directory.
    pub dir: PathBuf,
    /// Host name for file names and metadata.
    pub host: String,
    /// The triggers.
    pub triggers: TriggerTable,
    /// A window is never extended past `start + max_window`.
    pub max_window: Duration,
    /// What windows write besides the capture (reports, RDMA counters).
    pub window_options: window::WindowOptions,
    /// Receives each capture's outcome.
    pub done: tokio::sync::mpsc::UnboundedSender<CaptureOutcome>,
    /// Where window threads are started and tracked.
    pub tasks: Tasks,
    /// Told of every capture a local trigger opens (`[fleet]` announces them).
    pub announce: Option<tokio::sync::mpsc::UnboundedSender<Opened>>,
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
    tasks: Tasks,
    announce: Option<tokio::sync::mpsc::UnboundedSender<Opened>>,
}

impl Recorder {
    /// A recorder writing captures of `parts.ring` into `parts.dir`. Reads the
    /// directory once, so new incident names never take an old one.
    pub fn new(parts: RecorderParts) -> Recorder {
        let specs = parts.triggers.specs;
        let n = specs.len();
        let incidents = existing_incidents(&parts.dir);
        Recorder {
            window_options: parts.window_options,
            ring: parts.ring,
            interfaces: parts.interfaces,
            dir: parts.dir,
            host: parts.host,
            specs,
            max_window: parts.max_window,
            done: parts.done,
            tasks: parts.tasks,
            announce: parts.announce,
            state: Mutex::new(State {
                open: Vec::new(),
                last_fired: vec![None; n],
                incidents,
                pending_suppressed: vec![0; n],
            }),
            stats: RecorderStats::for_triggers(n),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The triggers, in [`TriggerId::index`] order.
    pub fn specs(&self) -> &[TriggerSpec] {
        &self.specs
    }

    /// The trigger `id` names.
    pub fn spec(&self, id: TriggerId) -> Option<&TriggerSpec> {
        self.specs.get(id.0)
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
            .filter(|o| !o.shared.is_closed())
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
        let Some(spec) = self.specs.get(f.trigger.0).cloned() else {
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
        st.open.retain(|o| !o.shared.is_closed());
        let views: Vec<OpenWindow> = st
            .open
            .iter()
            .map(|o| {
                // A window closing meanwhile overlaps nothing; merging into it fails below.
                let (start, end) = o.shared.bounds().unwrap_or((i64::MAX, i64::MIN));
                OpenWindow { start, end }
            })
            .collect();
        let decision = decide(
            &views,
            asked,
            f.at_ns,
            st.last_fired[f.trigger.0],
            spec.cooldown,
            self.max_window,
        );
        match decision {
            Decision::Suppress => {
                st.pending_suppressed[f.trigger.0] += 1;
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
                let incident = open.fleet_or_local();
                let recorded = keep.then(|| (record.clone(), asked[0]));
                match open
                    .shared
                    .merge(new_end, recorded, MAX_TRIGGERS_PER_WINDOW)
                {
                    Merged::Recorded => {
                        st.last_fired[f.trigger.0] = Some(f.at_ns);
                        self.stats.merged.fetch_add(1, Ordering::Relaxed);
                        RecorderStats::count(&self.stats.fired_by_trigger, f.trigger);
                        return Ok(Fired::Merged(incident));
                    }
                    Merged::Counted => {
                        self.stats.suppressed.fetch_add(1, Ordering::Relaxed);
                        RecorderStats::count(&self.stats.suppressed_by_trigger, f.trigger);
                        return Ok(Fired::Merged(incident));
                    }
                    Merged::Closed => {}
                }
                // It closed between our look and now: open a fresh window.
                self.open_local(&mut st, &spec, f.trigger, asked, record)
            }
            Decision::Open => self.open_local(&mut st, &spec, f.trigger, asked, record),
        }
    }

    /// Open a window for a local firing, and tell the fleet.
    fn open_local(
        &self,
        st: &mut State,
        spec: &TriggerSpec,
        trigger: TriggerId,
        asked: [i64; 2],
        record: TriggerRecord,
    ) -> std::io::Result<Fired> {
        let fired = self.open_window(st, trigger, asked, record.clone())?;
        if let (Fired::Opened(incident), Some(tx)) = (&fired, &self.announce) {
            let _ = tx.send(Opened {
                incident: incident.clone(),
                record,
                pre: spec.pre,
                post: spec.post,
                max_window: self.max_window,
            });
        }
        Ok(fired)
    }

    /// Tie the open window named `local` to fleet incident `id` (its file takes
    /// the incident's name at close). Its [start, end] when it is open and was
    /// not tied to another incident before.
    pub fn tie(&self, local: &str, id: &str) -> Option<[i64; 2]> {
        let mut st = self.lock();
        let i = st.open.iter().position(|o| o.incident == local)?;
        if st.open[i].shared.fleet_incident().as_deref() == Some(id) {
            return st.open[i].shared.bounds().map(|(a, b)| [a, b]);
        }
        let stem = if id == local {
            local.to_string()
        } else {
            unique_name(&mut st, id)
        };
        let open = &st.open[i];
        if !open.shared.tie(id, &stem) {
            return None;
        }
        open.shared.bounds().map(|(a, b)| [a, b])
    }

    /// Capture `asked` for fleet incident `id`, announced by another agent:
    /// extend the window already tied to it, or tie an open window that overlaps
    /// (merging the two), or open a new one named after the incident. `record`
    /// is the announcing trigger, recorded under `trigger` (the fleet's). The
    /// window's [start, end] after it, or `None` when it closed meanwhile.
    pub fn join(
        &self,
        trigger: TriggerId,
        id: &str,
        asked: [i64; 2],
        record: TriggerRecord,
    ) -> std::io::Result<Option<[i64; 2]>> {
        let mut st = self.lock();
        st.open.retain(|o| !o.shared.is_closed());
        let tied = st
            .open
            .iter()
            .position(|o| o.shared.fleet_incident().as_deref() == Some(id));
        let overlapping = || {
            st.open.iter().position(|o| {
                o.shared.fleet_incident().is_none()
                    && o.shared
                        .bounds()
                        .is_some_and(|(s, e)| asked[0] <= e && asked[1] >= s)
            })
        };
        let found = tied.or_else(overlapping);
        if let Some(i) = found {
            let shared = Arc::clone(&st.open[i].shared);
            if shared.fleet_incident().is_none() {
                let stem = unique_name(&mut st, id);
                shared.tie(id, &stem);
            }
            let Some((start, end)) = shared.bounds() else {
                return Ok(None);
            };
            let cap = start.saturating_add(nanos(self.max_window));
            let new_end = end.max(asked[1].min(cap));
            let merged = shared.merge(new_end, Some((record, asked[0])), MAX_TRIGGERS_PER_WINDOW);
            if merged == Merged::Closed {
                return Ok(None);
            }
            self.stats.merged.fetch_add(1, Ordering::Relaxed);
            RecorderStats::count(&self.stats.fired_by_trigger, trigger);
            return Ok(Some([start, new_end]));
        }
        let stem = unique_name(&mut st, id);
        let shared = Arc::new(WindowShared::new(asked[0], asked[1], record, 0));
        shared.tie(id, &stem);
        self.start_window(&mut st, stem, shared, trigger)?;
        tracing::info!(incident = %id, "capture opened for a fleet incident");
        Ok(Some(asked))
    }

    /// Start the writer of window `shared`, named `incident` (its file stem), and
    /// keep it among the open windows; counted as opened by `trigger`.
    fn start_window(
        &self,
        st: &mut State,
        incident: String,
        shared: Arc<WindowShared>,
        trigger: TriggerId,
    ) -> std::io::Result<()> {
        let plan = WindowPlan {
            incident: incident.clone(),
            dir: self.dir.clone(),
            host: self.host.clone(),
            interfaces: Arc::clone(&self.interfaces),
            options: self.window_options.clone(),
        };
        window::open(
            &self.ring,
            plan,
            Arc::clone(&shared),
            self.done.clone(),
            &self.tasks,
        )?;
        st.open.push(Open { incident, shared });
        self.stats.opened.fetch_add(1, Ordering::Relaxed);
        RecorderStats::count(&self.stats.fired_by_trigger, trigger);
        Ok(())
    }

    fn open_window(
        &self,
        st: &mut State,
        trigger: TriggerId,
        asked: [i64; 2],
        record: TriggerRecord,
    ) -> std::io::Result<Fired> {
        let incident = self.incident_name(st, &record);
        // Matches of this trigger suppressed since its previous capture closed
        // go into this one's metadata.
        let suppressed = std::mem::take(&mut st.pending_suppressed[trigger.0]);
        let shared = Arc::new(WindowShared::new(
            asked[0],
            asked[1],
            record.clone(),
            suppressed,
        ));
        self.start_window(st, incident.clone(), shared, trigger)?;
        st.last_fired[trigger.0] = Some(record.at_ns);
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
        unique_name(st, &base)
    }
}

/// `base` (file-safe), or `base-2`, `base-3`… : the first name not taken in the
/// directory or this run; taken from now on.
fn unique_name(st: &mut State, base: &str) -> String {
    let base = safe_stem(base);
    let mut name = base.clone();
    let mut n = 2;
    while st.incidents.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    st.incidents.insert(name.clone());
    while st.incidents.len() > MAX_REMEMBERED_INCIDENTS {
        st.incidents.pop_first();
    }
    name
}

/// A file stem from an incident id that came over the network: [`safe`] within
/// 200 bytes, never starting with a dot.
fn safe_stem(s: &str) -> String {
    let out = safe_within(s, 200);
    match out.trim_start_matches('.') {
        "" => "unnamed".into(),
        t => t.to_string(),
    }
}

/// The incident names (file stems of captures and sidecars, finished or
/// not) already in `dir`, newest last.
fn existing_incidents(dir: &std::path::Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return names;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let name = name.trim_start_matches('.');
        if let Some(stem) = name
            .split(".pcapng")
            .next()
            .filter(|_| name.contains(".pcapng"))
        {
            names.insert(stem.to_string());
        }
    }
    while names.len() > MAX_REMEMBERED_INCIDENTS {
        names.pop_first();
    }
    names
}

/// Keep file names to `[A-Za-z0-9._-]`, at most 64 of them.
fn safe(s: &str) -> String {
    safe_within(s, 64)
}

/// `s` with every character outside `[A-Za-z0-9._-]` made `_`, cut at `max`;
/// `unnamed` when empty.
fn safe_within(s: &str, max: usize) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(max)
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
