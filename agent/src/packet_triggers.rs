//! Packet triggers: the analysis of [`crate::analyze::track`] run incrementally on the live
//! ring, firing captures with no log line.
//!
//! One thread ([`spawn`]) subscribes to the ring the way a window does and reads every
//! sealed block as it comes, off the capture thread; each block reference is dropped as
//! soon as its records are read. A [`Detector`] (pure: packets and clock in, firings out,
//! unit-testable without a ring) keeps the per-QP state and fires, through
//! [`Recorder::fire`], with the same window / merge / cooldown rules as log triggers and its
//! finding as the firing's line (it ends up in the capture's comment and sidecar):
//!
//! | kind | fires when | parameters (defaults) |
//! | --- | --- | --- |
//! | `qp_stall` | a QP with outstanding requests (pending AckReq, or a message half sent) is silent longer than `silent`; the window is back-dated to the last sign of life | `silent` (1s) |
//! | `retransmit` | ≥ `count` retransmissions (PSN regressions = go-back-N episodes, and re-sent requests) within `within` | `count` (3), `within` (1s) |
//! | `nak_rate` | ≥ `count` NAKs (any syndrome, RNR included) within `within` | `count` (10), `within` (1s) |
//! | `cnp_rate` | ≥ `count` CNPs within `within` | `count` (1000), `within` (1s) |
//! | `pfc_storm` | ≥ `count` PFC/PAUSE XOFF frames within `within` | `count` (100), `within` (1s) |
//! | `deviation` | a baseline metric (per second, per interface and traffic class) stays above `factor` × its band (the larger of the baseline's median and p99) for `for`; only once the baseline is `min_age` old. Watched by the baseline's thread (`crate::baseline`), not here | `metric` (required, e.g. `cnp_per_s`), `factor` (2), `for` (10s), `min_age` (1h) |
//!
//! Configured as `[[packet_trigger]]` tables beside `[[trigger]]`:
//!
//! ```toml
//! [[packet_trigger]]
//! name = "qp-stall"
//! kind = "qp_stall"
//! silent = "2s"
//! pre = "10s"      # defaults: those of log triggers
//! post = "5s"
//! cooldown = "1m"
//! ```
//!
//! Bounds: at most [`MAX_TRACKED_QPS`] connections are tracked (a new one evicts the one
//! idle longest; QPs idle for [`IDLE_EVICT`] are dropped anyway); the rate triggers keep
//! `count` timestamps each. Time is the capture clock: a stall is noticed on the packet that
//! ends it (fired at the instant it crossed `silent`) or, while it lasts, when the ring's
//! watermark passes `silent` after the QP's last sign of life.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::analyze::track::{ConnKey, PsnStep, Tracker};
use crate::capture::InterfaceInfo;
use crate::recorder::{Firing, Recorder, TriggerId, TriggerSpec};
use crate::ring::{Ring, RingEvent, WATERMARK_END};
use crate::tasks::Tasks;
use crate::wire::{self, Frame};

/// Connections tracked at most.
pub const MAX_TRACKED_QPS: usize = 4096;
/// A QP with no packet and no answer for this long is forgotten.
pub const IDLE_EVICT: Duration = Duration::from_secs(60);
/// The stall scan runs at most once per this much capture time.
const SCAN_EVERY_NS: i64 = 10_000_000;

/// What a packet trigger watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacketTriggerKind {
    /// A QP with outstanding requests silent longer than `silent`.
    QpStall,
    /// ≥ `count` retransmissions within `within`.
    Retransmit,
    /// ≥ `count` NAKs within `within`.
    NakRate,
    /// ≥ `count` CNPs within `within`.
    CnpRate,
    /// ≥ `count` PFC/PAUSE XOFF frames within `within`.
    PfcStorm,
    /// A baseline metric above its band for a while (see `crate::baseline`).
    Deviation,
}

impl PacketTriggerKind {
    /// The name used in config and as the trigger's class.
    pub fn name(self) -> &'static str {
        match self {
            PacketTriggerKind::QpStall => "qp_stall",
            PacketTriggerKind::Retransmit => "retransmit",
            PacketTriggerKind::NakRate => "nak_rate",
            PacketTriggerKind::CnpRate => "cnp_rate",
            PacketTriggerKind::PfcStorm => "pfc_storm",
            PacketTriggerKind::Deviation => "deviation",
        }
    }

    fn default_count(self) -> u32 {
        match self {
            PacketTriggerKind::QpStall => 1,
            PacketTriggerKind::Retransmit => 3,
            PacketTriggerKind::NakRate => 10,
            PacketTriggerKind::CnpRate => 1000,
            PacketTriggerKind::PfcStorm => 100,
            PacketTriggerKind::Deviation => 1,
        }
    }
}

/// One `[[packet_trigger]]` table. `N` is the name's type: `String`, or, while a
/// config file is read, `toml::Spanned<String>` so that an error about the name can
/// point at it (then [`PacketTriggerDef::map_name`] makes it a `String`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketTriggerDef<N = String> {
    /// Trigger name (in file names and sidecars).
    pub name: N,
    /// What it watches.
    pub kind: PacketTriggerKind,
    /// `qp_stall`: silence that counts as a stall (default 1 s).
    #[serde(default, deserialize_with = "opt_duration")]
    pub silent: Option<Duration>,
    /// Rate kinds: events needed (defaults per kind, see the module doc).
    #[serde(default)]
    pub count: Option<u32>,
    /// Rate kinds: within this long (default 1 s).
    #[serde(default, deserialize_with = "opt_duration")]
    pub within: Option<Duration>,
    /// `deviation`: the baseline metric watched (`cnp_per_s`, `pfc_frames_per_s`, …).
    #[serde(default)]
    pub metric: Option<String>,
    /// `deviation`: how far above its band the metric must be (default 2).
    #[serde(default)]
    pub factor: Option<f64>,
    /// `deviation`: how long it must stay there (default 10 s).
    #[serde(default, rename = "for", deserialize_with = "opt_duration")]
    pub sustain: Option<Duration>,
    /// `deviation`: how old the baseline must be before the trigger can fire (default 1 h).
    #[serde(default, deserialize_with = "opt_duration")]
    pub min_age: Option<Duration>,
    /// Time kept before (default as log triggers).
    #[serde(default, deserialize_with = "opt_duration")]
    pub pre: Option<Duration>,
    /// Time kept after.
    #[serde(default, deserialize_with = "opt_duration")]
    pub post: Option<Duration>,
    /// Minimum time between two captures of this trigger.
    #[serde(default, deserialize_with = "opt_duration")]
    pub cooldown: Option<Duration>,
}

fn opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(d)?;
    crate::units::parse_duration(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

impl<N> PacketTriggerDef<N> {
    /// The same definition, its name passed through `f`.
    pub fn map_name<M>(self, f: impl FnOnce(N) -> M) -> PacketTriggerDef<M> {
        PacketTriggerDef {
            name: f(self.name),
            kind: self.kind,
            silent: self.silent,
            count: self.count,
            within: self.within,
            metric: self.metric,
            factor: self.factor,
            sustain: self.sustain,
            min_age: self.min_age,
            pre: self.pre,
            post: self.post,
            cooldown: self.cooldown,
        }
    }
}

impl PacketTriggerDef {
    /// A definition with every default.
    pub fn new(name: &str, kind: PacketTriggerKind) -> PacketTriggerDef {
        PacketTriggerDef {
            name: name.to_owned(),
            kind,
            silent: None,
            count: None,
            within: None,
            metric: None,
            factor: None,
            sustain: None,
            min_age: None,
            pre: None,
            post: None,
            cooldown: None,
        }
    }

    /// `silent` with its default.
    pub fn silent(&self) -> Duration {
        self.silent.unwrap_or(Duration::from_secs(1))
    }
    /// `count` with its default (at least 1).
    pub fn count(&self) -> u32 {
        self.count.unwrap_or(self.kind.default_count()).max(1)
    }
    /// `within` with its default.
    pub fn within(&self) -> Duration {
        self.within.unwrap_or(Duration::from_secs(1))
    }

    /// `factor` with its default.
    pub fn factor(&self) -> f64 {
        self.factor.unwrap_or(2.0)
    }
    /// `for` with its default.
    pub fn sustain(&self) -> Duration {
        self.sustain.unwrap_or(Duration::from_secs(10))
    }
    /// `min_age` with its default.
    pub fn min_age(&self) -> Duration {
        self.min_age.unwrap_or(Duration::from_secs(3600))
    }

    /// What the recorder needs: class is the kind's name.
    pub fn spec(&self) -> TriggerSpec {
        TriggerSpec {
            name: self.name.clone(),
            class: self.kind.name().to_owned(),
            pre: self.pre.unwrap_or(tripcap_triggers::DEFAULT_PRE),
            post: self.post.unwrap_or(tripcap_triggers::DEFAULT_POST),
            cooldown: self.cooldown.unwrap_or(tripcap_triggers::DEFAULT_COOLDOWN),
        }
    }
}

/// The `[[packet_trigger]]` tables of a config file's text (other keys are ignored).
pub fn from_config_text(text: &str) -> Result<Vec<PacketTriggerDef>, String> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        packet_trigger: Vec<PacketTriggerDef>,
    }
    toml::from_str::<File>(text)
        .map(|f| f.packet_trigger)
        .map_err(|e| format!("[[packet_trigger]]: {e}"))
}

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

fn qp_groups(key: &ConnKey) -> Vec<(String, String)> {
    vec![
        ("qp".to_owned(), format!("0x{:06x}", key.2)),
        ("src".to_owned(), key.0.to_string()),
        ("dst".to_owned(), key.1.to_string()),
    ]
}

/// A rate trigger's recent events.
#[derive(Debug)]
struct Rate {
    trigger: TriggerId,
    def: PacketTriggerDef,
    times: VecDeque<i64>,
}

impl Rate {
    /// Counts an event; a firing when the threshold is crossed.
    fn event(&mut self, ts: i64, what: &str, groups: Vec<(String, String)>) -> Option<Firing> {
        let count = self.def.count() as usize;
        if self.times.len() == count {
            self.times.pop_front();
        }
        self.times.push_back(ts);
        let first = *self.times.front()?;
        if self.times.len() < count || ts - first > nanos(self.def.within()) {
            return None;
        }
        self.times.clear();
        let line = format!(
            "{}: {count} {what} within {:.3} s (threshold {count} in {})",
            self.def.kind.name(),
            (ts - first) as f64 / 1e9,
            humantime::format_duration(self.def.within()),
        );
        Some(Firing {
            trigger: self.trigger,
            at_ns: ts,
            onset_ns: Some(first),
            line: Some(line.into_bytes()),
            groups,
            ..Firing::default()
        })
    }
}

/// The incremental analysis and the thresholds: packets and clock in, firings out.
#[derive(Debug)]
pub struct Detector {
    tracker: Tracker,
    stalls: Vec<(TriggerId, PacketTriggerDef)>,
    retransmit: Vec<Rate>,
    nak: Vec<Rate>,
    cnp: Vec<Rate>,
    pfc: Vec<Rate>,
    /// (trigger, connection id) → start of the silence already fired for.
    fired: HashMap<(TriggerId, u32), i64>,
    last_scan: i64,
    last_evict: i64,
    /// Packets analysed.
    pub packets: u64,
}

impl Detector {
    /// A detector for `defs` (recorder trigger index, definition).
    pub fn new(defs: Vec<(TriggerId, PacketTriggerDef)>) -> Detector {
        let mut d = Detector {
            tracker: Tracker::with_limit(MAX_TRACKED_QPS),
            stalls: Vec::new(),
            retransmit: Vec::new(),
            nak: Vec::new(),
            cnp: Vec::new(),
            pfc: Vec::new(),
            fired: HashMap::new(),
            last_scan: i64::MIN,
            last_evict: i64::MIN,
            packets: 0,
        };
        for (trigger, def) in defs {
            let rate = |def: PacketTriggerDef| Rate {
                trigger,
                times: VecDeque::with_capacity(def.count() as usize),
                def,
            };
            match def.kind {
                PacketTriggerKind::QpStall => d.stalls.push((trigger, def)),
                PacketTriggerKind::Retransmit => d.retransmit.push(rate(def)),
                PacketTriggerKind::NakRate => d.nak.push(rate(def)),
                PacketTriggerKind::CnpRate => d.cnp.push(rate(def)),
                PacketTriggerKind::PfcStorm => d.pfc.push(rate(def)),
                // Watched on the baseline's summaries (`crate::baseline`).
                PacketTriggerKind::Deviation => {}
            }
        }
        d
    }

    /// Connections tracked now.
    pub fn tracked(&self) -> usize {
        self.tracker.len()
    }

    /// Analyses one captured frame; firings go to `out`.
    pub fn packet(&mut self, ts: i64, linktype: u32, data: &[u8], out: &mut Vec<Firing>) {
        self.packets += 1;
        let r = match wire::parse_frame(linktype, data) {
            Frame::Roce(r) => r,
            Frame::MacControl(m) => {
                let mask = m.paused_mask();
                if mask != 0 {
                    for rate in &mut self.pfc {
                        let prios: Vec<String> = (0..8)
                            .filter(|p| mask & (1 << p) != 0)
                            .map(|p: u8| p.to_string())
                            .collect();
                        out.extend(rate.event(
                            ts,
                            "PFC/PAUSE XOFF frames",
                            vec![("priorities".to_owned(), prios.join(","))],
                        ));
                    }
                }
                return;
            }
            _ => return,
        };
        let step = self.tracker.packet(ts, &r);
        let key: ConnKey = (r.src, r.dst, r.transport.bth().dest_qp());
        if step.pause_outstanding {
            for (trigger, def) in &self.stalls {
                let silent = nanos(def.silent());
                if step.pause_ns > silent {
                    let start = ts - step.pause_ns;
                    if self.fired.get(&(*trigger, step.conn)) != Some(&start) {
                        self.fired.insert((*trigger, step.conn), start);
                        out.push(stall_firing(*trigger, &key, start, start + silent, false));
                    }
                }
            }
        }
        if matches!(step.psn, PsnStep::Regression { .. } | PsnStep::Duplicate) {
            for rate in &mut self.retransmit {
                out.extend(rate.event(ts, "retransmissions", qp_groups(&key)));
            }
        }
        if step.nak.is_some() {
            for rate in &mut self.nak {
                out.extend(rate.event(ts, "NAKs", qp_groups(&key)));
            }
        }
        if step.cnp {
            for rate in &mut self.cnp {
                out.extend(rate.event(ts, "CNPs", qp_groups(&key)));
            }
        }
    }

    /// Every packet up to capture time `now` has been seen: fires stalls still going on,
    /// and forgets idle QPs.
    pub fn advance(&mut self, now: i64, out: &mut Vec<Firing>) {
        if now == WATERMARK_END || now == i64::MIN {
            return;
        }
        if !self.stalls.is_empty() && now.saturating_sub(self.last_scan) >= SCAN_EVERY_NS {
            self.last_scan = now;
            for (key, c) in self.tracker.iter() {
                if !c.outstanding() || c.last_answer_ts > c.last_ts {
                    continue;
                }
                let start = c.last_activity();
                for (trigger, def) in &self.stalls {
                    let silent = nanos(def.silent());
                    if now - start > silent && self.fired.get(&(*trigger, c.id)) != Some(&start) {
                        self.fired.insert((*trigger, c.id), start);
                        out.push(stall_firing(*trigger, key, start, start + silent, true));
                    }
                }
            }
        }
        if now.saturating_sub(self.last_evict) >= nanos(IDLE_EVICT) / 4 {
            self.last_evict = now;
            self.tracker
                .evict_idle(now.saturating_sub(nanos(IDLE_EVICT)));
            if self.fired.len() > 2 * MAX_TRACKED_QPS {
                self.fired.clear();
            }
        }
    }
}

fn stall_firing(trigger: TriggerId, key: &ConnKey, start: i64, at: i64, ongoing: bool) -> Firing {
    let line = format!(
        "qp_stall: {} > {} QP 0x{:06x} silent {} with requests outstanding since {}",
        key.0,
        key.1,
        key.2,
        if ongoing {
            "and still"
        } else {
            "for longer than the threshold,"
        },
        crate::clock::rfc3339(start),
    );
    Firing {
        trigger,
        at_ns: at,
        onset_ns: Some(start),
        line: Some(line.into_bytes()),
        groups: qp_groups(key),
        ..Firing::default()
    }
}

/// Starts the packet-trigger thread on `ring`, tracked by `tasks`. `defs` pairs each
/// definition with its id in the recorder (registered from [`PacketTriggerDef::spec`]).
/// The thread ends when the ring's watermark reaches the end (replay done, or every
/// capture thread stopped), after it has looked at every block sealed before.
///
/// The detector's clock is the ring's low watermark: the time up to which *every*
/// interface has delivered its packets. A block from a fast interface says nothing
/// about a slow one's queue pairs, whose packets may still be in an unsealed block,
/// so judging silences by the newest packet seen anywhere would call them stalled.
pub fn spawn(
    ring: &Arc<Ring>,
    interfaces: Arc<Vec<InterfaceInfo>>,
    recorder: Arc<Recorder>,
    defs: Vec<(TriggerId, PacketTriggerDef)>,
    tasks: &Tasks,
) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    // Only blocks sealed from now on.
    ring.subscribe(i64::MAX, tx);
    tasks.thread("packet-triggers", move || {
        run(rx, &interfaces, &recorder, Detector::new(defs))
    })
}

/// The packet triggers' "now": the time up to which every interface has
/// delivered its packets. For each interface that is the newest packet of its
/// sealed blocks (blocks arrive in order per interface); the ring's low
/// watermark is a floor under all of them (an idle interface raises it).
#[derive(Debug)]
pub struct DetectorClock {
    delivered: Vec<i64>,
    low_watermark: i64,
    now: i64,
}

impl DetectorClock {
    /// A clock for `interfaces` ring interfaces.
    pub fn new(interfaces: usize) -> DetectorClock {
        DetectorClock {
            delivered: vec![i64::MIN; interfaces.max(1)],
            low_watermark: i64::MIN,
            now: i64::MIN,
        }
    }

    /// Interface `iface` delivered packets up to `ts`; the new "now" if it moved.
    pub fn delivered(&mut self, iface: usize, ts: i64) -> Option<i64> {
        if let Some(d) = self.delivered.get_mut(iface) {
            *d = (*d).max(ts);
        }
        self.tick()
    }

    /// The ring's low watermark rose to `w`; the new "now" if it moved.
    pub fn watermark(&mut self, w: i64) -> Option<i64> {
        self.low_watermark = self.low_watermark.max(w);
        self.tick()
    }

    fn tick(&mut self) -> Option<i64> {
        let slowest = self.delivered.iter().copied().min().unwrap_or(i64::MIN);
        let now = slowest.max(self.low_watermark);
        (now > self.now).then(|| {
            self.now = now;
            now
        })
    }
}

fn run(
    rx: mpsc::Receiver<RingEvent>,
    interfaces: &[InterfaceInfo],
    recorder: &Recorder,
    mut detector: Detector,
) {
    let mut out = Vec::new();
    let mut clock = DetectorClock::new(interfaces.len());
    while let Ok(event) = rx.recv() {
        let now = match event {
            RingEvent::Block(block) => {
                let iface = usize::from(block.iface());
                let linktype = interfaces
                    .get(iface)
                    .map_or(wire::linktype::ETHERNET, |i| u32::from(i.desc.linktype));
                let mut newest = i64::MIN;
                for rec in block.records() {
                    detector.packet(rec.ts, linktype, rec.data, &mut out);
                    newest = newest.max(rec.ts);
                }
                clock.delivered(iface, newest)
            }
            // Subscribed from now on: every block comes raw.
            RingEvent::Packed(_) => None,
            RingEvent::Watermark(WATERMARK_END) => break,
            RingEvent::Watermark(w) => clock.watermark(w),
        };
        if let Some(now) = now {
            detector.advance(now, &mut out);
        }
        fire_all(recorder, &mut out);
    }
}

/// Hands `out`'s firings to the recorder (emptying it), logging each outcome.
pub fn fire_all(recorder: &Recorder, out: &mut Vec<Firing>) {
    for f in out.drain(..) {
        let name = recorder
            .spec(f.trigger)
            .map(|s| s.name.clone())
            .unwrap_or_default();
        match recorder.fire(f) {
            Ok(outcome) => {
                tracing::info!(trigger = %name, outcome = ?outcome, "packet trigger fired")
            }
            Err(e) => {
                tracing::error!(trigger = %name, error = %e, "packet trigger fired but no capture could be opened")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_parse_from_toml_with_defaults() {
        let defs = from_config_text(
            r#"
            [capture]
            interfaces = ["eth0"]
            [[packet_trigger]]
            name = "stall"
            kind = "qp_stall"
            silent = "2s"
            pre = "10s"
            [[packet_trigger]]
            name = "gbn"
            kind = "retransmit"
            count = 5
            within = "500ms"
            "#,
        )
        .expect("parses");
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].silent(), Duration::from_secs(2));
        assert_eq!(defs[0].spec().pre, Duration::from_secs(10));
        assert_eq!(defs[0].spec().class, "qp_stall");
        assert_eq!(defs[1].count(), 5);
        assert_eq!(defs[1].within(), Duration::from_millis(500));
        let err = from_config_text(
            "[[packet_trigger]]\nname = \"x\"\nkind = \"qp_stall\"\nsilent = \"2\"\n",
        )
        .expect_err("no unit");
        assert!(err.contains("no unit"), "{err}");
        let err = from_config_text("[[packet_trigger]]\nname = \"x\"\nkind = \"bogus\"\n")
            .expect_err("unknown kind");
        assert!(err.contains("qp_stall"), "{err}");
    }

    #[test]
    fn the_clock_is_the_slowest_interface_raised_by_the_watermark() {
        let mut c = DetectorClock::new(2);
        assert_eq!(
            c.delivered(0, 100),
            None,
            "interface 1 has delivered nothing yet"
        );
        assert_eq!(c.delivered(0, 900), None);
        assert_eq!(
            c.delivered(1, 200),
            Some(200),
            "the slower interface sets the clock"
        );
        assert_eq!(c.delivered(1, 150), None, "never backwards");
        assert_eq!(c.watermark(500), Some(500), "the watermark is a floor");
        assert_eq!(c.delivered(1, 1000), Some(900));
    }

    #[test]
    fn rate_fires_once_the_count_is_reached_within_the_window() {
        let mut def = PacketTriggerDef::new("r", PacketTriggerKind::Retransmit);
        def.count = Some(3);
        def.within = Some(Duration::from_millis(100));
        let mut table = crate::recorder::TriggerTable::default();
        table.add(def.spec());
        let id = table.add(def.spec());
        let mut r = Rate {
            trigger: id,
            times: VecDeque::new(),
            def,
        };
        let ms = 1_000_000;
        assert!(r.event(0, "x", vec![]).is_none());
        assert!(r.event(50 * ms, "x", vec![]).is_none());
        assert!(
            r.event(200 * ms, "x", vec![]).is_none(),
            "first one too old"
        );
        assert!(r.event(210 * ms, "x", vec![]).is_none());
        let f = r.event(220 * ms, "x", vec![]).expect("fires");
        assert_eq!(f.trigger, id);
        assert_eq!(f.onset_ns, Some(200 * ms));
        assert!(r.event(230 * ms, "x", vec![]).is_none(), "starts over");
    }
}
