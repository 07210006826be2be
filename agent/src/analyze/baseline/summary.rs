//! What one interval of traffic looked like, per interface and traffic class:
//! the [`Summary`] the baseline keeps, and the [`Summarizer`] that makes them
//! from packets. Pure: packets and their times in, summaries out; no clock, no
//! I/O, no allocation per packet once a class has been seen.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analyze::track::{NakKind, PsnStep, Tracker};
use crate::analyze::whole::roce_payload_len;
use crate::capture_file::reader::Packet;
use crate::wire::{self, Frame};

/// Upper bounds of the frame-size histogram's buckets (the last is open).
pub const SIZE_BUCKETS: [u32; 8] = [64, 128, 256, 512, 1024, 2048, 4096, u32::MAX];

/// The class of frames that carry no DSCP (PFC, ARP, native IB).
pub const NO_CLASS: u8 = 255;

/// Connections tracked per interface while summarising.
const TRACKED: usize = 4096;

/// The names [`Summary::metrics`] may give, in its order.
pub const METRICS: &[&str] = &[
    "packets_per_s",
    "bits_per_s",
    "qps",
    "cnp_per_s",
    "ecn_ce_per_s",
    "nak_seq_per_s",
    "nak_rnr_per_s",
    "nak_other_per_s",
    "go_back_n_per_s",
    "duplicates_per_s",
    "pfc_frames_per_s",
    "arp_per_s",
    "small_frame_share",
    "ack_p50_us",
    "ack_p99_us",
];

/// One interval on one interface in one traffic class (DSCP).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Interval start, ns since the epoch (capture clock).
    pub start_ns: i64,
    /// Interval end.
    pub end_ns: i64,
    /// Interface name.
    pub interface: String,
    /// DSCP of the RoCE traffic, or [`NO_CLASS`].
    pub class: u8,
    /// Frames.
    pub packets: u64,
    /// Bytes on the wire (original length).
    pub bytes: u64,
    /// Frames by original length, bucketed by [`SIZE_BUCKETS`].
    pub sizes: [u64; 8],
    /// Largest RoCE payload seen (bytes after the transport headers).
    pub max_payload: u32,
    /// Distinct connections (source, destination, QP) seen.
    pub qps: u32,
    /// CNPs.
    pub cnp: u64,
    /// Packets marked ECN CE.
    pub ecn_ce: u64,
    /// NAKs: PSN sequence error, receiver not ready, other.
    pub nak_seq: u64,
    /// RNR NAKs.
    pub nak_rnr: u64,
    /// Other NAKs.
    pub nak_other: u64,
    /// Go-back-N episodes (PSN regressions).
    pub go_back_n: u64,
    /// Requests seen twice in a row (single-packet retries).
    pub duplicates: u64,
    /// PFC/PAUSE frames per priority (802.3x PAUSE counts for all eight).
    pub pfc_frames: [u64; 8],
    /// Pause quanta asked per priority.
    pub pfc_quanta: [u64; 8],
    /// ARP frames.
    pub arp: u64,
    /// AckReq → answer latencies, µs: median and p99 (none answered: `None`).
    pub ack_us: Option<[f64; 2]>,
}

impl Summary {
    /// Seconds the summary covers (at least one ns).
    pub fn seconds(&self) -> f64 {
        (self.end_ns - self.start_ns).max(1) as f64 / 1e9
    }

    /// The IB MTU the largest payload implies (256 … 4096), if RoCE was seen.
    pub fn implied_mtu(&self) -> Option<u32> {
        (self.max_payload > 0).then(|| {
            [256, 512, 1024, 2048, 4096]
                .into_iter()
                .find(|m| self.max_payload <= *m)
                .unwrap_or(4096)
        })
    }

    /// The metrics a baseline compares, by name: rates per second, shares,
    /// latencies. Only what the summary can say (no latency without answers).
    pub fn metrics(&self) -> Vec<(&'static str, f64)> {
        let s = self.seconds();
        let rate = |n: u64| n as f64 / s;
        let mut m = vec![
            ("packets_per_s", rate(self.packets)),
            ("bits_per_s", rate(self.bytes) * 8.0),
            ("qps", f64::from(self.qps)),
            ("cnp_per_s", rate(self.cnp)),
            ("ecn_ce_per_s", rate(self.ecn_ce)),
            ("nak_seq_per_s", rate(self.nak_seq)),
            ("nak_rnr_per_s", rate(self.nak_rnr)),
            ("nak_other_per_s", rate(self.nak_other)),
            ("go_back_n_per_s", rate(self.go_back_n)),
            ("duplicates_per_s", rate(self.duplicates)),
            ("pfc_frames_per_s", rate(self.pfc_frames.iter().sum())),
            ("arp_per_s", rate(self.arp)),
        ];
        if self.packets > 0 {
            let small: u64 = self.sizes[..3].iter().sum();
            m.push(("small_frame_share", small as f64 / self.packets as f64));
        }
        if let Some([p50, p99]) = self.ack_us {
            m.push(("ack_p50_us", p50));
            m.push(("ack_p99_us", p99));
        }
        m
    }

    /// How many events a rate metric of [`Summary::metrics`] counts: frames for
    /// `packets_per_s` and `bits_per_s`, the events themselves for the others
    /// (`None` for metrics that are not rates).
    pub fn events(&self, metric: &str) -> Option<u64> {
        Some(match metric {
            "packets_per_s" | "bits_per_s" => self.packets,
            "cnp_per_s" => self.cnp,
            "ecn_ce_per_s" => self.ecn_ce,
            "nak_seq_per_s" => self.nak_seq,
            "nak_rnr_per_s" => self.nak_rnr,
            "nak_other_per_s" => self.nak_other,
            "go_back_n_per_s" => self.go_back_n,
            "duplicates_per_s" => self.duplicates,
            "pfc_frames_per_s" => self.pfc_frames.iter().sum(),
            "arp_per_s" => self.arp,
            _ => return None,
        })
    }
}

/// The running interval of one interface.
struct Open {
    start_ns: i64,
    classes: BTreeMap<u8, Summary>,
    tracker: Tracker,
    /// When each connection (by tracker index) last sent an AckReq not yet answered.
    asked: BTreeMap<u32, i64>,
    /// Answer latencies this interval, µs (bounded).
    latencies: Vec<f64>,
}

/// Most latencies kept per interval (a sample beyond that).
const MAX_LATENCIES: usize = 65_536;

/// The interface name of packets whose file records none (classic pcap).
pub const UNNAMED_INTERFACE: &str = "capture";

/// Cuts packets into intervals of `interval_ns` per interface and summarises them.
pub struct Summarizer {
    interval_ns: i64,
    /// One interval holding everything ([`Summarizer::whole`]).
    whole: bool,
    open: BTreeMap<String, Open>,
    /// Names of interfaces without an `if_name`, by interface id (made once each).
    unnamed: Vec<String>,
}

impl Summarizer {
    /// Intervals of `interval_ns` (at least 1 ms), aligned to multiples of it.
    pub fn new(interval_ns: i64) -> Summarizer {
        Summarizer {
            interval_ns: interval_ns.max(1_000_000),
            whole: false,
            open: BTreeMap::new(),
            unnamed: Vec::new(),
        }
    }

    /// One interval per interface for everything it is given, whatever the
    /// times: a whole capture, closed by [`Summarizer::finish_whole`] with the
    /// span the rates are over. [`Summarizer::tick`] closes nothing.
    pub fn whole() -> Summarizer {
        Summarizer {
            whole: true,
            ..Summarizer::new(i64::MAX)
        }
    }

    /// Closes a [`Summarizer::whole`]: every interface and class as one summary
    /// from `start_ns` to `end_ns` (its rates are over that span).
    pub fn finish_whole(&mut self, start_ns: i64, end_ns: i64) -> Vec<Summary> {
        let open = std::mem::take(&mut self.open);
        let mut out = Vec::new();
        for (k, mut o) in open {
            o.start_ns = start_ns;
            out.extend(self.close(&k, o, end_ns).map(|mut s| {
                s.start_ns = start_ns;
                s
            }));
        }
        out
    }

    /// A packet read from a capture file: its interface is the file's
    /// `if_name`, else [`UNNAMED_INTERFACE`] (interface 0) or `capture<id>`;
    /// `ts` is its time (the caller may prefer a hardware stamp in the frame).
    pub fn capture_packet(&mut self, p: &Packet<'_>, ts: i64) -> Vec<Summary> {
        if let Some(name) = p.interface_name {
            return self.packet(name, p.link_type, ts, p.data, p.orig_len);
        }
        let id = p.interface_id as usize;
        while self.unnamed.len() <= id.min(4096) {
            let n = self.unnamed.len();
            self.unnamed.push(if n == 0 {
                UNNAMED_INTERFACE.to_string()
            } else {
                format!("{UNNAMED_INTERFACE}{n}")
            });
        }
        // Taken out for the call (no allocation), put back after it.
        let names = std::mem::take(&mut self.unnamed);
        let name = names.get(id).or(names.last()).map_or("", String::as_str);
        let out = self.packet(name, p.link_type, ts, p.data, p.orig_len);
        self.unnamed = names;
        out
    }

    /// One captured frame at `ts` on `interface` (`orig_len` on the wire).
    /// Returns the summaries of intervals this packet closed on that interface.
    pub fn packet(
        &mut self,
        interface: &str,
        linktype: u32,
        ts: i64,
        data: &[u8],
        orig_len: u32,
    ) -> Vec<Summary> {
        let start = if self.whole {
            0
        } else {
            ts - ts.rem_euclid(self.interval_ns)
        };
        let mut closed = Vec::new();
        // A packet of the running interval looks its interface up twice (here and
        // for the update below); the map changes only when an interval closes or an
        // interface is first seen.
        let current = self.open.get(interface).map(|o| o.start_ns == start);
        if current != Some(true) {
            if let Some(o) = self.open.remove(interface) {
                closed = self.finish(interface, o);
            }
            self.open.insert(
                interface.to_string(),
                Open {
                    start_ns: start,
                    classes: BTreeMap::new(),
                    tracker: Tracker::with_limit(TRACKED),
                    asked: BTreeMap::new(),
                    latencies: Vec::new(),
                },
            );
        }
        let Some(o) = self.open.get_mut(interface) else {
            return closed;
        };
        let frame = wire::parse_frame(linktype, data);
        let class = match &frame {
            Frame::Roce(r) => r.dscp.unwrap_or(NO_CLASS),
            _ => NO_CLASS,
        };
        let s = o.classes.entry(class).or_insert_with(|| Summary {
            start_ns: start,
            interface: interface.to_string(),
            class,
            ..Summary::default()
        });
        s.packets += 1;
        s.bytes += u64::from(orig_len);
        let bucket = SIZE_BUCKETS
            .iter()
            .position(|b| orig_len <= *b)
            .unwrap_or(7);
        s.sizes[bucket] += 1;
        match &frame {
            Frame::Roce(r) => {
                let payload = roce_payload_len(data, orig_len, r);
                s.max_payload = s.max_payload.max(payload);
                let step = o.tracker.packet(ts, r);
                if step.new_conn {
                    s.qps += 1;
                }
                s.cnp += u64::from(step.cnp);
                s.ecn_ce += u64::from(step.ce);
                match step.nak {
                    Some(NakKind::Seq) => s.nak_seq += 1,
                    Some(NakKind::Rnr) => s.nak_rnr += 1,
                    Some(NakKind::Other) => s.nak_other += 1,
                    None => {}
                }
                match step.psn {
                    PsnStep::Regression { .. } => s.go_back_n += 1,
                    PsnStep::Duplicate => s.duplicates += 1,
                    _ => {}
                }
                if step.ackreq {
                    o.asked.entry(step.conn).or_insert(ts);
                }
                if let Some(c) = step.answered_conn {
                    if let Some(at) = o.asked.remove(&c) {
                        if o.latencies.len() < MAX_LATENCIES {
                            o.latencies.push((ts - at) as f64 / 1e3);
                        }
                    }
                }
            }
            Frame::MacControl(p) => {
                let mask = p.paused_mask();
                for prio in (0..8u8).filter(|c| mask & (1 << c) != 0) {
                    let q = match p.opcode() {
                        wire::pfc::Opcode::Pfc => p.quanta(prio),
                        _ => p.pause_time(),
                    };
                    s.pfc_frames[usize::from(prio)] += 1;
                    s.pfc_quanta[usize::from(prio)] += u64::from(q);
                }
            }
            Frame::Arp => s.arp += 1,
            _ => {}
        }
        closed
    }

    /// Close every interval that ends at or before `now_ns` (the capture
    /// clock's watermark), for interfaces that went quiet.
    pub fn tick(&mut self, now_ns: i64) -> Vec<Summary> {
        if self.whole {
            return Vec::new();
        }
        let due: Vec<String> = self
            .open
            .iter()
            .filter(|(_, o)| o.start_ns.saturating_add(self.interval_ns) <= now_ns)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for k in due {
            if let Some(o) = self.open.remove(&k) {
                out.extend(self.finish(&k, o));
            }
        }
        out
    }

    fn finish(&self, interface: &str, o: Open) -> Vec<Summary> {
        let end = o.start_ns.saturating_add(self.interval_ns);
        self.close(interface, o, end).collect()
    }

    fn close(&self, _interface: &str, mut o: Open, end_ns: i64) -> impl Iterator<Item = Summary> {
        let ack = percentiles(&mut o.latencies);
        o.classes.into_values().map(move |mut s| {
            s.end_ns = end_ns;
            if s.class != NO_CLASS {
                s.ack_us = ack;
            }
            s
        })
    }
}

/// Median and p99 of `v` (sorted in place); `None` when empty.
fn percentiles(v: &mut [f64]) -> Option<[f64; 2]> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some([at(0.5), at(0.99)])
}
