//! Realistic RoCE v2 traffic for the ring codec's tests and `scripts/bench-history.sh`
//! (`tripcap generate --realistic`): RC queue pairs doing WRITE First/Middle/Last at
//! 4096 MTU with ACKs and, when mixed, READs, CNPs and NAKs with go-back-N
//! retransmission; random (incompressible) payload bytes; IPv4, IPv6 or RoCE v1, with
//! or without a VLAN tag. Seeded: the same seed gives the same frames.

use std::collections::VecDeque;

/// A seeded xorshift: failures repeat.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A value below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// True `percent` times in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// Append `n` random bytes.
    pub fn fill(&mut self, out: &mut Vec<u8>, n: usize) {
        for _ in 0..n / 8 {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        for _ in 0..n % 8 {
            out.push(self.next_u64() as u8);
        }
    }
}

/// How the generated frames are carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encap {
    /// RoCE v2 over IPv4.
    V4,
    /// RoCE v2 over IPv6.
    V6,
    /// RoCE v1: ethertype 0x8915 + GRH.
    V1,
}

/// What the generated traffic looks like.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub qps: u32,
    pub encap: Encap,
    pub vlan: Option<u16>,
    /// IPv4 ID incremented per packet (else 0, as RoCE NICs with DF send it).
    pub ip_id_counts: bool,
    /// QPs interleave at random (else round robin).
    pub random_order: bool,
    /// Timestamps jitter by up to this many ns around a regular step.
    pub jitter_ns: u64,
    /// ns between packets.
    pub step_ns: u64,
    /// Some READs, CNPs, NAKs with go-back-N, CE marks (else WRITEs and ACKs only).
    pub mixed: bool,
    /// First PSN, to cross the 2^24 wrap early.
    pub first_psn: u32,
}

impl Shape {
    /// The realistic traffic: `qps` queue pairs in random order,
    /// 500 ns apart with 100 ns of jitter, WRITEs with ACKs and some READs,
    /// CNPs and NAKs, starting just before the PSN wrap.
    pub fn realistic(qps: u32) -> Shape {
        Shape {
            qps,
            encap: Encap::V4,
            vlan: None,
            ip_id_counts: false,
            random_order: true,
            jitter_ns: 100,
            step_ns: 500,
            mixed: true,
            first_psn: 0xff_ff00,
        }
    }
}

#[derive(Debug, Clone)]
struct Qp {
    index: u32,
    req_qp: u32,
    resp_qp: u32,
    psn: u32,
    msn: u32,
    va: u64,
    ip_id: [u16; 2],
    sport: u16,
    pending: VecDeque<Pkt>,
}

/// One packet to build: direction, BTH fields, extended headers, payload length.
#[derive(Debug, Clone)]
struct Pkt {
    to_responder: bool,
    opcode: u8,
    psn: u32,
    ackreq: bool,
    becn: bool,
    ce: bool,
    ext: Vec<u8>,
    payload: usize,
}

/// RoCE traffic: WRITE First/Middle/Last at 4096 MTU with ACKs, and (when mixed) READs,
/// CNPs and NAKs with go-back-N retransmission.
pub struct Traffic {
    shape: Shape,
    qps: Vec<Qp>,
    rng: Rng,
    next_qp: usize,
    n: u64,
}

/// Payload bytes of a full segment.
pub const MTU: usize = 4096;
/// Capture time of packet 0 (ns since the epoch).
pub const T0: i64 = 1_800_000_000_000_000_000;

impl Traffic {
    /// Traffic of `shape`, its random choices seeded by `seed`.
    pub fn new(shape: Shape, seed: u64) -> Traffic {
        let qps = (0..shape.qps)
            .map(|i| Qp {
                index: i,
                req_qp: 0x100 + i,
                resp_qp: 0x4000 + 7 * i,
                psn: (shape.first_psn + 13 * i) & 0xff_ffff,
                msn: 0,
                va: 0x7f00_0000_0000 + (u64::from(i) << 32),
                ip_id: [0; 2],
                sport: 49152 + i as u16,
                pending: VecDeque::new(),
            })
            .collect();
        Traffic {
            shape,
            qps,
            rng: Rng(seed | 1),
            next_qp: 0,
            n: 0,
        }
    }

    /// The next frame (into `out`, cleared first) and its timestamp.
    pub fn next(&mut self, out: &mut Vec<u8>) -> i64 {
        let i = if self.shape.random_order {
            self.rng.below(self.qps.len() as u64) as usize
        } else {
            self.next_qp = (self.next_qp + 1) % self.qps.len();
            self.next_qp
        };
        if self.qps[i].pending.is_empty() {
            self.message(i);
        }
        let pkt = self.qps[i].pending.pop_front().unwrap_or_else(|| Pkt {
            to_responder: true,
            opcode: 0x07,
            psn: 0,
            ackreq: false,
            becn: false,
            ce: false,
            ext: Vec::new(),
            payload: 0,
        });
        self.build(i, &pkt, out);
        let jitter = if self.shape.jitter_ns > 0 {
            self.rng.below(2 * self.shape.jitter_ns) as i64 - self.shape.jitter_ns as i64
        } else {
            0
        };
        self.n += 1;
        T0 + (self.n * self.shape.step_ns) as i64 + jitter
    }

    /// Queues the packets of one message of QP `i`.
    fn message(&mut self, i: usize) {
        let mixed = self.shape.mixed;
        let roll = self.rng.below(100);
        let segments = 1 + self.rng.below(8) as usize;
        let last_len = 1 + self.rng.below(MTU as u64) as usize;
        let ce = mixed && self.rng.chance(3);
        let qp = &mut self.qps[i];
        let reth = |va: u64, len: u32| {
            let mut r = va.to_be_bytes().to_vec();
            r.extend_from_slice(&0x1234_5678u32.to_be_bytes());
            r.extend_from_slice(&len.to_be_bytes());
            r
        };
        let aeth = |syndrome: u8, msn: u32| {
            let mut a = msn.to_be_bytes();
            a[0] = syndrome;
            a.to_vec()
        };
        let pkt = |to_responder: bool, opcode: u8, psn: u32, ext: Vec<u8>, payload: usize| Pkt {
            to_responder,
            opcode,
            psn,
            ackreq: false,
            becn: false,
            ce: false,
            ext,
            payload,
        };
        let len = (segments - 1) * MTU + last_len;
        if mixed && roll < 8 {
            // READ: request, then First/Middle/Last (or Only) responses.
            let first = qp.psn;
            qp.pending
                .push_back(pkt(true, 0x0c, first, reth(qp.va, len as u32), 0));
            qp.va += len as u64;
            for s in 0..segments {
                let psn = (first + s as u32) & 0xff_ffff;
                let payload = if s + 1 == segments { last_len } else { MTU };
                let (op, ext) = match (segments, s) {
                    (1, _) => (0x10, aeth(0x1f, qp.msn + 1)),
                    (_, 0) => (0x0d, aeth(0x1f, qp.msn + 1)),
                    (n, s) if s + 1 == n => (0x0f, aeth(0x1f, qp.msn + 1)),
                    _ => (0x0e, Vec::new()),
                };
                qp.pending.push_back(pkt(false, op, psn, ext, payload));
            }
            qp.msn = (qp.msn + 1) & 0xff_ffff;
            qp.psn = (first + segments as u32) & 0xff_ffff;
            return;
        }
        if mixed && roll < 12 {
            // CNP from the responder's side to the requester's QP.
            let mut p = pkt(false, 0x81, 0, vec![0; 16], 0);
            p.becn = true;
            qp.pending.push_back(p);
            return;
        }
        // WRITE First/Middle/Last (or Only) and its ACK; sometimes a NAK and go-back-N.
        let lost = (mixed && roll < 16 && segments > 1).then_some(segments / 2);
        let first = qp.psn;
        let emit = |qp: &mut Qp, from: usize| {
            for s in from..segments {
                let psn = (first + s as u32) & 0xff_ffff;
                let payload = if s + 1 == segments { last_len } else { MTU };
                let (op, ext) = match (segments, s) {
                    (1, _) => (0x0a, reth(qp.va, len as u32)),
                    (_, 0) => (0x06, reth(qp.va, len as u32)),
                    (n, s) if s + 1 == n => (0x08, Vec::new()),
                    _ => (0x07, Vec::new()),
                };
                let mut p = pkt(true, op, psn, ext, payload);
                p.ackreq = s + 1 == segments;
                p.ce = ce;
                qp.pending.push_back(p);
            }
        };
        emit(qp, 0);
        if let Some(lost) = lost {
            // The packet at `lost` was dropped after the capture point; the responder
            // NAKs its PSN once the next one arrives, and the requester goes back.
            let expected = (first + lost as u32) & 0xff_ffff;
            let at = qp.pending.len() - (segments - lost) + 2;
            let nak = pkt(false, 0x11, expected, aeth(0x60, qp.msn), 0);
            let at = at.min(qp.pending.len());
            qp.pending.insert(at, nak);
            emit(qp, lost);
        }
        qp.msn = (qp.msn + 1) & 0xff_ffff;
        let last = (first + segments as u32 - 1) & 0xff_ffff;
        qp.pending
            .push_back(pkt(false, 0x11, last, aeth(0x1f, qp.msn), 0));
        qp.va += len as u64;
        qp.psn = (first + segments as u32) & 0xff_ffff;
    }

    fn build(&mut self, i: usize, p: &Pkt, out: &mut Vec<u8>) {
        let shape = self.shape;
        let qp = &mut self.qps[i];
        let dir = usize::from(!p.to_responder);
        let host = |side: usize| -> [u8; 4] {
            [
                10,
                0,
                (qp.index / 200) as u8,
                (2 * (qp.index % 100) + side as u32) as u8,
            ]
        };
        let (src, dst) = if p.to_responder {
            (host(0), host(1))
        } else {
            (host(1), host(0))
        };
        let pad = (4 - p.payload % 4) % 4;
        let ib_len = 12 + p.ext.len() + p.payload + pad + 4;
        out.clear();
        out.extend_from_slice(&[0x02, 0, 0, 0, dst[2], dst[3], 0x02, 0, 0, 0, src[2], src[3]]);
        if let Some(vid) = shape.vlan {
            out.extend_from_slice(&0x8100u16.to_be_bytes());
            out.extend_from_slice(&((3u16 << 13) | vid).to_be_bytes());
        }
        let tos = 0x68 | if p.ce { 3 } else { 2 };
        let v4mapped = |a: [u8; 4]| {
            let mut g = [0u8; 16];
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&a);
            g
        };
        match shape.encap {
            Encap::V4 => {
                out.extend_from_slice(&0x0800u16.to_be_bytes());
                let mut ip = [0u8; 20];
                ip[0] = 0x45;
                ip[1] = tos;
                ip[2..4].copy_from_slice(&((20 + 8 + ib_len) as u16).to_be_bytes());
                if shape.ip_id_counts {
                    qp.ip_id[dir] = qp.ip_id[dir].wrapping_add(1);
                    ip[4..6].copy_from_slice(&qp.ip_id[dir].to_be_bytes());
                }
                ip[6] = 0x40;
                ip[8] = 64;
                ip[9] = 17;
                ip[12..16].copy_from_slice(&src);
                ip[16..20].copy_from_slice(&dst);
                let sum = crate::wire::ipv4_checksum(&ip);
                ip[10..12].copy_from_slice(&sum.to_be_bytes());
                out.extend_from_slice(&ip);
            }
            Encap::V6 | Encap::V1 => {
                let v1 = shape.encap == Encap::V1;
                out.extend_from_slice(&(if v1 { 0x8915u16 } else { 0x86dd }).to_be_bytes());
                let mut ip = [0u8; 40];
                ip[0] = 0x60 | (tos >> 4);
                ip[1] = tos << 4;
                let paylen = if v1 { ib_len } else { 8 + ib_len };
                ip[4..6].copy_from_slice(&(paylen as u16).to_be_bytes());
                ip[6] = if v1 { 0x1b } else { 17 };
                ip[7] = 64;
                ip[8..24].copy_from_slice(&v4mapped(src));
                ip[24..40].copy_from_slice(&v4mapped(dst));
                out.extend_from_slice(&ip);
            }
        }
        if shape.encap != Encap::V1 {
            out.extend_from_slice(&qp.sport.to_be_bytes());
            out.extend_from_slice(&4791u16.to_be_bytes());
            out.extend_from_slice(&((8 + ib_len) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
        }
        let dest_qp = if p.to_responder {
            qp.resp_qp
        } else {
            qp.req_qp
        };
        let mut bth = [0u8; 12];
        bth[0] = p.opcode;
        bth[1] = 0x40 | ((pad as u8) << 4);
        bth[2] = 0xff;
        bth[3] = 0xff;
        bth[4] = if p.becn { 0x40 } else { 0 };
        bth[5..8].copy_from_slice(&dest_qp.to_be_bytes()[1..]);
        bth[8] = if p.ackreq { 0x80 } else { 0 };
        bth[9..12].copy_from_slice(&p.psn.to_be_bytes()[1..]);
        out.extend_from_slice(&bth);
        out.extend_from_slice(&p.ext);
        self.rng.fill(out, p.payload);
        out.extend_from_slice(&[0; 3][..pad]);
        self.rng.fill(out, 4); // ICRC
    }
}
