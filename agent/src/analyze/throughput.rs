//! "Why slow": the throughput section of the report and its verdict.
//!
//! The analysis loop feeds each connection's [`Volume`] (payload bytes of data packets,
//! which of them were re-sent, payload sizes against the IB MTUs, CNP times) and
//! [`Fragments`] (IPv4 fragments of RoCE datagrams); everything else here is computed once
//! at the end by [`compute`] from those, the whole-capture pause frames
//! ([`super::whole::Pauses`]) and the link speed (`--link-speed`, else the sidecar's
//! `/sys/class/net/IF/speed`, else an assumed [`ASSUMED_LINK_GBPS`]):
//!
//! - per direction (source → destination address, all its queue pairs): goodput, the
//!   payload of first transmissions over the direction's active time (first to last data
//!   packet), against the link speed; the mean payload, the implied MTU (the largest
//!   First/Middle payload, exact, else the largest payload rounded up to an IB MTU, a lower
//!   bound) and the share of data packets that fill it; re-sent bytes; CNPs sent back;
//! - per PFC priority (and 802.3x): the time paused, each XOFF lasting quanta × 512 bit
//!   times at the link speed from its arrival, a later frame of the same priority
//!   replacing the running timer (an XON ends it), so overlapping frames are not counted
//!   twice; capped at the capture's end;
//! - CNP-driven rate cuts per queue pair: each CNP asks the sender to cut its rate;
//! - an MTU mismatch: the two directions of an address pair segmenting messages at
//!   different MTUs;
//! - a verdict: every limiter over its threshold scored by how far over it is, the worst
//!   named with its evidence, the others listed.
//!
//! Re-sent packets: a duplicate PSN, or a request from a go-back-N regression up to the
//! PSN that was expected when it began ([`super::track::PsnStep`]).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::track::PsnStep;
use super::whole::{PauseFrame, Pauses, RocePriorities, IB_MTUS};
use crate::wire::bth::psn_distance;
use crate::wire::{Ipv4Fragment, ROCE_V2_PORT};

/// Link speed used when neither `--link-speed` nor the sidecar gives one.
pub const ASSUMED_LINK_GBPS: f64 = 100.0;
/// Re-sent bytes over goodput from which retransmissions are a limiter.
pub const RETRANSMIT_SHARE: f64 = 0.01;
/// Share of the capture a priority is paused from which PFC is a limiter.
pub const PAUSED_SHARE: f64 = 0.05;
/// CNPs per data packet of the throttled direction from which congestion is a limiter
/// (with at least [`MIN_CNPS`]).
pub const CNP_PER_PACKET: f64 = 0.001;
/// Fewer CNPs than this are never a limiter.
pub const MIN_CNPS: u64 = 10;
/// Mean payload below this share of the MTU makes small packets a limiter. The MTU: the
/// capture host's interface's, else the largest one multi-packet messages use, else 4096.
pub const SMALL_SHARE: f64 = 0.25;
/// Data packets needed before packet sizes say anything.
pub const MIN_DATA_PACKETS: u64 = 100;
/// Wire throughput over this share of the link speed: the link is saturated.
pub const SATURATED_SHARE: f64 = 0.9;
/// RoCE v2 headers around the payload of a RETH-carrying packet (IPv4 20, UDP 8, BTH 12,
/// RETH 16, ICRC 4): the Ethernet MTU must hold an IB MTU plus these.
pub const ROCE_OVERHEAD: u32 = 60;
/// Queue pairs listed in `cnp_cuts`.
pub const MAX_CNP_QPS: usize = 16;

/// What one connection (one direction of a queue pair) carried, fed per packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Volume {
    /// Packets with payload.
    pub data_packets: u64,
    /// Their payload bytes.
    pub payload_bytes: u64,
    /// Re-sent request packets (with or without payload).
    pub retransmitted_packets: u64,
    /// Their payload bytes.
    pub retransmitted_bytes: u64,
    /// Largest payload.
    pub max_payload: u32,
    /// Largest payload of a First/Middle packet (the sender's path MTU).
    pub max_segment_payload: u32,
    /// Data packets whose payload is exactly each of [`IB_MTUS`].
    pub at_mtu: [u64; IB_MTUS.len()],
    /// First and last data packet (ns; 0 before any).
    pub first_data_ns: i64,
    /// See `first_data_ns`.
    pub last_data_ns: i64,
    /// First and last CNP on this connection (ns; 0 before any).
    pub first_cnp_ns: i64,
    /// See `first_cnp_ns`.
    pub last_cnp_ns: i64,
    /// During go-back-N: requests before this PSN are re-sent.
    resend_until: Option<u32>,
}

impl Volume {
    /// Notes a packet at `ts` with `payload` bytes of data (`segment`: First/Middle);
    /// `request_psn` is the PSN of a request and `step` what the tracker made of it.
    #[inline]
    pub fn add(
        &mut self,
        ts: i64,
        request_psn: Option<u32>,
        step: PsnStep,
        payload: u32,
        segment: bool,
    ) {
        let resent = match (request_psn, step) {
            (Some(_), PsnStep::Duplicate) => true,
            (Some(_), PsnStep::Regression { from, .. }) => {
                self.resend_until = Some(from);
                true
            }
            (Some(psn), _) => match self.resend_until {
                Some(until) if psn_distance(psn, until) < 0 => true,
                Some(_) => {
                    self.resend_until = None;
                    false
                }
                None => false,
            },
            (None, _) => false,
        };
        if resent {
            self.retransmitted_packets += 1;
            self.retransmitted_bytes += u64::from(payload);
        }
        if payload == 0 {
            return;
        }
        if self.data_packets == 0 {
            self.first_data_ns = ts;
        }
        self.data_packets += 1;
        self.payload_bytes += u64::from(payload);
        self.first_data_ns = self.first_data_ns.min(ts);
        self.last_data_ns = self.last_data_ns.max(ts);
        self.max_payload = self.max_payload.max(payload);
        if segment {
            self.max_segment_payload = self.max_segment_payload.max(payload);
        }
        if let Some(i) = IB_MTUS.iter().position(|&m| m == payload) {
            self.at_mtu[i] += 1;
        }
    }

    /// Notes a CNP at `ts`.
    #[inline]
    pub fn cnp(&mut self, ts: i64) {
        if self.first_cnp_ns == 0 {
            self.first_cnp_ns = ts;
        }
        self.last_cnp_ns = self.last_cnp_ns.max(ts);
    }
}

/// Recent RoCE datagrams seen fragmented, to recognise their later fragments.
const RECENT_DATAGRAMS: usize = 16;

/// IPv4 fragments carrying RoCE v2: first fragments to UDP port 4791, and later fragments
/// of the same datagram (source, destination, IP id).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Fragments {
    /// Fragments.
    pub packets: u64,
    /// The first one, ns since the epoch.
    pub first_ns: Option<i64>,
    /// Its `source > destination`.
    pub first: Option<String>,
    #[serde(skip)]
    recent: [(u32, u32, u16); RECENT_DATAGRAMS],
    #[serde(skip)]
    next: usize,
}

impl Fragments {
    /// Notes an IPv4 fragment at `ts`; counts it if it carries RoCE.
    pub fn add(&mut self, ts: i64, f: &Ipv4Fragment) {
        let key = (u32::from(f.src), u32::from(f.dst), f.id);
        let roce = if f.offset == 0 {
            let roce = f.udp_dst_port == Some(ROCE_V2_PORT);
            if roce {
                self.recent[self.next % RECENT_DATAGRAMS] = key;
                self.next = self.next.wrapping_add(1);
            }
            roce
        } else {
            f.protocol == 17 && self.recent[..self.next.min(RECENT_DATAGRAMS)].contains(&key)
        };
        if roce {
            self.packets += 1;
            if self.first_ns.is_none() {
                self.first_ns = Some(ts);
                self.first = Some(format!("{} > {}", f.src, f.dst));
            }
        }
    }
}

/// One connection as [`compute`] needs it.
#[derive(Debug, Clone, Copy)]
pub struct ConnInput<'a> {
    /// Source address.
    pub src: &'a str,
    /// Destination address.
    pub dst: &'a str,
    /// Destination QP (`0x%06x`).
    pub dest_qp: &'a str,
    /// Bytes on the wire.
    pub wire_bytes: u64,
    /// CNPs on it.
    pub cnps: u64,
    /// Go-back-N episodes and duplicates.
    pub resends: u64,
    /// Stalls (silences with requests outstanding).
    pub stalls: u64,
    /// What it carried.
    pub volume: &'a Volume,
}

/// The link speed used and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Link {
    /// Gbit/s.
    pub gbps: f64,
    /// `flag` (`--link-speed`), `sidecar` (the capture's interface) or `assumed`.
    pub source: &'static str,
}

/// One direction: source → destination address, all its queue pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Direction {
    /// Source address.
    pub src: String,
    /// Destination address.
    pub dst: String,
    /// Connections (queue pairs) carrying data.
    pub queue_pairs: u64,
    /// Packets with payload.
    pub data_packets: u64,
    /// Payload bytes of all data packets.
    pub payload_bytes: u64,
    /// Payload bytes of first transmissions (`payload_bytes` − `retransmitted_bytes`).
    pub goodput_bytes: u64,
    /// Payload bytes re-sent.
    pub retransmitted_bytes: u64,
    /// `retransmitted_bytes` / `goodput_bytes` (null without goodput).
    pub retransmitted_share: Option<f64>,
    /// First to last data packet, seconds.
    pub active_s: f64,
    /// Goodput over the active time, Gbit/s (null: one data packet).
    pub goodput_gbps: Option<f64>,
    /// Wire bytes of the direction over the active time, Gbit/s.
    pub wire_gbps: Option<f64>,
    /// `goodput_gbps` / the link speed.
    pub link_share: Option<f64>,
    /// Mean payload of a data packet, bytes.
    pub mean_payload: f64,
    /// The path MTU its packets imply (256…4096).
    pub implied_mtu: Option<u32>,
    /// `segments` (First/Middle payloads: exact) or `largest_payload` (a lower bound).
    pub mtu_basis: Option<&'static str>,
    /// Share of data packets whose payload is exactly `implied_mtu`.
    pub mtu_sized_share: Option<f64>,
    /// CNPs the destination sent back against this direction's queue pairs.
    pub cnps: u64,
    /// Those per second of the active time.
    pub cnps_per_s: Option<f64>,
}

/// A priority RoCE traffic travelled on, and how that is known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RocePriority {
    /// Priority 0–7.
    pub priority: u8,
    /// RoCE packets on it.
    pub packets: u64,
    /// `vlan_pcp` (the 802.1Q tag says it) or `dscp` (untagged: the DSCP, which the
    /// default "trust DSCP" mapping puts on priority DSCP / 8).
    pub basis: &'static str,
    /// The DSCP, for `basis = dscp`.
    pub dscp: Option<u8>,
}

impl RocePriority {
    fn words(&self) -> String {
        match self.dscp {
            Some(d) => format!("DSCP {d} → priority {}", self.priority),
            None => format!("VLAN PCP {}", self.priority),
        }
    }
}

/// The priorities of `p`, most packets first.
fn roce_priorities(p: &RocePriorities) -> Vec<RocePriority> {
    let mut out: Vec<RocePriority> = p
        .pcp
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(pcp, n)| RocePriority {
            priority: pcp as u8,
            packets: *n,
            basis: "vlan_pcp",
            dscp: None,
        })
        .chain(
            p.dscp
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(d, n)| RocePriority {
                    priority: (d >> 3) as u8,
                    packets: *n,
                    basis: "dscp",
                    dscp: Some(d as u8),
                }),
        )
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.packets));
    out
}

/// Time one priority was paused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PausedPriority {
    /// PFC priority 0–7; null for 802.3x PAUSE (all traffic).
    pub priority: Option<u8>,
    /// Whether RoCE packets travel on this priority (see `roce_priorities`); null
    /// for 802.3x PAUSE (it pauses everything) or when the capture has no RoCE.
    pub carries_roce: Option<bool>,
    /// XOFF frames.
    pub xoff: u64,
    /// Sum of their quanta.
    pub quanta: u64,
    /// Time paused, ns (overlapping frames counted once).
    pub paused_ns: i64,
    /// Of the capture's span.
    pub paused_share: f64,
}

/// The CNPs one queue pair received: each asks its sender to cut its rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CnpCuts {
    /// The CNPs' connection, `src > dst 0xQP` (dst and QP are the throttled sender's).
    pub conn: String,
    /// CNPs.
    pub cnps: u64,
    /// First and last, ns since the epoch.
    pub first_ns: i64,
    /// See `first_ns`.
    pub last_ns: i64,
    /// CNPs per second between them (null: one CNP).
    pub per_s: Option<f64>,
}

/// Two directions of an address pair segmenting at different MTUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MtuMismatch {
    /// One end.
    pub a: String,
    /// The other.
    pub b: String,
    /// MTU of a → b (from First/Middle payloads).
    pub a_to_b: u32,
    /// MTU of b → a.
    pub b_to_a: u32,
}

/// The likely limiter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// `small_packets`, `pfc_pauses`, `retransmissions`, `congestion`, `link_saturated` or
    /// `none`.
    pub limiter: &'static str,
    /// Why, one sentence.
    pub evidence: String,
    /// Other limiters over their thresholds, weaker, one sentence each.
    pub also: Vec<String>,
}

impl Default for Verdict {
    fn default() -> Verdict {
        Verdict {
            limiter: "none",
            evidence: "no RoCE data packets".to_owned(),
            also: Vec::new(),
        }
    }
}

/// The throughput section.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// The link speed used (null before the report is complete).
    pub link: Option<Link>,
    /// The capture host's interface MTU (Ethernet bytes), when the sidecar recorded it.
    pub configured_mtu: Option<u32>,
    /// The largest IB MTU that interface MTU holds.
    pub configured_ib_mtu: Option<u32>,
    /// Per direction with data, most goodput first.
    pub directions: Vec<Direction>,
    /// Payload bytes of first transmissions, all directions.
    pub goodput_bytes: u64,
    /// Payload bytes re-sent, all directions.
    pub retransmitted_bytes: u64,
    /// `retransmitted_bytes` / `goodput_bytes`.
    pub retransmitted_share: Option<f64>,
    /// The priorities the RoCE traffic travelled on, most packets first.
    pub roce_priorities: Vec<RocePriority>,
    /// Per priority with XOFF frames (and 802.3x).
    pub pauses: Vec<PausedPriority>,
    /// Pause requests beyond the ones remembered (their time is not counted).
    pub pause_frames_not_timed: u64,
    /// Queue pairs that received CNPs, most first (at most 16).
    pub cnp_cuts: Vec<CnpCuts>,
    /// Address pairs whose two directions use different MTUs.
    pub mtu_mismatches: Vec<MtuMismatch>,
    /// IPv4 fragments carrying RoCE.
    pub fragments: Fragments,
    /// The likely limiter.
    pub verdict: Verdict,
}

/// The largest IB MTU an Ethernet MTU of `mtu` bytes holds.
pub fn ib_mtu_for(mtu: u32) -> Option<u32> {
    IB_MTUS
        .iter()
        .rev()
        .copied()
        .find(|&m| m + ROCE_OVERHEAD <= mtu)
}

fn share(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole)
}

/// Computes the section.
pub fn compute<'a>(
    conns: impl IntoIterator<Item = ConnInput<'a>>,
    (pauses, priorities): (&Pauses, &RocePriorities),
    (first_ns, last_ns): (i64, i64),
    link: Link,
    configured_mtu: Option<u32>,
    fragments: &Fragments,
) -> Throughput {
    let conns: Vec<ConnInput<'a>> = conns.into_iter().collect();
    let mut t = Throughput {
        link: Some(link),
        configured_mtu,
        configured_ib_mtu: configured_mtu.and_then(ib_mtu_for),
        fragments: fragments.clone(),
        ..Throughput::default()
    };
    t.directions = directions(&conns, link);
    t.goodput_bytes = t.directions.iter().map(|d| d.goodput_bytes).sum();
    t.retransmitted_bytes = t.directions.iter().map(|d| d.retransmitted_bytes).sum();
    t.retransmitted_share = share(t.retransmitted_bytes as f64, t.goodput_bytes as f64);
    t.roce_priorities = roce_priorities(priorities);
    t.pauses = paused(pauses, first_ns, last_ns, link);
    if !t.roce_priorities.is_empty() {
        for p in &mut t.pauses {
            p.carries_roce = p
                .priority
                .map(|x| t.roce_priorities.iter().any(|r| r.priority == x));
        }
    }
    t.pause_frames_not_timed = pauses.frames_dropped;
    t.cnp_cuts = cnp_cuts(&conns);
    t.mtu_mismatches = mtu_mismatches(&t.directions);
    let resends = conns.iter().map(|c| c.resends).sum();
    t.verdict = verdict(&t, resends, (last_ns - first_ns).max(0));
    for p in t
        .pauses
        .iter()
        .filter(|p| p.carries_roce == Some(false) && p.paused_share >= PAUSED_SHARE)
    {
        t.verdict.also.push(format!(
            "PFC priority {} paused {} of the capture, but no RoCE packet travelled on it (RoCE: {}): it held other traffic",
            p.priority.unwrap_or_default(),
            pct(p.paused_share),
            t.roce_priorities
                .iter()
                .map(RocePriority::words)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let stalls: u64 = conns.iter().map(|c| c.stalls).sum();
    if stalls > 0 {
        t.verdict.also.push(format!(
            "{stalls} stalls with requests outstanding (see the findings): time the queue pairs sent nothing"
        ));
    }
    t
}

/// Per (src, dst) with data, most goodput first.
fn directions(conns: &[ConnInput<'_>], link: Link) -> Vec<Direction> {
    #[derive(Default)]
    struct Acc {
        v: Volume,
        qps: u64,
        wire: u64,
        first: i64,
        last: i64,
    }
    let mut by: BTreeMap<(&str, &str), Acc> = BTreeMap::new();
    for c in conns.iter().filter(|c| c.volume.data_packets > 0) {
        let a = by.entry((c.src, c.dst)).or_default();
        let v = c.volume;
        if a.qps == 0 {
            (a.first, a.last) = (v.first_data_ns, v.last_data_ns);
        }
        a.qps += 1;
        a.wire += c.wire_bytes;
        a.first = a.first.min(v.first_data_ns);
        a.last = a.last.max(v.last_data_ns);
        a.v.data_packets += v.data_packets;
        a.v.payload_bytes += v.payload_bytes;
        a.v.retransmitted_bytes += v.retransmitted_bytes;
        a.v.max_payload = a.v.max_payload.max(v.max_payload);
        a.v.max_segment_payload = a.v.max_segment_payload.max(v.max_segment_payload);
        for (x, y) in a.v.at_mtu.iter_mut().zip(v.at_mtu) {
            *x += y;
        }
    }
    // CNPs travel dst → src against the src → dst direction's queue pairs.
    let mut cnps: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for c in conns.iter().filter(|c| c.cnps > 0) {
        *cnps.entry((c.dst, c.src)).or_default() += c.cnps;
    }
    let mut out: Vec<Direction> = by
        .into_iter()
        .map(|((src, dst), a)| {
            let active_ns = a.last - a.first;
            let per_s = |x: f64| (active_ns > 0).then(|| x * 1e9 / active_ns as f64);
            let goodput = a.v.payload_bytes.saturating_sub(a.v.retransmitted_bytes);
            let goodput_gbps = per_s(goodput as f64 * 8.0).map(|b| b / 1e9);
            let (implied_mtu, mtu_basis) = if a.v.max_segment_payload > 0 {
                (round_up_mtu(a.v.max_segment_payload), Some("segments"))
            } else {
                (round_up_mtu(a.v.max_payload), Some("largest_payload"))
            };
            let mtu_sized = implied_mtu
                .and_then(|m| IB_MTUS.iter().position(|&x| x == m))
                .map(|i| a.v.at_mtu[i]);
            let n = cnps.get(&(src, dst)).copied().unwrap_or(0);
            Direction {
                src: src.to_owned(),
                dst: dst.to_owned(),
                queue_pairs: a.qps,
                data_packets: a.v.data_packets,
                payload_bytes: a.v.payload_bytes,
                goodput_bytes: goodput,
                retransmitted_bytes: a.v.retransmitted_bytes,
                retransmitted_share: share(a.v.retransmitted_bytes as f64, goodput as f64),
                active_s: active_ns as f64 / 1e9,
                goodput_gbps,
                wire_gbps: per_s(a.wire as f64 * 8.0).map(|b| b / 1e9),
                link_share: goodput_gbps.and_then(|g| share(g, link.gbps)),
                mean_payload: a.v.payload_bytes as f64 / a.v.data_packets as f64,
                implied_mtu,
                mtu_basis: implied_mtu.and(mtu_basis),
                mtu_sized_share: mtu_sized.and_then(|m| share(m as f64, a.v.data_packets as f64)),
                cnps: n,
                cnps_per_s: per_s(n as f64),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.goodput_bytes
            .cmp(&a.goodput_bytes)
            .then_with(|| (&a.src, &a.dst).cmp(&(&b.src, &b.dst)))
    });
    out
}

/// The smallest IB MTU holding `payload` bytes (`None` for 0; 4096 for more).
fn round_up_mtu(payload: u32) -> Option<u32> {
    (payload > 0).then(|| {
        IB_MTUS
            .iter()
            .copied()
            .find(|&m| m >= payload)
            .unwrap_or(IB_MTUS[IB_MTUS.len() - 1])
    })
}

/// Time paused per priority with XOFF frames, then 802.3x.
fn paused(pauses: &Pauses, first_ns: i64, last_ns: i64, link: Link) -> Vec<PausedPriority> {
    let span = (last_ns - first_ns).max(0);
    let counts = pauses
        .pfc
        .iter()
        .enumerate()
        .map(|(p, c)| (Some(p as u8), p as u8, c))
        .chain(std::iter::once((None, 8, &pauses.pause_8023x)));
    counts
        .filter(|(_, _, c)| c.xoff > 0)
        .map(|(priority, slot, c)| {
            let mut frames: Vec<PauseFrame> = pauses
                .frames
                .iter()
                .filter(|f| f.slot == slot)
                .copied()
                .collect();
            frames.sort_by_key(|f| f.ts);
            let paused_ns = paused_ns(&frames, link.gbps, last_ns);
            PausedPriority {
                priority,
                carries_roce: None,
                xoff: c.xoff,
                quanta: c.quanta,
                paused_ns,
                paused_share: share(paused_ns as f64, span as f64).unwrap_or(0.0),
            }
        })
        .collect()
}

/// Time paused by `frames` (one priority, in time order) at `gbps`: each XOFF pauses for
/// its quanta × 512 bit times from its arrival, a later frame while paused replaces the
/// timer (XON: ends it now), the last pause is cut at `end_ns`.
pub fn paused_ns(frames: &[PauseFrame], gbps: f64, end_ns: i64) -> i64 {
    let quantum_ns = if gbps > 0.0 { 512.0 / gbps } else { 0.0 };
    let mut total = 0i64;
    let mut current: Option<(i64, i64)> = None;
    for f in frames {
        let d = (f64::from(f.quanta) * quantum_ns).round() as i64;
        current = match current {
            Some((start, end)) if f.ts < end => Some((start, f.ts + d)),
            Some((start, end)) => {
                total += end - start;
                (d > 0).then_some((f.ts, f.ts + d))
            }
            None => (d > 0).then_some((f.ts, f.ts + d)),
        };
    }
    if let Some((start, end)) = current {
        total += end.min(end_ns.max(start)) - start;
    }
    total
}

/// Queue pairs that received CNPs, most first.
fn cnp_cuts(conns: &[ConnInput<'_>]) -> Vec<CnpCuts> {
    let mut out: Vec<CnpCuts> = conns
        .iter()
        .filter(|c| c.cnps > 0)
        .map(|c| {
            let (first, last) = (c.volume.first_cnp_ns, c.volume.last_cnp_ns);
            CnpCuts {
                conn: format!("{} > {} {}", c.src, c.dst, c.dest_qp),
                cnps: c.cnps,
                first_ns: first,
                last_ns: last,
                per_s: (last > first && c.cnps > 1)
                    .then(|| (c.cnps - 1) as f64 * 1e9 / (last - first) as f64),
            }
        })
        .collect();
    out.sort_by(|a, b| b.cnps.cmp(&a.cnps).then_with(|| a.conn.cmp(&b.conn)));
    out.truncate(MAX_CNP_QPS);
    out
}

/// Address pairs whose two directions both segment messages, at different MTUs.
fn mtu_mismatches(directions: &[Direction]) -> Vec<MtuMismatch> {
    fn exact(d: &Direction) -> Option<((&str, &str), u32)> {
        d.implied_mtu
            .filter(|_| d.mtu_basis == Some("segments"))
            .map(|m| ((d.src.as_str(), d.dst.as_str()), m))
    }
    let by: BTreeMap<(&str, &str), u32> = directions.iter().filter_map(exact).collect();
    by.iter()
        .filter(|((a, b), _)| a < b)
        .filter_map(|(&(a, b), &ab)| {
            let ba = *by.get(&(b, a))?;
            (ab != ba).then(|| MtuMismatch {
                a: a.to_owned(),
                b: b.to_owned(),
                a_to_b: ab,
                b_to_a: ba,
            })
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 30 => format!("{:.1} GiB", n as f64 / f64::from(1u32 << 30)),
        n if n >= 10 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20)),
        n if n >= 10 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn link_words(link: Link) -> String {
    match link.source {
        "flag" => format!("{} Gb/s (--link-speed)", link.gbps),
        "sidecar" => format!("{} Gb/s (the capture's interface)", link.gbps),
        _ => format!("{} Gb/s (assumed: pass --link-speed)", link.gbps),
    }
}

/// Every limiter over its threshold, strongest first: (score, limiter, evidence).
fn limiters(t: &Throughput, resends: u64, span_ns: i64) -> Vec<(f64, &'static str, String)> {
    let mut out = Vec::new();
    let Some(link) = t.link else {
        return out;
    };
    let data: u64 = t.directions.iter().map(|d| d.data_packets).sum();
    if let Some(s) = t.retransmitted_share.filter(|&s| s >= RETRANSMIT_SHARE) {
        out.push((
            s / RETRANSMIT_SHARE,
            "retransmissions",
            format!(
                "{} re-sent, {} of the goodput ({} go-back-N episodes and duplicates)",
                bytes(t.retransmitted_bytes),
                pct(s),
                resends
            ),
        ));
    }
    if let Some(p) = t
        .pauses
        .iter()
        .filter(|p| p.paused_share >= PAUSED_SHARE && p.carries_roce != Some(false))
        .max_by(|a, b| a.paused_share.total_cmp(&b.paused_share))
    {
        let on = t
            .roce_priorities
            .iter()
            .find(|r| Some(r.priority) == p.priority)
            .map(|r| format!(", the RoCE traffic's priority ({})", r.words()))
            .unwrap_or_default();
        let which = p.priority.map_or("802.3x PAUSE".to_owned(), |x| {
            format!("PFC priority {x}{on}")
        });
        out.push((
            p.paused_share / PAUSED_SHARE,
            "pfc_pauses",
            format!(
                "{which} paused {:.3} ms of the capture's {:.3} ms ({}): {} XOFF, {} quanta at {}",
                p.paused_ns as f64 / 1e6,
                span_ns as f64 / 1e6,
                pct(p.paused_share),
                p.xoff,
                p.quanta,
                link_words(link)
            ),
        ));
    }
    if let Some(d) = t
        .directions
        .iter()
        .filter(|d| d.cnps >= MIN_CNPS)
        .map(|d| (d.cnps as f64 / d.data_packets as f64, d))
        .filter(|&(r, _)| r >= CNP_PER_PACKET)
        .max_by(|a, b| a.0.total_cmp(&b.0))
    {
        out.push((
            d.0 / CNP_PER_PACKET,
            "congestion",
            format!(
                "{} CNPs against {} > {} ({:.0}/s, one per {:.0} data packets): each cuts the sender's rate",
                d.1.cnps,
                d.1.src,
                d.1.dst,
                d.1.cnps_per_s.unwrap_or(0.0),
                1.0 / d.0
            ),
        ));
    }
    let payload: u64 = t.directions.iter().map(|d| d.payload_bytes).sum();
    if data >= MIN_DATA_PACKETS {
        let mean = payload as f64 / data as f64;
        let segmented = t
            .directions
            .iter()
            .filter(|d| d.mtu_basis == Some("segments"))
            .filter_map(|d| d.implied_mtu)
            .max();
        let (mtu, whose) = match (t.configured_ib_mtu, segmented) {
            (Some(m), _) => (m, "the interface's MTU allows"),
            (None, Some(m)) => (m, "multi-packet messages use"),
            (None, None) => (IB_MTUS[IB_MTUS.len() - 1], "RoCE's largest MTU"),
        };
        if mean < f64::from(mtu) * SMALL_SHARE {
            out.push((
                f64::from(mtu) * SMALL_SHARE / mean.max(1.0),
                "small_packets",
                format!(
                    "mean payload {mean:.0} B per data packet over {data} packets, against an MTU of {mtu} B ({whose}): the per-packet cost, not the link, bounds the rate"
                ),
            ));
        }
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out
}

fn verdict(t: &Throughput, resends: u64, span_ns: i64) -> Verdict {
    let Some(link) = t.link else {
        return Verdict::default();
    };
    if t.directions.is_empty() {
        return Verdict::default();
    }
    let mut found = limiters(t, resends, span_ns);
    if let Some(d) = t
        .directions
        .iter()
        .filter(|d| {
            d.wire_gbps
                .is_some_and(|w| w >= link.gbps * SATURATED_SHARE)
        })
        .max_by(|a, b| {
            a.wire_gbps
                .unwrap_or(0.0)
                .total_cmp(&b.wire_gbps.unwrap_or(0.0))
        })
    {
        found.insert(
            0,
            (
                f64::INFINITY,
                "link_saturated",
                format!(
                    "{} > {} carries {:.2} Gbit/s on the wire, {} of {}",
                    d.src,
                    d.dst,
                    d.wire_gbps.unwrap_or(0.0),
                    pct(d.wire_gbps.unwrap_or(0.0) / link.gbps),
                    link_words(link)
                ),
            ),
        );
    }
    let mut it = found.into_iter();
    match it.next() {
        Some((_, limiter, evidence)) => Verdict {
            limiter,
            evidence,
            also: it.map(|(_, _, e)| e).collect(),
        },
        None => {
            let d = &t.directions[0];
            Verdict {
                limiter: "none",
                evidence: format!(
                    "no limiter over its threshold: {} > {} moved {:.3} Gbit/s of goodput ({} of {}); packets near the MTU, no PFC pauses, retransmissions or CNPs to speak of (the sender may simply have had no more to send)",
                    d.src,
                    d.dst,
                    d.goodput_gbps.unwrap_or(0.0),
                    d.link_share.map_or("-".to_owned(), pct),
                    link_words(link)
                ),
                also: Vec::new(),
            }
        }
    }
}

/// Writes the section for people.
pub fn write_text(t: &Throughput, out: &mut dyn Write) -> io::Result<()> {
    let Some(link) = t.link else {
        return Ok(());
    };
    writeln!(out, "why slow: link {}", link_words(link))?;
    if let Some(m) = t.configured_mtu {
        writeln!(
            out,
            "  capture host's interface MTU {m} B: RoCE MTU up to {}",
            t.configured_ib_mtu
                .map_or("none (too small)".to_owned(), |x| x.to_string())
        )?;
    }
    for d in &t.directions {
        writeln!(
            out,
            "  {} > {}: goodput {} over {:.3} s = {} Gbit/s ({} of the link); {} data packets, mean payload {:.0} B, {} at the implied MTU {}{}",
            d.src,
            d.dst,
            bytes(d.goodput_bytes),
            d.active_s,
            d.goodput_gbps.map_or("-".to_owned(), |g| format!("{g:.3}")),
            d.link_share.map_or("-".to_owned(), pct),
            d.data_packets,
            d.mean_payload,
            d.mtu_sized_share.map_or("-".to_owned(), pct),
            d.implied_mtu.map_or("-".to_owned(), |m| m.to_string()),
            match d.mtu_basis {
                Some("largest_payload") => " (at least)",
                _ => "",
            }
        )?;
        writeln!(
            out,
            "    re-sent {} ({} of goodput); {} CNPs back{}",
            bytes(d.retransmitted_bytes),
            d.retransmitted_share.map_or("-".to_owned(), pct),
            d.cnps,
            d.cnps_per_s
                .filter(|_| d.cnps > 0)
                .map_or(String::new(), |r| format!(" ({r:.0}/s)"))
        )?;
    }
    if !t.roce_priorities.is_empty() {
        let on: Vec<String> = t
            .roce_priorities
            .iter()
            .map(|r| format!("{} ({} packets)", r.words(), r.packets))
            .collect();
        writeln!(out, "  RoCE travels on: {}", on.join(", "))?;
    }
    for p in &t.pauses {
        writeln!(
            out,
            "  {}: {} XOFF, {} quanta = {:.3} ms paused ({} of the capture){}",
            p.priority
                .map_or("802.3x PAUSE".to_owned(), |x| format!("PFC priority {x}")),
            p.xoff,
            p.quanta,
            p.paused_ns as f64 / 1e6,
            pct(p.paused_share),
            match p.carries_roce {
                Some(true) => "; RoCE travels on it",
                Some(false) => "; no RoCE on it",
                None => "",
            }
        )?;
    }
    for c in &t.cnp_cuts {
        writeln!(
            out,
            "  CNP rate cuts: {}: {} CNPs{}",
            c.conn,
            c.cnps,
            c.per_s.map_or(String::new(), |r| format!(", {r:.0}/s"))
        )?;
    }
    writeln!(
        out,
        "  verdict: {}: {}",
        t.verdict.limiter.replace('_', " "),
        t.verdict.evidence
    )?;
    for a in &t.verdict.also {
        writeln!(out, "    also: {a}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xoff(ts: i64, quanta: u16) -> PauseFrame {
        PauseFrame {
            ts,
            slot: 3,
            quanta,
        }
    }

    #[test]
    fn pause_time_counts_overlaps_once() {
        // 100 Gb/s: 1 quantum = 5.12 ns; 1000 quanta = 5120 ns.
        let one = [xoff(0, 1000)];
        assert_eq!(paused_ns(&one, 100.0, 1_000_000), 5120);
        // A refresh 1000 ns in replaces the timer: paused 1000 + 5120.
        let refresh = [xoff(0, 1000), xoff(1000, 1000)];
        assert_eq!(paused_ns(&refresh, 100.0, 1_000_000), 6120);
        // An XON ends the pause.
        let xon = [xoff(0, 1000), xoff(2000, 0)];
        assert_eq!(paused_ns(&xon, 100.0, 1_000_000), 2000);
        // Separate pauses add up; the last is cut at the end of the capture.
        let apart = [xoff(0, 1000), xoff(10_000, 1000)];
        assert_eq!(paused_ns(&apart, 100.0, 12_000), 5120 + 2000);
        // 25 Gb/s: four times as long.
        assert_eq!(paused_ns(&one, 25.0, 1_000_000), 20_480);
    }

    #[test]
    fn go_back_n_resends_count_until_the_expected_psn() {
        let mut v = Volume::default();
        for psn in 0..10 {
            v.add(psn as i64, Some(psn), PsnStep::InOrder, 1024, true);
        }
        // Back to 5: PSNs 5..9 are re-sent, 10 is new.
        v.add(
            20,
            Some(5),
            PsnStep::Regression { from: 10, to: 5 },
            1024,
            true,
        );
        for psn in 6..12 {
            v.add(20 + psn as i64, Some(psn), PsnStep::InOrder, 1024, true);
        }
        assert_eq!(v.retransmitted_packets, 5);
        assert_eq!(v.retransmitted_bytes, 5 * 1024);
        assert_eq!(v.data_packets, 17);
        assert_eq!(v.at_mtu[2], 17);
        v.add(40, Some(11), PsnStep::Duplicate, 0, false);
        assert_eq!(v.retransmitted_packets, 6);
    }

    #[test]
    fn ib_mtu_of_an_ethernet_mtu() {
        assert_eq!(ib_mtu_for(1500), Some(1024));
        assert_eq!(ib_mtu_for(4200), Some(4096));
        assert_eq!(ib_mtu_for(9000), Some(4096));
        assert_eq!(ib_mtu_for(4096), Some(2048));
        assert_eq!(ib_mtu_for(200), None);
        assert_eq!(round_up_mtu(3000), Some(4096));
        assert_eq!(round_up_mtu(256), Some(256));
        assert_eq!(round_up_mtu(0), None);
    }
}
