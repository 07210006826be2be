//! Per-connection health of a capture: what `tripcap analyze FILE` prints by default (and as
//! JSON with `--json`).
//!
//! A *connection* here is one direction of a queue pair as seen on the wire: source address,
//! destination address and destination QP. Requester→responder traffic and the responder's
//! ACKs/READ responses are therefore two connections, which keeps every counter one-sided.
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
//! The silence of a connection is the longest time between two of its consecutive packets;
//! `max_silence_at` is when that silence began (its last packet before the pause).

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde::Serialize;

use crate::capture_file::reader::{self, Reader};
use crate::wire::aeth::{NakCode, Syndrome};
use crate::wire::bth::{Opcode, Operation, PSN_MODULUS};
use crate::wire::{self, Addr, Frame, FrameCounts};

/// Version of the JSON schema written by [`Report::write_json`].
pub const SCHEMA_VERSION: u32 = 1;

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
    /// Longest pause between two packets, in milliseconds.
    pub max_silence_ms: f64,
    /// Start of that pause, seconds since the epoch with 9 decimals (empty if < 2 packets).
    pub max_silence_at: String,
    #[serde(skip)]
    state: PsnState,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct PsnState {
    last_psn: Option<u32>,
    last_ts: Option<i64>,
    max_silence_ns: i64,
    max_silence_start: i64,
    after_read: bool,
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
    /// One entry per connection, ordered by (src, dst, dest_qp).
    pub connections: Vec<ConnStats>,
}

/// Reads every packet and computes the per-connection report.
pub fn analyze<R: Read>(reader: &mut Reader<R>) -> Result<Report, reader::Error> {
    let mut frames = FrameCounts::default();
    let mut pfc_pause_frames = 0;
    let mut conns: BTreeMap<(Addr, Addr, u32), ConnStats> = BTreeMap::new();
    while let Some(p) = reader.next_packet()? {
        let frame = wire::parse_frame(p.link_type, p.data);
        frames.add(&frame);
        let r = match frame {
            Frame::Roce(r) => r,
            Frame::MacControl(m) => {
                if m.paused_mask() != 0 {
                    pfc_pause_frames += 1;
                }
                continue;
            }
            _ => continue,
        };
        let ts = wire::frame_timestamp_ns(p.link_type, p.data).unwrap_or(p.ts_ns);
        let bth = r.transport.bth();
        let c = conns
            .entry((r.src, r.dst, bth.dest_qp()))
            .or_insert_with(|| ConnStats {
                src: r.src.to_string(),
                dst: r.dst.to_string(),
                dest_qp: format!("0x{:06x}", bth.dest_qp()),
                ..ConnStats::default()
            });
        c.packets += 1;
        c.bytes += u64::from(p.orig_len);
        if r.ecn == Some(3) || bth.fecn() {
            c.ecn_ce += 1;
        }
        let s = &mut c.state;
        if let Some(last) = s.last_ts {
            let quiet = ts - last;
            if quiet > s.max_silence_ns {
                s.max_silence_ns = quiet;
                s.max_silence_start = last;
            }
        }
        s.last_ts = Some(ts);
        match r.transport.opcode() {
            Opcode::Cnp => c.cnps += 1,
            Opcode::Op(_, op) if !op.is_response() => {
                let psn = bth.psn();
                if let Some(last) = s.last_psn {
                    let expected = (last + 1) % PSN_MODULUS;
                    let d = psn_distance(psn, expected);
                    if d > 0 && s.after_read {
                        // A READ request consumes one PSN per response packet; the count
                        // depends on the path MTU, which the capture does not tell.
                    } else if d > 0 {
                        c.psn_gaps += 1;
                        c.psn_missing += d as u64;
                    } else if d < 0 && psn == last {
                        c.duplicates += 1;
                    } else if d < 0 {
                        c.psn_regressions += 1;
                    }
                }
                s.last_psn = Some(psn);
                s.after_read = op == Operation::ReadRequest;
            }
            _ => {}
        }
        if let Some(aeth) = r.transport.aeth() {
            match aeth.syndrome() {
                Syndrome::Nak(NakCode::PsnSequenceError) => c.naks_seq += 1,
                Syndrome::Nak(_) => c.naks_other += 1,
                Syndrome::RnrNak { .. } => c.naks_rnr += 1,
                Syndrome::Ack { .. } | Syndrome::Reserved(_) => {}
            }
        }
    }
    let connections = conns
        .into_values()
        .map(|mut c| {
            c.max_silence_ms = c.state.max_silence_ns as f64 / 1e6;
            if c.packets > 1 {
                c.max_silence_at = super::format_epoch(c.state.max_silence_start).to_string();
            }
            c
        })
        .collect();
    Ok(Report {
        schema: "tripcap.analyze.connections",
        version: SCHEMA_VERSION,
        frames,
        pfc_pause_frames,
        connections,
    })
}

/// Signed distance `a - b` of two 24-bit PSNs, in `[-2^23, 2^23)`.
pub fn psn_distance(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & (PSN_MODULUS - 1);
    if d >= PSN_MODULUS / 2 {
        d as i32 - PSN_MODULUS as i32
    } else {
        d as i32
    }
}

impl Report {
    /// Writes the report as pretty JSON.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        writeln!(out)
    }

    /// Writes a readable summary: frame classes, then one line per connection with its
    /// problems first.
    pub fn write_summary(&self, out: &mut dyn Write) -> io::Result<()> {
        let f = &self.frames;
        writeln!(
            out,
            "{} frames: {} RoCE v2, {} RoCE v1, {} native IB, {} PFC, {} PAUSE, {} ARP, {} other, {} malformed",
            f.total(),
            f.roce_v2,
            f.roce_v1,
            f.native_ib,
            f.pfc,
            f.pause,
            f.arp,
            f.other,
            f.malformed
        )?;
        if f.truncated_ib_headers > 0 {
            writeln!(
                out,
                "{} RoCE packets have extended headers cut by the snaplen",
                f.truncated_ib_headers
            )?;
        }
        if self.pfc_pause_frames > 0 {
            writeln!(
                out,
                "{} PFC/PAUSE frames paused traffic",
                self.pfc_pause_frames
            )?;
        }
        writeln!(
            out,
            "{} connections (src > dst QP):",
            self.connections.len()
        )?;
        for c in &self.connections {
            let mut problems = Vec::new();
            let mut add = |n: u64, what: &str| {
                if n > 0 {
                    problems.push(format!("{n} {what}"));
                }
            };
            add(c.psn_gaps, "PSN gaps");
            add(c.psn_regressions, "go-back-N");
            add(c.duplicates, "duplicates");
            add(c.naks_seq, "NAK seq");
            add(c.naks_rnr, "RNR NAK");
            add(c.naks_other, "other NAK");
            add(c.cnps, "CNP");
            add(c.ecn_ce, "ECN-CE");
            let problems = if problems.is_empty() {
                "ok".to_owned()
            } else {
                problems.join(", ")
            };
            writeln!(
                out,
                "  {} > {} {}: {} packets, {} bytes, longest silence {:.3} ms at {}; {}",
                c.src,
                c.dst,
                c.dest_qp,
                c.packets,
                c.bytes,
                c.max_silence_ms,
                if c.max_silence_at.is_empty() {
                    "-"
                } else {
                    &c.max_silence_at
                },
                problems
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::psn_distance;

    #[test]
    fn psn_distance_wraps_at_24_bits() {
        assert_eq!(psn_distance(0, 0xff_ffff), 1);
        assert_eq!(psn_distance(0xff_ffff, 0), -1);
        assert_eq!(psn_distance(5, 3), 2);
        assert_eq!(psn_distance(3, 5), -2);
        assert_eq!(psn_distance(0x80_0000, 0), -0x80_0000);
    }
}
