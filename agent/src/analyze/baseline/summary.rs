//! What one interval of traffic looked like, per interface and traffic class:
//! the [`Summary`] the baseline keeps, and the [`Summarizer`] that makes them
//! from packets. Pure: packets and their times in, summaries out; no clock, no
//! I/O, no allocation per packet once a class has been seen.

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
    /// One summary per class seen, in the order first seen (a few at most: a linear
    /// search beats a map per packet); sorted by class when closed.
    classes: Vec<Summary>,
    tracker: Tracker,
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
    /// The running interval per interface, sorted by name (found by a binary search,
    /// once per packet; a file may name thousands of interfaces).
    open: Vec<(String, Open)>,
    /// Names of interfaces without an `if_name`, by interface id (made once each).
    unnamed: Vec<String>,
}

impl Summarizer {
    /// Intervals of `interval_ns` (at least 1 ms), aligned to multiples of it.
    pub fn new(interval_ns: i64) -> Summarizer {
        Summarizer {
            interval_ns: interval_ns.max(1_000_000),
            whole: false,
            open: Vec::new(),
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
        for (_, mut o) in open {
            o.start_ns = start_ns;
            out.extend(self.close(o, end_ns).map(|mut s| {
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
        let frame = wire::parse_frame(linktype, data);
        self.parsed_packet(interface, ts, data, orig_len, &frame)
    }

    /// [`Summarizer::packet`] of a frame already parsed (`frame` is
    /// `wire::parse_frame` of `data`), for a caller that summarises one
    /// packet more than one way.
    pub fn parsed_packet(
        &mut self,
        interface: &str,
        ts: i64,
        data: &[u8],
        orig_len: u32,
        frame: &Frame<'_>,
    ) -> Vec<Summary> {
        let start = if self.whole {
            0
        } else {
            ts - ts.rem_euclid(self.interval_ns)
        };
        let mut closed = Vec::new();
        let found = self
            .open
            .binary_search_by(|(n, _)| n.as_str().cmp(interface));
        let at = match found {
            Ok(i) if self.open[i].1.start_ns == start => i,
            found => {
                let fresh = Open {
                    start_ns: start,
                    classes: Vec::new(),
                    tracker: Tracker::with_limit(TRACKED),
                    latencies: Vec::new(),
                };
                match found {
                    Ok(i) => {
                        let o = std::mem::replace(&mut self.open[i].1, fresh);
                        closed = self.finish(o);
                        i
                    }
                    Err(i) => {
                        self.open.insert(i, (interface.to_string(), fresh));
                        i
                    }
                }
            }
        };
        let o = &mut self.open[at].1;
        let class = match frame {
            Frame::Roce(r) => r.dscp.unwrap_or(NO_CLASS),
            _ => NO_CLASS,
        };
        let i = match o.classes.iter().position(|s| s.class == class) {
            Some(i) => i,
            None => {
                o.classes.push(Summary {
                    start_ns: start,
                    interface: interface.to_string(),
                    class,
                    ..Summary::default()
                });
                o.classes.len() - 1
            }
        };
        let s = &mut o.classes[i];
        s.packets += 1;
        s.bytes += u64::from(orig_len);
        let bucket = SIZE_BUCKETS
            .iter()
            .position(|b| orig_len <= *b)
            .unwrap_or(7);
        s.sizes[bucket] += 1;
        match frame {
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
                // From the oldest request the packet answered.
                if step.answered > 0 && o.latencies.len() < MAX_LATENCIES {
                    o.latencies.push((ts - step.answered_since) as f64 / 1e3);
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
        let interval = self.interval_ns;
        let due = |o: &Open| o.start_ns.saturating_add(interval) <= now_ns;
        if !self.open.iter().any(|(_, o)| due(o)) {
            return Vec::new();
        }
        // Both halves stay sorted by name.
        let (due, open): (Vec<_>, Vec<_>) = std::mem::take(&mut self.open)
            .into_iter()
            .partition(|(_, o)| due(o));
        self.open = open;
        due.into_iter().flat_map(|(_, o)| self.finish(o)).collect()
    }

    fn finish(&self, o: Open) -> Vec<Summary> {
        let end = o.start_ns.saturating_add(self.interval_ns);
        self.close(o, end).collect()
    }

    fn close(&self, mut o: Open, end_ns: i64) -> impl Iterator<Item = Summary> {
        let ack = percentiles(&mut o.latencies);
        o.classes.sort_by_key(|s| s.class);
        o.classes.into_iter().map(move |mut s| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic;
    use std::net::Ipv4Addr;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// A RoCE v2 frame: `opcode` to `qp` at `psn`, AckReq set, an AETH (an ACK) if `ack`.
    fn roce(from_a: bool, opcode: u8, qp: u32, psn: u32, ack: bool) -> Vec<u8> {
        let mut bth = vec![opcode, 0, 0xff, 0xff, 0];
        bth.extend_from_slice(&qp.to_be_bytes()[1..]);
        bth.push(0x80);
        bth.extend_from_slice(&psn.to_be_bytes()[1..]);
        if ack {
            bth.extend_from_slice(&[0x1f, 0, 0, 1]);
        }
        let (src, dst) = if from_a { (A, B) } else { (B, A) };
        let mut out = Vec::new();
        traffic::frame(src, dst, 49152, &bth, &mut out);
        out
    }

    /// Each answer's latency runs from the oldest request it answers: two requests
    /// answered together, one alone, and two answered one by one.
    #[test]
    fn ack_latency_runs_from_the_oldest_request_answered() {
        let mut s = Summarizer::new(1_000_000_000);
        let us = |t: i64| 5_000_000_000 + t * 1000;
        const SEND_ONLY: u8 = 0x04;
        const ACK: u8 = 0x11;
        let packets = [
            (0, true, SEND_ONLY, 5),
            (10, true, SEND_ONLY, 6),
            (50, false, ACK, 6), // both: 50 µs
            (100, true, SEND_ONLY, 7),
            (120, false, ACK, 7), // 20 µs
            (200, true, SEND_ONLY, 8),
            (210, true, SEND_ONLY, 9),
            (230, false, ACK, 8), // 30 µs
            (270, false, ACK, 9), // 60 µs
        ];
        for (t, from_a, op, psn) in packets {
            let qp = if from_a { 0x11 } else { 0x22 };
            let f = roce(from_a, op, qp, psn, op == ACK);
            let closed = s.packet("eth0", wire::linktype::ETHERNET, us(t), &f, f.len() as u32);
            assert!(closed.is_empty());
        }
        let out = s.tick(6_000_000_000);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].packets, 9);
        assert_eq!(out[0].qps, 2);
        // Latencies 20, 30, 50, 60: the median and p99 by nearest rank.
        assert_eq!(out[0].ack_us, Some([50.0, 60.0]));
    }
}
