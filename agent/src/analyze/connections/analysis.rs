//! The loop of [`super::analyze`]: [`Analysis`] holds its state, takes every frame
//! ([`Analysis::packet`]: the whole-capture figures, then PFC/PAUSE, ARP or the RoCE
//! packet's connection) and turns into the [`Report`] at the end ([`Analysis::finish`]:
//! open silences, unanswered requests, ARP inside silences, connections worst first).
//!
//! The per-packet path allocates nothing (a new connection allocates its state once; the
//! event list is capped at [`MAX_EVENTS`]) and is `#[inline]` down to the tracker's step.

use super::{
    ArpStats, ConnStats, Episode, Event, EventKind, Report, Silence, ANSWER_GRACE_NS, MAX_EPISODES,
    MAX_EVENTS, SCHEMA_VERSION, SILENCE_MIN_NS, STALL_MIN_NS,
};
use crate::analyze::baseline::Summarizer;
use crate::analyze::throughput::Fragments;
use crate::analyze::track::{NakKind, PsnStep, Step, Tracker};
use crate::analyze::whole::{roce_payload_len, Pauses, RocePriorities, Sizes, Timeline};
use crate::capture_file::reader::Packet;
use crate::wire::bth::{Opcode, Operation};
use crate::wire::{self, Frame, FrameCounts, Roce};

/// Events for the picture, at most [`MAX_EVENTS`]: (time, kind, connection by creation
/// index).
#[derive(Default)]
struct Events {
    list: Vec<(i64, EventKind, Option<u32>)>,
    dropped: u64,
}

impl Events {
    #[inline]
    fn push(&mut self, ts: i64, kind: EventKind, conn: Option<u32>) {
        if self.list.len() < MAX_EVENTS {
            self.list.push((ts, kind, conn));
        } else {
            self.dropped += 1;
        }
    }
}

/// The state of [`super::analyze`]'s loop: [`Analysis::packet`] per packet, then
/// [`Analysis::finish`].
pub(super) struct Analysis {
    frames: FrameCounts,
    pfc_pause_frames: u64,
    tracker: Tracker,
    /// By the tracker's creation index.
    conns: Vec<ConnStats>,
    timeline: Timeline,
    sizes: Sizes,
    pauses: Pauses,
    priorities: RocePriorities,
    arp_times: Vec<i64>,
    events: Events,
    fragments: Fragments,
    first_ns: i64,
    last_ns: i64,
    /// The whole-window summary per interface and class, when a baseline will
    /// be compared ([`Analysis::summarize`]).
    summarizer: Option<Summarizer>,
}

impl Default for Analysis {
    fn default() -> Analysis {
        Analysis {
            frames: FrameCounts::default(),
            pfc_pause_frames: 0,
            tracker: Tracker::default(),
            conns: Vec::new(),
            timeline: Timeline::default(),
            sizes: Sizes::default(),
            pauses: Pauses::default(),
            priorities: RocePriorities::default(),
            arp_times: Vec::new(),
            events: Events::default(),
            fragments: Fragments::default(),
            first_ns: i64::MAX,
            last_ns: i64::MIN,
            summarizer: None,
        }
    }
}

impl Analysis {
    /// Also summarises the whole capture per interface and class (for a
    /// baseline comparison; [`Report::summaries`]).
    pub(super) fn summarize(&mut self) {
        self.summarizer = Some(Summarizer::whole());
    }

    /// Accounts one frame: the whole-capture figures, then by its class.
    #[inline]
    pub(super) fn packet(&mut self, p: &Packet<'_>) {
        let frame = wire::parse_frame(p.link_type, p.data);
        self.frames.add(&frame);
        let ts = wire::frame_timestamp_ns(p.link_type, p.data).unwrap_or(p.ts_ns);
        self.first_ns = self.first_ns.min(ts);
        self.last_ns = self.last_ns.max(ts);
        self.timeline.add(ts, u64::from(p.orig_len));
        self.sizes.add_frame(p.orig_len);
        if let Some(s) = &mut self.summarizer {
            // Whole: never closes an interval, so nothing is returned (or allocated).
            let _ = s.capture_packet(p, ts);
        }
        match frame {
            Frame::Roce(r) => self.roce(ts, p, &r),
            Frame::MacControl(m) => {
                let paused = self.pauses.add(ts, &m);
                if paused != 0 {
                    self.pfc_pause_frames += 1;
                    self.events.push(ts, EventKind::Pause, None);
                }
            }
            Frame::Arp => {
                if self.arp_times.len() < MAX_EVENTS {
                    self.arp_times.push(ts);
                }
                self.events.push(ts, EventKind::Arp, None);
            }
            Frame::Other => {
                if let Some(f) = wire::ipv4_fragment(p.link_type, p.data) {
                    self.fragments.add(ts, &f);
                }
            }
            _ => {}
        }
    }

    /// Accounts a RoCE packet: the tracker's step on its connection, and its payload size.
    #[inline]
    fn roce(&mut self, ts: i64, p: &Packet<'_>, r: &Roce<'_>) {
        let step = self.tracker.packet(ts, r);
        self.priorities.add(r);
        let bth = r.transport.bth();
        if step.new_conn {
            self.conns.push(ConnStats {
                src: r.src.to_string(),
                dst: r.dst.to_string(),
                dest_qp: format!("0x{:06x}", bth.dest_qp()),
                first_ns: ts,
                last_ns: ts,
                opcode_counts: vec![0; 256],
                ..ConnStats::default()
            });
        }
        if let Some(peer) = step.answered_conn {
            if let Some(f) = self.conns.get_mut(peer as usize) {
                f.ackreq_answered += u64::from(step.answered);
            }
        }
        let Some(c) = self.conns.get_mut(step.conn as usize) else {
            return;
        };
        c.count(ts, &step, p.orig_len, bth.opcode_raw(), &mut self.events);
        let (payload, segment) = if r.transport.is_truncated() {
            (0, false)
        } else {
            let (payload, segment) = payload_of(p, r);
            self.sizes.add_payload(payload, segment);
            (payload, segment)
        };
        let request_psn = match r.transport.opcode() {
            Opcode::Op(_, op) if !op.is_response() => Some(bth.psn()),
            _ => None,
        };
        c.volume.add(ts, request_psn, step.psn, payload, segment);
        if step.cnp {
            c.volume.cnp(ts);
        }
    }

    /// The report, without findings: open silences, ARP in silences, worst first.
    pub(super) fn finish(mut self) -> Report {
        let (first_ns, last_ns) = if self.first_ns > self.last_ns {
            (0, 0)
        } else {
            (self.first_ns, self.last_ns)
        };
        self.sizes.finish();
        end_of_capture(&self.tracker, &mut self.conns, last_ns);
        for c in &mut self.conns {
            c.finish();
        }
        let arp = arp_in_silences(self.frames.arp, &self.arp_times, &self.conns);
        let (connections, events) = worst_first(self.conns, self.events.list);
        let summaries = self
            .summarizer
            .as_mut()
            .map(|s| s.finish_whole(first_ns, last_ns));
        Report {
            schema: "tripcap.analyze.connections",
            version: SCHEMA_VERSION,
            frames: self.frames,
            pfc_pause_frames: self.pfc_pause_frames,
            first_ns,
            last_ns,
            reference: None,
            capture: None,
            timeline: self.timeline,
            sizes: self.sizes,
            pauses: self.pauses,
            roce_priorities: self.priorities,
            arp,
            throughput: Default::default(),
            fragments: self.fragments,
            link_speed_gbps: None,
            findings: Vec::new(),
            connections,
            events,
            events_dropped: self.events.dropped,
            summaries,
            baseline: None,
        }
    }
}

impl ConnStats {
    /// Counts one packet of `len` wire bytes and opcode `opcode` on this connection, whose
    /// meaning the tracker worked out in `step`.
    #[inline]
    fn count(&mut self, ts: i64, step: &Step, len: u32, opcode: u8, events: &mut Events) {
        self.packets += 1;
        self.bytes += u64::from(len);
        self.last_ns = self.last_ns.max(ts);
        if let Some(slot) = self.opcode_counts.get_mut(usize::from(opcode)) {
            *slot += 1;
        }
        if step.ce {
            self.ecn_ce += 1;
            self.firsts.ecn_ce.get_or_insert(ts);
        }
        self.pause(ts, step);
        if step.ackreq {
            self.ackreq += 1;
        }
        self.psn(ts, step, events);
        if step.cnp {
            self.cnps += 1;
            self.firsts.cnp.get_or_insert(ts);
            events.push(ts, EventKind::Cnp, Some(step.conn));
        }
        if let Some(k) = step.nak {
            let (count, first) = match k {
                NakKind::Seq => (&mut self.naks_seq, &mut self.firsts.nak_seq),
                NakKind::Rnr => (&mut self.naks_rnr, &mut self.firsts.nak_rnr),
                NakKind::Other => (&mut self.naks_other, &mut self.firsts.nak_other),
            };
            *count += 1;
            first.get_or_insert(ts);
            events.push(ts, EventKind::Nak, Some(step.conn));
        }
    }

    /// The pause before a packet at `ts`: the longest silence, silences and stalls.
    #[inline]
    fn pause(&mut self, ts: i64, step: &Step) {
        if step.pause_ns > self.max_silence_ns {
            self.max_silence_ns = step.pause_ns;
            self.max_silence_start = Some(ts - step.pause_ns);
        }
        if step.pause_ns >= SILENCE_MIN_NS {
            self.note_silence(Silence {
                start_ns: ts - step.pause_ns,
                end_ns: ts,
                ms: step.pause_ns as f64 / 1e6,
                outstanding: step.pause_outstanding,
                open: false,
            });
            if step.pause_outstanding && step.pause_ns >= STALL_MIN_NS {
                self.stalls += 1;
            }
        }
    }

    /// A request's PSN continuity: gaps, duplicates, go-back-N.
    #[inline]
    fn psn(&mut self, ts: i64, step: &Step, events: &mut Events) {
        match step.psn {
            PsnStep::InOrder => {}
            PsnStep::Gap { missing } => {
                self.psn_gaps += 1;
                self.psn_missing += u64::from(missing);
                self.firsts.gap.get_or_insert(ts);
            }
            PsnStep::Duplicate => {
                self.duplicates += 1;
                self.firsts.duplicate.get_or_insert(ts);
                events.push(ts, EventKind::Retransmit, Some(step.conn));
            }
            PsnStep::Regression { from, to } => {
                self.psn_regressions += 1;
                if self.regression_episodes.len() < MAX_EPISODES {
                    self.regression_episodes.push(Episode {
                        at_ns: ts,
                        from_psn: from,
                        to_psn: to,
                    });
                }
                events.push(ts, EventKind::Retransmit, Some(step.conn));
            }
        }
    }

    /// Fills the serialized fields computed from the others.
    fn finish(&mut self) {
        self.max_silence_ms = self.max_silence_ns as f64 / 1e6;
        if let Some(start) = self.max_silence_start {
            self.max_silence_at = crate::clock::rfc3339(start);
        }
        for (code, &count) in self.opcode_counts.iter().enumerate() {
            if count > 0 {
                self.opcodes
                    .insert(Opcode::from(code as u8).to_string(), count);
            }
        }
        self.score = self.compute_score();
    }
}

/// The payload of an untruncated RoCE packet (frame length minus everything before it,
/// pad and ICRC), and whether it is a First/Middle segment of a message.
#[inline]
fn payload_of(p: &Packet<'_>, r: &Roce<'_>) -> (u32, bool) {
    let payload = roce_payload_len(p.data, p.orig_len, r);
    let segment = matches!(
        r.transport.opcode(),
        Opcode::Op(
            _,
            Operation::WriteFirst
                | Operation::WriteMiddle
                | Operation::SendFirst
                | Operation::SendMiddle
                | Operation::ReadResponseFirst
                | Operation::ReadResponseMiddle
        )
    );
    (payload, segment)
}

/// End of capture (at `last_ns`): open silences and unanswered requests.
fn end_of_capture(tracker: &Tracker, conns: &mut [ConnStats], last_ns: i64) {
    for (_, t) in tracker.iter() {
        let Some(c) = conns.get_mut(t.id as usize) else {
            continue;
        };
        let quiet = last_ns - t.last_ts;
        if quiet > c.max_silence_ns {
            c.max_silence_ns = quiet;
            c.max_silence_start = Some(t.last_ts);
            c.max_silence_open = true;
        }
        if quiet >= SILENCE_MIN_NS {
            let outstanding = t.outstanding() && t.last_answer_ts <= t.last_ts;
            c.note_silence(Silence {
                start_ns: t.last_ts,
                end_ns: last_ns,
                ms: quiet as f64 / 1e6,
                outstanding,
                open: true,
            });
            if outstanding && quiet >= STALL_MIN_NS {
                c.stalls += 1;
            }
        }
        c.ackreq_unanswered = t.pending_before(last_ns - ANSWER_GRACE_NS) as u64;
        if c.ackreq_unanswered > 0 {
            c.oldest_unanswered_ns = t.oldest_pending();
        }
    }
}

/// The `packets` ARP packets, those at `arp_times` checked against every silence.
fn arp_in_silences(packets: u64, arp_times: &[i64], conns: &[ConnStats]) -> ArpStats {
    let mut arp = ArpStats {
        packets,
        ..ArpStats::default()
    };
    for &t in arp_times {
        let mut any = false;
        let mut stalled = false;
        for s in conns.iter().flat_map(|c| c.silences.iter()) {
            if s.start_ns < t && t < s.end_ns {
                any = true;
                stalled |= s.outstanding;
            }
        }
        if any {
            arp.in_silence += 1;
            if arp.in_silence_at_ns.len() < 32 {
                arp.in_silence_at_ns.push(t);
            }
        }
        arp.in_stall += u64::from(stalled);
    }
    arp
}

/// The connections worst first, and the events in time order pointing at those positions.
fn worst_first(
    conns: Vec<ConnStats>,
    events: Vec<(i64, EventKind, Option<u32>)>,
) -> (Vec<ConnStats>, Vec<Event>) {
    let mut order: Vec<usize> = (0..conns.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&conns[a], &conns[b]);
        y.score
            .cmp(&x.score)
            .then(y.packets.cmp(&x.packets))
            .then_with(|| (&x.src, &x.dst, &x.dest_qp).cmp(&(&y.src, &y.dst, &y.dest_qp)))
    });
    let mut position = vec![0usize; conns.len()];
    for (pos, &i) in order.iter().enumerate() {
        position[i] = pos;
    }
    let mut slots: Vec<Option<ConnStats>> = conns.into_iter().map(Some).collect();
    let connections: Vec<ConnStats> = order.iter().filter_map(|&i| slots[i].take()).collect();
    let mut events: Vec<Event> = events
        .into_iter()
        .map(|(ts, kind, conn)| Event {
            ts,
            kind,
            conn: conn.and_then(|c| position.get(c as usize).copied()),
        })
        .collect();
    events.sort_by_key(|e| e.ts);
    (connections, events)
}
