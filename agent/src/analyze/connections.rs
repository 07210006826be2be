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
//! the picture are capped at [`MAX_EVENTS`]. It lives in [`analysis`]; this file holds the
//! report's types.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde::Serialize;

use super::baseline::comparison::Comparison;
use super::baseline::Summary;
use super::context::{CaptureContext, Reference};
use super::finding::Finding;
use super::throughput::{Fragments, Throughput, Volume};
use super::whole::{Pauses, RocePriorities, Sizes, Timeline};
use crate::capture_file::reader::{self, Reader};
use crate::wire::FrameCounts;

mod analysis;

use analysis::Analysis;

/// Version of the JSON schema written by [`Report::write_json`]. Version 2 added every
/// field after `connections[].max_silence_at` and sorts connections worst first; no
/// version-1 field changed meaning. Version 3: `max_silence_ms`/`max_silence_at` count a
/// silence open at the end of the capture, `max_silence_at` is RFC 3339 (was epoch
/// seconds), and `max_silence_open` says whether that silence is open. Version 4 adds
/// `throughput` ("why slow"), `capture.link_speed_mbps`/`capture.mtu` and the findings
/// `roce_fragment` and `mtu_mismatch`. Version 5 adds `baseline` (the capture against a
/// baseline, present only when there is one).
pub const SCHEMA_VERSION: u32 = 5;
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
    /// Payload, re-sent bytes and CNP times, for the throughput section.
    #[serde(skip)]
    pub(crate) volume: Volume,
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
    /// The priorities RoCE packets travelled on (for tying PFC pauses to them).
    #[serde(skip)]
    pub roce_priorities: RocePriorities,
    /// ARP.
    pub arp: ArpStats,
    /// "Why slow": goodput, sizes, pause time, re-sent bytes, CNP cuts and the verdict
    /// (computed with the context; see [`super::throughput`]).
    pub throughput: Throughput,
    /// IPv4 fragments carrying RoCE.
    #[serde(skip)]
    pub fragments: Fragments,
    /// `--link-speed`, Gbit/s.
    #[serde(skip)]
    pub link_speed_gbps: Option<f64>,
    /// Everything worth a look, in time order (untimed ones first).
    pub findings: Vec<Finding>,
    /// One entry per connection, worst first (by `score`, then packets).
    pub connections: Vec<ConnStats>,
    /// Events for the picture (not serialized).
    #[serde(skip)]
    pub events: Vec<Event>,
    /// Events not kept (over [`MAX_EVENTS`]).
    pub events_dropped: u64,
    /// The whole capture summarised per interface and class, when asked for
    /// ([`analyze_summarized`]); its span is first to last packet until
    /// [`Report::set_baseline`] sets the window's.
    #[serde(skip)]
    pub summaries: Option<Vec<Summary>>,
    /// The capture against a baseline (`--baseline`, or the agent's), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Comparison>,
}

/// Reads every packet and computes the report, without findings: [`Report::set_context`]
/// (in [`super::findings`]) attaches the sidecar's context, if any, and computes them.
/// `progress` is called now and then with the reader's byte offset.
pub fn analyze<R: Read>(
    reader: &mut Reader<R>,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, reader::Error> {
    run_analysis(reader, progress, Analysis::default())
}

/// [`analyze`], also summarising the whole capture per interface and class
/// into [`Report::summaries`] (for a baseline comparison).
pub fn analyze_summarized<R: Read>(
    reader: &mut Reader<R>,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, reader::Error> {
    let mut analysis = Analysis::default();
    analysis.summarize();
    run_analysis(reader, progress, analysis)
}

fn run_analysis<R: Read>(
    reader: &mut Reader<R>,
    progress: &mut dyn FnMut(u64),
    mut analysis: Analysis,
) -> Result<Report, reader::Error> {
    let mut n: u64 = 0;
    loop {
        n += 1;
        if n & 0xffff == 0 {
            progress(reader.offset());
        }
        let Some(p) = reader.next_packet()? else {
            break;
        };
        analysis.packet(&p);
    }
    progress(reader.offset());
    Ok(analysis.finish())
}

impl Report {
    /// Writes the report as pretty JSON.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        writeln!(out)
    }
}
