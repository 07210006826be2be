//! Per-connection health of a capture, and the whole report of `tripcap analyze FILE`
//! (a readable summary, or JSON with `--json`; the schema is in `docs/analyze-schema.md`).
//!
//! A *connection* here is one direction of a queue pair as seen on the wire: source address,
//! destination address and destination QP. Requester→responder traffic and the responder's
//! ACKs/READ responses are therefore two connections, which keeps every counter one-sided.
//! The state machine that reads each packet is [`super::track`], shared with the live
//! packet triggers.
//!
//! PSN tracking looks at request packets only (SEND/WRITE/READ request/atomics): responses
//! and ACKs coalesce PSNs legitimately. For each request with PSN `p` and expected PSN `e`
//! (previous PSN + 1, modulo 2^24), the signed 24-bit distance `p - e` classifies it:
//! 0 in order; positive a *gap* (packets missing before the capture point); `p` equal to the
//! previous PSN a *duplicate* (timeout or RNR retry of one packet); any other negative
//! distance a *regression* (go-back-N after a NAK). `e` then becomes `p + 1`, so one
//! go-back-N episode counts once. A READ request advances the PSN by its number of response
//! packets (unknown without the path MTU), so a forward jump right after one is not a gap.
//!
//! The silence of a connection is the longest time between two of its consecutive packets,
//! or from its last packet to the end of the capture (an *open* silence, as a queue pair
//! that stopped for good shows); `max_silence_at` is when that silence began (its last
//! packet before the pause). Besides that, every pause of at least [`SILENCE_MIN_NS`] is a
//! *silence* (the longest [`MAX_SILENCES`] are kept, including the one from a connection's
//! last packet to the end of the capture); a silence during which requests were
//! outstanding (see [`super::track`]) and that lasts at least [`STALL_MIN_NS`] is a
//! *stall*.
//!
//! The loop allocates nothing per packet: per-connection state is created once, events for
//! the picture are capped at [`MAX_EVENTS`].

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde::Serialize;

use super::context::{CaptureContext, Reference};
use super::finding::Finding;
use super::track::{NakKind, PsnStep, Tracker};
use super::whole::{Pauses, Sizes, Timeline};
use crate::capture_file::reader::{self, Reader};
use crate::wire::bth::{Opcode, Operation};
use crate::wire::{self, Frame, FrameCounts};

/// Version of the JSON schema written by [`Report::write_json`]. Version 2 added every
/// field after `connections[].max_silence_at` and sorts connections worst first; no
/// version-1 field changed meaning. Version 3: `max_silence_ms`/`max_silence_at` count a
/// silence open at the end of the capture, `max_silence_at` is RFC 3339 (was epoch
/// seconds), and `max_silence_open` says whether that silence is open.
pub const SCHEMA_VERSION: u32 = 3;
/// Shortest pause recorded as a silence.
pub const SILENCE_MIN_NS: i64 = 10_000_000;
/// Shortest silence with outstanding requests reported as a stall.
pub const STALL_MIN_NS: i64 = 50_000_000;
/// Silences kept per connection (the longest).
pub const MAX_SILENCES: usize = 8;
/// Go-back-N episodes listed per connection (all are counted).
pub const MAX_EPISODES: usize = 16;
/// Events kept for the picture (retransmissions, NAKs, CNPs, pauses, ARP); later ones are
/// counted in `events_dropped`.
pub const MAX_EVENTS: usize = 200_000;
/// AckReq requests sent less than this before the end of the capture may simply have their
/// answer after it: they are not counted as unanswered.
pub const ANSWER_GRACE_NS: i64 = 10_000_000;

/// A pause of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Silence {
    /// Its last packet before the pause (ns since the epoch).
    pub start_ns: i64,
    /// The next packet, or the end of the capture.
    pub end_ns: i64,
    /// Length in milliseconds.
    pub ms: f64,
    /// Requests were outstanding throughout.
    pub outstanding: bool,
    /// It lasts until the end of the capture.
    pub open: bool,
}

/// One go-back-N episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Episode {
    /// When the re-sent request was seen.
    pub at_ns: i64,
    /// PSN expected next.
    pub from_psn: u32,
    /// PSN it went back to.
    pub to_psn: u32,
}

/// What kind of event a picture marker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum EventKind {
    /// A PSN regression or duplicate (retransmission).
    Retransmit,
    /// A NAK or RNR NAK.
    Nak,
    /// A CNP.
    Cnp,
    /// A PFC or PAUSE XOFF frame.
    Pause,
    /// An ARP packet.
    Arp,
}

/// An event at a time, for the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// ns since the epoch.
    pub ts: i64,
    /// What.
    pub kind: EventKind,
    /// Index into [`Report::connections`] (after sorting), if it belongs to one.
    pub conn: Option<usize>,
}

/// First time of each kind of problem on a connection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Firsts {
    pub gap: Option<i64>,
    pub duplicate: Option<i64>,
    pub nak_seq: Option<i64>,
    pub nak_rnr: Option<i64>,
    pub nak_other: Option<i64>,
    pub cnp: Option<i64>,
    pub ecn_ce: Option<i64>,
}

/// Counters of one connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ConnStats {
    /// Source address (IP, GID or LID), as in `--packets`.
    pub src: String,
    /// Destination address.
    pub dst: String,
    /// Destination QP as `0x%06x`.
    pub dest_qp: String,
    /// Packets.
    pub packets: u64,
    /// Bytes on the wire (frame lengths).
    pub bytes: u64,
    /// Forward PSN jumps of request packets (packets missing before the capture point).
    pub psn_gaps: u64,
    /// Request PSNs missing in those jumps.
    pub psn_missing: u64,
    /// Backward PSN jumps of request packets (go-back-N episodes).
    pub psn_regressions: u64,
    /// Request packets repeating the previous PSN (timeout/RNR retries).
    pub duplicates: u64,
    /// NAK PSN sequence error.
    pub naks_seq: u64,
    /// RNR NAKs.
    pub naks_rnr: u64,
    /// Other NAKs (invalid request, remote access/operational error, invalid RD request,
    /// reserved codes).
    pub naks_other: u64,
    /// CNPs sent on this connection (BTH opcode 0x81).
    pub cnps: u64,
    /// Packets with ECN = CE (3) in the IP header / GRH, or FECN set.
    pub ecn_ce: u64,
    /// Longest silence, in milliseconds: between two packets, or from the last packet to
    /// the end of the capture.
    pub max_silence_ms: f64,
    /// Start of that silence (its last packet before it), RFC 3339 UTC with nanoseconds
    /// (empty if the connection never paused).
    pub max_silence_at: String,
    /// That silence lasts until the end of the capture.
    pub max_silence_open: bool,
    /// First packet, ns since the epoch.
    pub first_ns: i64,
    /// Last packet, ns since the epoch.
    pub last_ns: i64,
    /// Packets per opcode name (`RC RDMA WRITE First`, `CNP`, `Unknown opcode 0x..`).
    pub opcodes: BTreeMap<String, u64>,
    /// Requests with the AckReq bit set.
    pub ackreq: u64,
    /// Of those, answered by an ACK/NAK/response of the opposite direction.
    pub ackreq_answered: u64,
    /// Of those, never answered in the capture (sent at least `ANSWER_GRACE_NS` before its
    /// end).
    pub ackreq_unanswered: u64,
    /// The longest pauses (≥ 10 ms), longest first.
    pub silences: Vec<Silence>,
    /// Silences with requests outstanding of at least 50 ms.
    pub stalls: u64,
    /// The first go-back-N episodes.
    pub regression_episodes: Vec<Episode>,
    /// How bad it looks (higher is worse); connections are sorted by it.
    pub score: u64,
    #[serde(skip)]
    pub(crate) firsts: Firsts,
    #[serde(skip)]
    max_silence_ns: i64,
    /// Start of the longest silence, ns since the epoch (`None`: never paused).
    #[serde(skip)]
    pub(crate) max_silence_start: Option<i64>,
    #[serde(skip)]
    opcode_counts: Vec<u64>,
    #[serde(skip)]
    pub(crate) oldest_unanswered_ns: Option<i64>,
}

impl ConnStats {
    fn note_silence(&mut self, s: Silence) {
        if self.silences.len() == MAX_SILENCES {
            match self.silences.last() {
                Some(last) if last.ms < s.ms => {
                    self.silences.pop();
                }
                _ => return,
            }
        }
        let at = self.silences.partition_point(|x| x.ms >= s.ms);
        self.silences.insert(at, s);
    }

    /// The connection as one label: `src > dst 0xQP`.
    pub fn label(&self) -> String {
        format!("{} > {} {}", self.src, self.dst, self.dest_qp)
    }

    fn compute_score(&self) -> u64 {
        self.stalls * 1_000_000
            + (self.psn_regressions + self.naks_seq + self.naks_rnr + self.naks_other) * 1_000
            + (self.psn_gaps + self.duplicates + self.ackreq_unanswered) * 100
            + self.cnps * 10
            + self.ecn_ce
    }
}

/// ARP packets.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArpStats {
    /// ARP packets.
    pub packets: u64,
    /// Of those, sent while some connection was in a silence with requests outstanding.
    pub in_stall: u64,
    /// Of those, sent while some connection was in any silence.
    pub in_silence: u64,
    /// Times of the ARP packets inside a silence (the first 32).
    pub in_silence_at_ns: Vec<i64>,
}

/// The whole analysis.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Schema name.
    pub schema: &'static str,
    /// [`SCHEMA_VERSION`].
    pub version: u32,
    /// Frames by class.
    pub frames: FrameCounts,
    /// PFC/PAUSE frames that paused at least one priority.
    pub pfc_pause_frames: u64,
    /// First frame, ns since the epoch (0 if none).
    pub first_ns: i64,
    /// Last frame, ns since the epoch.
    pub last_ns: i64,
    /// Times in findings are relative to this (the trigger when the sidecar has one).
    pub reference: Option<Reference>,
    /// What the sidecar says about how the capture was taken, if there is one.
    pub capture: Option<CaptureContext>,
    /// Throughput over time.
    pub timeline: Timeline,
    /// Frame sizes and the implied path MTU.
    pub sizes: Sizes,
    /// PFC per priority and 802.3x PAUSE.
    pub pauses: Pauses,
    /// ARP.
    pub arp: ArpStats,
    /// Everything worth a look, in time order (untimed ones first).
    pub findings: Vec<Finding>,
    /// One entry per connection, worst first (by `score`, then packets).
    pub connections: Vec<ConnStats>,
    /// Events for the picture (not serialized).
    #[serde(skip)]
    pub events: Vec<Event>,
    /// Events not kept (over [`MAX_EVENTS`]).
    pub events_dropped: u64,
}

/// Reads every packet and computes the report, without findings: [`Report::set_context`]
/// (in [`super::findings`]) attaches the sidecar's context, if any, and computes them.
/// `progress` is called now and then with the reader's byte offset.
pub fn analyze<R: Read>(
    reader: &mut Reader<R>,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, reader::Error> {
    let mut frames = FrameCounts::default();
    let mut pfc_pause_frames = 0;
    let mut tracker = Tracker::default();
    let mut conns: Vec<ConnStats> = Vec::new();
    let mut timeline = Timeline::default();
    let mut sizes = Sizes::default();
    let mut pauses = Pauses::default();
    let mut arp_times: Vec<i64> = Vec::new();
    let mut events: Vec<(i64, EventKind, Option<u32>)> = Vec::new();
    let mut events_dropped = 0u64;
    let mut push_event = |events: &mut Vec<_>, e| {
        if events.len() < MAX_EVENTS {
            events.push(e);
        } else {
            events_dropped += 1;
        }
    };
    let (mut first_ns, mut last_ns) = (i64::MAX, i64::MIN);
    let mut n: u64 = 0;
    loop {
        n += 1;
        if n & 0xffff == 0 {
            progress(reader.offset());
        }
        let Some(p) = reader.next_packet()? else {
            break;
        };
        let frame = wire::parse_frame(p.link_type, p.data);
        frames.add(&frame);
        let ts = wire::frame_timestamp_ns(p.link_type, p.data).unwrap_or(p.ts_ns);
        first_ns = first_ns.min(ts);
        last_ns = last_ns.max(ts);
        timeline.add(ts, u64::from(p.orig_len));
        sizes.add_frame(p.orig_len);
        let r = match frame {
            Frame::Roce(r) => r,
            Frame::MacControl(m) => {
                if pauses.add(ts, &m) != 0 {
                    pfc_pause_frames += 1;
                    push_event(&mut events, (ts, EventKind::Pause, None));
                }
                continue;
            }
            Frame::Arp => {
                if arp_times.len() < MAX_EVENTS {
                    arp_times.push(ts);
                }
                push_event(&mut events, (ts, EventKind::Arp, None));
                continue;
            }
            _ => continue,
        };
        let step = tracker.packet(ts, &r);
        let bth = r.transport.bth();
        if step.new_conn {
            conns.push(ConnStats {
                src: r.src.to_string(),
                dst: r.dst.to_string(),
                dest_qp: format!("0x{:06x}", bth.dest_qp()),
                first_ns: ts,
                last_ns: ts,
                opcode_counts: vec![0; 256],
                ..ConnStats::default()
            });
        }
        let id = step.conn as usize;
        if let Some(peer) = step.answered_conn {
            if let Some(f) = conns.get_mut(peer as usize) {
                f.ackreq_answered += u64::from(step.answered);
            }
        }
        let Some(c) = conns.get_mut(id) else { continue };
        c.packets += 1;
        c.bytes += u64::from(p.orig_len);
        c.last_ns = c.last_ns.max(ts);
        if let Some(slot) = c.opcode_counts.get_mut(usize::from(bth.opcode_raw())) {
            *slot += 1;
        }
        if step.ce {
            c.ecn_ce += 1;
            c.firsts.ecn_ce.get_or_insert(ts);
        }
        if step.pause_ns > c.max_silence_ns {
            c.max_silence_ns = step.pause_ns;
            c.max_silence_start = Some(ts - step.pause_ns);
        }
        if step.pause_ns >= SILENCE_MIN_NS {
            c.note_silence(Silence {
                start_ns: ts - step.pause_ns,
                end_ns: ts,
                ms: step.pause_ns as f64 / 1e6,
                outstanding: step.pause_outstanding,
                open: false,
            });
            if step.pause_outstanding && step.pause_ns >= STALL_MIN_NS {
                c.stalls += 1;
            }
        }
        if step.ackreq {
            c.ackreq += 1;
        }
        match step.psn {
            PsnStep::InOrder => {}
            PsnStep::Gap { missing } => {
                c.psn_gaps += 1;
                c.psn_missing += u64::from(missing);
                c.firsts.gap.get_or_insert(ts);
            }
            PsnStep::Duplicate => {
                c.duplicates += 1;
                c.firsts.duplicate.get_or_insert(ts);
                push_event(&mut events, (ts, EventKind::Retransmit, Some(step.conn)));
            }
            PsnStep::Regression { from, to } => {
                c.psn_regressions += 1;
                if c.regression_episodes.len() < MAX_EPISODES {
                    c.regression_episodes.push(Episode {
                        at_ns: ts,
                        from_psn: from,
                        to_psn: to,
                    });
                }
                push_event(&mut events, (ts, EventKind::Retransmit, Some(step.conn)));
            }
        }
        if step.cnp {
            c.cnps += 1;
            c.firsts.cnp.get_or_insert(ts);
            push_event(&mut events, (ts, EventKind::Cnp, Some(step.conn)));
        }
        if let Some(k) = step.nak {
            let (count, first) = match k {
                NakKind::Seq => (&mut c.naks_seq, &mut c.firsts.nak_seq),
                NakKind::Rnr => (&mut c.naks_rnr, &mut c.firsts.nak_rnr),
                NakKind::Other => (&mut c.naks_other, &mut c.firsts.nak_other),
            };
            *count += 1;
            first.get_or_insert(ts);
            push_event(&mut events, (ts, EventKind::Nak, Some(step.conn)));
        }
        if !r.transport.is_truncated() {
            // Payload on the wire: frame length minus everything before it, pad and ICRC.
            let tdata = r.transport.bth().into_inner();
            let headers = tdata.len() - r.transport.payload().len();
            let before = (tdata.as_ptr() as usize).saturating_sub(p.data.as_ptr() as usize);
            let payload =
                (p.orig_len as usize).saturating_sub(before + headers + usize::from(bth.pad()) + 4);
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
            sizes.add_payload(u32::try_from(payload).unwrap_or(u32::MAX), segment);
        }
    }
    progress(reader.offset());
    if first_ns > last_ns {
        (first_ns, last_ns) = (0, 0);
    }
    sizes.finish();

    // End of capture: open silences and unanswered requests.
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
    for c in &mut conns {
        c.max_silence_ms = c.max_silence_ns as f64 / 1e6;
        if let Some(start) = c.max_silence_start {
            c.max_silence_at = crate::clock::rfc3339(start);
        }
        for (code, &count) in c.opcode_counts.iter().enumerate() {
            if count > 0 {
                c.opcodes
                    .insert(Opcode::from(code as u8).to_string(), count);
            }
        }
        c.score = c.compute_score();
    }

    // ARP inside silences.
    let mut arp = ArpStats {
        packets: frames.arp,
        ..ArpStats::default()
    };
    for &t in &arp_times {
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

    // Worst first; events point at the sorted positions.
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

    Ok(Report {
        schema: "tripcap.analyze.connections",
        version: SCHEMA_VERSION,
        frames,
        pfc_pause_frames,
        first_ns,
        last_ns,
        reference: None,
        capture: None,
        timeline,
        sizes,
        pauses,
        arp,
        findings: Vec::new(),
        connections,
        events,
        events_dropped,
    })
}

impl Report {
    /// Writes the report as pretty JSON.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        writeln!(out)
    }
}
