//! A RoCE v2 RC traffic generator, for `tripcap demo`, the tests and the
//! benchmarks: no RDMA NIC needed.
//!
//! Each *flow* is one RC queue pair doing RDMA WRITEs: WRITE First (with RETH),
//! Middle…, Last (AckReq set), answered by an ACK (AETH) from the responder.
//! PSNs advance per QP and wrap at 2^24. The generator only builds UDP
//! payloads (BTH onwards, with a dummy ICRC); [`frame`] wraps one into
//! Ethernet/IPv4/UDP for files, and the demo sends them as real datagrams to
//! port 4791 on loopback, where libpcap captures them.

pub mod realistic;

use std::net::Ipv4Addr;

use crate::wire::{aeth, bth, reth};

/// RoCE v2's UDP port.
pub const ROCE_PORT: u16 = 4791;

/// One generated packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    /// Index of the flow.
    pub flow: usize,
    /// Whether the packet goes responder → requester (an ACK).
    pub reply: bool,
    /// Destination QP in the BTH.
    pub dest_qp: u32,
    /// PSN in the BTH.
    pub psn: u32,
    /// Opcode byte.
    pub opcode: u8,
}

/// One RC queue pair.
#[derive(Debug, Clone)]
pub struct Flow {
    /// The responder's QP (dest QP of requests).
    pub responder_qp: u32,
    /// The requester's QP (dest QP of ACKs).
    pub requester_qp: u32,
    /// Next PSN.
    pub psn: u32,
    /// Packets per message (≥ 1).
    pub packets_per_message: u32,
    /// Position in the current message.
    pos: u32,
    /// An ACK is due for this PSN.
    ack_due: Option<u32>,
    msn: u32,
}

impl Flow {
    /// A flow starting at `psn`.
    pub fn new(responder_qp: u32, requester_qp: u32, psn: u32, packets_per_message: u32) -> Flow {
        Flow {
            responder_qp,
            requester_qp,
            psn: psn & 0xff_ffff,
            packets_per_message: packets_per_message.max(1),
            pos: 0,
            ack_due: None,
            msn: 0,
        }
    }
}

/// Builds the packets of several flows, round robin.
#[derive(Debug, Clone)]
pub struct Generator {
    /// The flows.
    pub flows: Vec<Flow>,
    /// Payload bytes per data packet (after the headers).
    pub payload: usize,
    next: usize,
}

impl Generator {
    /// A generator over `flows`, with `payload` bytes of data per packet.
    pub fn new(flows: Vec<Flow>, payload: usize) -> Generator {
        Generator {
            flows,
            payload,
            next: 0,
        }
    }

    /// Write the next packet of flow `i` (a data packet, or the ACK it is owed)
    /// into `buf` (cleared first).
    pub fn next_of(&mut self, i: usize, buf: &mut Vec<u8>) -> Option<Generated> {
        let payload = self.payload;
        let flow = self.flows.get_mut(i)?;
        buf.clear();
        if let Some(psn) = flow.ack_due.take() {
            flow.msn = (flow.msn + 1) & 0xff_ffff;
            let opcode = 0x11; // RC Acknowledge
            push_bth(buf, opcode, flow.requester_qp, psn, false);
            let mut a = [0u8; aeth::HEADER_LEN];
            let _ = aeth::Repr {
                syndrome: aeth::Syndrome::Ack { credits: 31 },
                msn: flow.msn,
            }
            .emit(&mut a);
            buf.extend_from_slice(&a);
            buf.extend_from_slice(&[0; 4]); // ICRC
            return Some(Generated {
                flow: i,
                reply: true,
                dest_qp: flow.requester_qp,
                psn,
                opcode,
            });
        }
        let n = flow.packets_per_message;
        let (opcode, with_reth, last) = match (n, flow.pos) {
            (1, _) => (0x0a, true, true),                // WRITE Only
            (_, 0) => (0x06, true, false),               // WRITE First
            (n, p) if p + 1 == n => (0x08, false, true), // WRITE Last
            _ => (0x07, false, false),                   // WRITE Middle
        };
        let psn = flow.psn;
        push_bth(buf, opcode, flow.responder_qp, psn, last);
        if with_reth {
            let mut r = [0u8; reth::HEADER_LEN];
            let _ = reth::Repr {
                va: 0x7f00_0000_0000 + u64::from(psn) * 4096,
                r_key: 0x1234,
                dma_len: (n as usize * payload) as u32,
            }
            .emit(&mut r);
            buf.extend_from_slice(&r);
        }
        buf.resize(buf.len() + payload, 0x5a);
        buf.extend_from_slice(&[0; 4]); // ICRC (not computed: tshark does not check it)
        flow.psn = (flow.psn + 1) & 0xff_ffff;
        flow.pos = (flow.pos + 1) % n;
        if last {
            flow.ack_due = Some(psn);
        }
        Some(Generated {
            flow: i,
            reply: false,
            dest_qp: flow.responder_qp,
            psn,
            opcode,
        })
    }

    /// The next packet of the next flow, round robin.
    pub fn next_packet(&mut self, buf: &mut Vec<u8>) -> Option<Generated> {
        if self.flows.is_empty() {
            return None;
        }
        let i = self.next % self.flows.len();
        self.next = self.next.wrapping_add(1);
        self.next_of(i, buf)
    }

    /// Skip `n` PSNs of flow `i` (a loss before the capture point).
    pub fn skip(&mut self, i: usize, n: u32) {
        if let Some(f) = self.flows.get_mut(i) {
            f.psn = (f.psn + n) & 0xff_ffff;
        }
    }
}

fn push_bth(buf: &mut Vec<u8>, opcode: u8, dest_qp: u32, psn: u32, ackreq: bool) {
    let start = buf.len();
    buf.resize(start + bth::HEADER_LEN, 0);
    let repr = bth::Repr {
        opcode: bth::Opcode::from(opcode),
        se: false,
        migreq: true,
        pad: 0,
        tver: 0,
        pkey: 0xffff,
        fecn: false,
        becn: false,
        dest_qp,
        ackreq,
        psn,
    };
    if let Ok(mut p) = bth::Packet::new_checked(&mut buf[start..]) {
        repr.emit(&mut p);
    }
}

/// Wrap a UDP payload into an Ethernet/IPv4/UDP frame (checksums: IPv4 computed,
/// UDP zero, as RoCE v2 NICs send it).
pub fn frame(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, payload: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = 0x02; // DSCP 0, ECT(0)
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let sum = crate::wire::ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(&src_port.to_be_bytes());
    out.extend_from_slice(&ROCE_PORT.to_be_bytes());
    out.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
}

/// Sets the DSCP of a [`frame`] (Ethernet + IPv4; ECN bits kept) and redoes
/// its header checksum. Other frames are left as they are.
pub fn set_dscp(frame: &mut [u8], dscp: u8) {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return;
    }
    frame[15] = (dscp << 2) | (frame[15] & 3);
    let sum = crate::wire::ipv4_checksum(&frame[14..34]);
    frame[24..26].copy_from_slice(&sum.to_be_bytes());
}

/// A classic pcap writer (nanosecond magic, Ethernet link type).
pub struct PcapWriter<W: std::io::Write> {
    out: W,
    snaplen: u32,
}

impl<W: std::io::Write> PcapWriter<W> {
    /// Write the file header.
    pub fn new(mut out: W, snaplen: u32) -> std::io::Result<PcapWriter<W>> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Write one frame captured at `ts` (ns), cut to the snaplen.
    pub fn write(&mut self, ts: i64, data: &[u8]) -> std::io::Result<()> {
        let cap = data.len().min(self.snaplen as usize);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((ts / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((ts % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(cap as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(data.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&data[..cap])
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Write a classic pcap of `frames` (ts ns, bytes).
pub fn write_pcap<W: std::io::Write>(
    out: &mut W,
    snaplen: u32,
    frames: impl IntoIterator<Item = (i64, Vec<u8>)>,
) -> std::io::Result<()> {
    let mut w = PcapWriter::new(out, snaplen)?;
    for (ts, data) in frames {
        w.write(ts, &data)?;
    }
    Ok(())
}

/// Write `packets` frames of `flows` RC QPs (WRITE First/Middle/Last + ACK, 4 KiB
/// payloads: 4096 + headers on the wire) at `rate` packets per second from
/// `start_ns`, cut to `snaplen`: a synthetic capture for tests and benchmarks.
pub fn write_synthetic<W: std::io::Write>(
    out: W,
    packets: u64,
    snaplen: u32,
    rate: u64,
    flows: u32,
    start_ns: i64,
) -> std::io::Result<W> {
    let flows = flows.max(1);
    let list = (0..flows)
        .map(|i| Flow::new(0x100 + i, 0x200 + i, i * 1000, 4))
        .collect();
    let mut g = Generator::new(list, 4096);
    let mut w = PcapWriter::new(out, snaplen)?;
    let mut payload = Vec::with_capacity(4200);
    let mut frame_buf = Vec::with_capacity(4300);
    let step = 1_000_000_000 / rate.max(1) as i64;
    let a = Ipv4Addr::new(192, 168, 10, 1);
    let b = Ipv4Addr::new(192, 168, 10, 2);
    for n in 0..packets {
        let Some(p) = g.next_packet(&mut payload) else {
            break;
        };
        let (src, dst) = if p.reply { (b, a) } else { (a, b) };
        frame(src, dst, 49152 + (p.flow as u16), &payload, &mut frame_buf);
        w.write(start_ns + step * n as i64, &frame_buf)?;
    }
    Ok(w.into_inner())
}

/// Like [`write_synthetic`], with [`realistic`] traffic
/// ([`realistic::Shape::realistic`] with `flows` queue pairs): 4096-MTU
/// WRITEs with ACKs, some READs, CNPs and NAKs, random payload bytes, times
/// `1/rate` apart with 100 ns of jitter.
pub fn write_realistic<W: std::io::Write>(
    out: W,
    packets: u64,
    snaplen: u32,
    rate: u64,
    flows: u32,
    start_ns: i64,
) -> std::io::Result<W> {
    let shape = realistic::Shape {
        step_ns: 1_000_000_000 / rate.max(1),
        ..realistic::Shape::realistic(flows.max(1))
    };
    let mut t = realistic::Traffic::new(shape, 0x5eed ^ u64::from(flows));
    let mut w = PcapWriter::new(out, snaplen)?;
    let mut frame_buf = Vec::with_capacity(4300);
    for _ in 0..packets {
        let ts = t.next(&mut frame_buf) - realistic::T0 + start_ns;
        w.write(ts, &frame_buf)?;
    }
    Ok(w.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_have_first_middle_last_then_an_ack() {
        let mut g = Generator::new(vec![Flow::new(0x11, 0x22, 0xff_fffe, 3)], 64);
        let mut buf = Vec::new();
        let seq: Vec<(u8, u32, bool)> = (0..5)
            .map(|_| {
                let p = g.next_packet(&mut buf).expect("packet");
                (p.opcode, p.psn, p.reply)
            })
            .collect();
        assert_eq!(
            seq,
            vec![
                (0x06, 0xff_fffe, false),
                (0x07, 0xff_ffff, false),
                (0x08, 0, false),
                (0x11, 0, true),
                (0x06, 1, false)
            ]
        );
        let p = bth::Packet::new_checked(&buf[..]).expect("bth");
        assert_eq!(p.psn(), 1);
        assert_eq!(p.dest_qp(), 0x11);
    }
}
