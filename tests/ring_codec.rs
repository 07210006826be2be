//! The ring's block codec (`ring::codec`) and the header-only snaplen (`wire::headers_len`)
//! on realistic generated RoCE traffic and on every sample capture: every block must
//! decode to the same bytes; `headers_len` must end where tshark's InfiniBand headers end.
//!
//! `compression_figures` (ignored; run it in release with `--ignored --nocapture`) prints
//! bytes per packet, ratios and ns per packet for the issue's traffic.

mod common;

use std::collections::VecDeque;
use std::path::Path;
use std::time::Instant;

use tripcap::capture_file::pcapng::{epb_len, put_epb};
use tripcap::capture_file::reader::Reader;
use tripcap::ring::codec::{Decoder, Encoder};
use tripcap::wire::{headers_len, linktype};

/// A seeded xorshift: failures repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn fill(&mut self, out: &mut Vec<u8>, n: usize) {
        for _ in 0..n / 8 {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        for _ in 0..n % 8 {
            out.push(self.next() as u8);
        }
    }
}

/// How the generated frames are carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encap {
    V4,
    V6,
    /// RoCE v1: ethertype 0x8915 + GRH.
    V1,
}

/// What the generated traffic looks like.
#[derive(Debug, Clone, Copy)]
struct Shape {
    qps: u32,
    encap: Encap,
    vlan: Option<u16>,
    /// IPv4 ID incremented per packet (else 0, as RoCE NICs with DF send it).
    ip_id_counts: bool,
    /// QPs interleave at random (else round robin).
    random_order: bool,
    /// Timestamps jitter by up to this many ns around a regular step.
    jitter_ns: u64,
    /// ns between packets.
    step_ns: u64,
    /// Some READs, CNPs, NAKs with go-back-N, CE marks (else WRITEs and ACKs only).
    mixed: bool,
    /// First PSN, to cross the 2^24 wrap early.
    first_psn: u32,
}

impl Shape {
    fn realistic(qps: u32) -> Shape {
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
struct Traffic {
    shape: Shape,
    qps: Vec<Qp>,
    rng: Rng,
    next_qp: usize,
    n: u64,
}

const MTU: usize = 4096;
const T0: i64 = 1_800_000_000_000_000_000;

impl Traffic {
    fn new(shape: Shape, seed: u64) -> Traffic {
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

    /// The next frame and its timestamp.
    fn next(&mut self, out: &mut Vec<u8>) -> i64 {
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
                let sum = tripcap::wire::ipv4_checksum(&ip);
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

/// How much of each frame a block keeps.
#[derive(Debug, Clone, Copy)]
enum Snap {
    Full,
    Bytes(usize),
    Headers,
}

impl Snap {
    fn cut(self, lt: u32, frame: &[u8]) -> usize {
        match self {
            Snap::Full => frame.len(),
            Snap::Bytes(n) => frame.len().min(n),
            Snap::Headers => headers_len(lt, frame),
        }
    }
}

/// Packs records into blocks of at most `block_size` bytes, as the ring does.
struct Packer {
    block_size: usize,
    blocks: Vec<Vec<u8>>,
    current: Vec<u8>,
    packets: usize,
}

impl Packer {
    fn new(block_size: usize) -> Packer {
        Packer {
            block_size,
            blocks: Vec::new(),
            current: Vec::new(),
            packets: 0,
        }
    }
    fn push(&mut self, iface: u32, ts: i64, orig: u32, data: &[u8]) {
        let n = epb_len(data.len());
        if !self.current.is_empty() && self.current.len() + n > self.block_size {
            self.blocks.push(std::mem::take(&mut self.current));
        }
        let at = self.current.len();
        self.current.resize(at + n, 0);
        put_epb(&mut self.current[at..], iface, ts, orig, data);
        self.packets += 1;
    }
    fn finish(mut self) -> Vec<Vec<u8>> {
        if !self.current.is_empty() {
            self.blocks.push(self.current);
        }
        self.blocks
    }
}

/// Encodes and decodes every block with one encoder/decoder pair (so state left over
/// from a previous block would show); returns the compressed bytes.
fn round_trip(what: &str, lt: u32, blocks: &[Vec<u8>]) -> usize {
    let mut enc = Encoder::with_linktype(lt);
    let mut dec = Decoder::new();
    let (mut z, mut back) = (Vec::new(), Vec::new());
    let mut total = 0;
    for (i, b) in blocks.iter().enumerate() {
        z.clear();
        enc.encode(b, &mut z)
            .unwrap_or_else(|e| panic!("{what}: block {i} does not encode: {e}"));
        back.clear();
        dec.decode(&z, &mut back)
            .unwrap_or_else(|e| panic!("{what}: block {i} does not decode: {e}"));
        if back != *b {
            let at = back.iter().zip(b).position(|(x, y)| x != y);
            panic!(
                "{what}: block {i} differs at {at:?} (lengths {} and {})",
                back.len(),
                b.len()
            );
        }
        total += z.len();
    }
    total
}

fn generated_blocks(shape: Shape, packets: usize, snap: Snap, block_size: usize) -> Vec<Vec<u8>> {
    let mut t = Traffic::new(shape, 0x5eed ^ u64::from(shape.qps));
    let mut p = Packer::new(block_size);
    let mut f = Vec::new();
    for _ in 0..packets {
        let ts = t.next(&mut f);
        let cap = snap.cut(linktype::ETHERNET, &f);
        p.push(0, ts, f.len() as u32, &f[..cap]);
    }
    p.finish()
}

#[test]
fn generated_roce_round_trips_at_every_snaplen() {
    let snaps = [Snap::Headers, Snap::Bytes(64), Snap::Bytes(128), Snap::Full];
    let mut shapes = vec![Shape::realistic(8), Shape::realistic(64)];
    shapes.push(Shape {
        random_order: false,
        jitter_ns: 0,
        mixed: false,
        ..Shape::realistic(8)
    });
    shapes.push(Shape {
        vlan: Some(100),
        ip_id_counts: true,
        ..Shape::realistic(8)
    });
    shapes.push(Shape {
        encap: Encap::V6,
        vlan: Some(7),
        ..Shape::realistic(8)
    });
    shapes.push(Shape {
        encap: Encap::V1,
        ..Shape::realistic(8)
    });
    for shape in shapes {
        for snap in snaps {
            let packets = if matches!(snap, Snap::Full) {
                600
            } else {
                3000
            };
            let blocks = generated_blocks(shape, packets, snap, 64 * 1024);
            let raw: usize = blocks.iter().map(Vec::len).sum();
            let z = round_trip(&format!("{shape:?} {snap:?}"), linktype::ETHERNET, &blocks);
            assert!(z < raw, "{shape:?} {snap:?}: {z} bytes from {raw}");
            if matches!(snap, Snap::Headers) {
                // Small blocks (64 KiB) pay for many flow templates; see the figures.
                assert!(z * 5 < raw, "{shape:?} headers: {z} bytes from {raw}");
            }
        }
    }
}

#[test]
fn psn_wraps_at_2_24() {
    // Every QP starts just below the wrap; each crosses it within the first messages.
    let shape = Shape {
        first_psn: 0xff_fffe,
        mixed: true,
        ..Shape::realistic(4)
    };
    let blocks = generated_blocks(shape, 2000, Snap::Headers, 256 * 1024);
    round_trip("PSN wrap", linktype::ETHERNET, &blocks);
}

/// Random frames, ARP and PFC, truncated RoCE, odd lengths, mixed with RoCE, in blocks
/// of random sizes.
#[test]
fn random_frames_round_trip() {
    let mut rng = Rng(0xdead_beef_1234_5678);
    let mut t = Traffic::new(Shape::realistic(8), 7);
    let mut f = Vec::new();
    for round in 0..40 {
        let mut p = Packer::new(512 + rng.below(64 * 1024) as usize);
        for _ in 0..300 {
            let ts = T0 + rng.below(1 << 40) as i64;
            match rng.below(6) {
                0 => {
                    // Random bytes of random length.
                    f.clear();
                    let n = rng.below(200) as usize;
                    rng.fill(&mut f, n);
                }
                1 => {
                    // ARP or PFC.
                    f.clear();
                    f.extend_from_slice(&[0xff; 6]);
                    f.extend_from_slice(&[2, 0, 0, 0, 0, 1]);
                    let et: u16 = if rng.chance(50) { 0x0806 } else { 0x8808 };
                    f.extend_from_slice(&et.to_be_bytes());
                    f.extend_from_slice(&[0, 1, 0, 0x08, 0, 0xff, 0xff]);
                    f.resize(60, 0);
                }
                2 => {
                    // RoCE cut anywhere, with random bytes flipped in its headers.
                    t.next(&mut f);
                    let cut = rng.below(f.len() as u64 + 1) as usize;
                    f.truncate(cut.min(120));
                    if !f.is_empty() && rng.chance(30) {
                        let i = rng.below(f.len() as u64) as usize;
                        f[i] ^= 1 << rng.below(8);
                    }
                }
                _ => {
                    t.next(&mut f);
                    let cut = Snap::Bytes(54 + rng.below(120) as usize).cut(1, &f);
                    f.truncate(cut);
                }
            }
            // Original lengths that are not the captured length, or even smaller.
            let orig = match rng.below(10) {
                0 => rng.next() as u32,
                1 => f.len() as u32 / 2,
                _ => f.len() as u32 + rng.below(3) as u32 * 4000,
            };
            let iface = u32::from(rng.chance(5));
            p.push(iface, ts, orig, &f);
        }
        round_trip(
            &format!("random round {round}"),
            linktype::ETHERNET,
            &p.finish(),
        );
    }
}

/// Every sample capture, whole and cut to 64, 128 and the headers, in blocks of a few
/// sizes.
#[test]
fn sample_captures_round_trip() {
    let dir = common::data_dir().join("pcaps");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("pcaps")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "sample captures missing in {}",
        dir.display()
    );
    for path in files {
        let frames = read_capture(&path);
        let lt = frames.first().map(|f| f.0).unwrap_or(linktype::ETHERNET);
        for snap in [Snap::Full, Snap::Bytes(64), Snap::Bytes(128), Snap::Headers] {
            for block_size in [4096, 256 * 1024] {
                let mut p = Packer::new(block_size);
                for (lt, ts, orig, data) in &frames {
                    let cap = snap.cut(*lt, data);
                    p.push(0, *ts, *orig, &data[..cap]);
                }
                let blocks = p.finish();
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                round_trip(&format!("{name:?} {snap:?} {block_size}"), lt, &blocks);
            }
        }
    }
}

/// (link type, ts, original length, bytes) of every packet of a capture.
fn read_capture(path: &Path) -> Vec<(u32, i64, u32, Vec<u8>)> {
    let file = std::fs::File::open(path).expect("open capture");
    let mut r = Reader::new(std::io::BufReader::new(file)).expect("capture header");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().expect("packet") {
        out.push((p.link_type, p.ts_ns, p.orig_len, p.data.to_vec()));
    }
    out
}

/// `headers_len` ends where tshark's InfiniBand headers (LRH, GRH, BTH and the extended
/// headers) end, on every RoCE/IB frame of the sample captures. Frames tshark shows with
/// a MAD (QP0/QP1: `headers_len` keeps the MAD too) or as "unknown" (CNP: tshark shows 4
/// vendor bytes, `headers_len` keeps the 16 reserved bytes IBTA defines) are checked
/// against that rule instead.
#[test]
fn headers_len_ends_where_tshark_headers_end() {
    let dir = common::data_dir().join("pcaps");
    let header_fields = [
        "lrh",
        "grh",
        "bth",
        "rdeth",
        "deth",
        "xrceth",
        "reth",
        "atomiceth",
        "aeth",
        "atomicacketh",
        "immdt",
        "ieth",
    ];
    let mut checked = 0;
    for name in [
        "synthetic_roce_default.pcap",
        "synthetic_roce_rxvantage_vlan_nsec.pcap",
        "synthetic_rocev1.pcap",
        "montybeatnik-rdma-roce-lab_roce_capture_read-write-ecn.pcap",
        "montybeatnik-rdma-roce-lab_test.pcap",
        "oferby-proxy_roce.pcap",
        "public-hexdumps_roce_snippets.pcap",
        "wireshark-wiki_infiniband_erf.pcap",
    ] {
        let path = dir.join(name);
        let frames = read_capture(&path);
        let mut cmd = std::process::Command::new("tshark");
        cmd.arg("-r").arg(&path);
        if name.starts_with("oferby") {
            cmd.args(["-d", "udp.port==69,infiniband"]);
        }
        let out = cmd
            .args(["-T", "pdml"])
            .output()
            .expect("tshark runs (install it: apt-get install tshark)");
        assert!(out.status.success(), "tshark failed on {name}");
        let pdml = String::from_utf8_lossy(&out.stdout);
        let packets: Vec<&str> = pdml.split("<packet>").skip(1).collect();
        assert_eq!(packets.len(), frames.len(), "{name}: frames");
        for (i, (pkt, (lt, _, _, data))) in packets.iter().zip(&frames).enumerate() {
            // tshark's positions start after an ERF record header; ours do not.
            let shown: usize = pkt
                .lines()
                .find(|l| l.starts_with("  <proto name=\"frame\""))
                .and_then(|l| l.split(" size=\"").nth(1))
                .and_then(|v| v.split('"').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(data.len());
            let base = data.len().saturating_sub(shown);
            let mut end = None;
            let mut special = false;
            for line in pkt.lines() {
                let Some(rest) = line.strip_prefix("    <field name=\"infiniband.") else {
                    continue;
                };
                let field = rest.split('"').next().unwrap_or("");
                if header_fields.contains(&field) {
                    let attr = |a: &str| -> usize {
                        line.split(&format!(" {a}=\""))
                            .nth(1)
                            .and_then(|v| v.split('"').next())
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0)
                    };
                    let e = base + attr("pos") + attr("size");
                    end = Some(end.map_or(e, |x: usize| x.max(e)));
                } else if !matches!(field, "payload" | "invariant.crc" | "variant.crc") {
                    special = true;
                }
            }
            let got = headers_len(*lt, data);
            match end {
                Some(end) if !special => {
                    assert_eq!(got, end, "{name} frame {}", i + 1);
                    checked += 1;
                }
                Some(end) => assert!(got >= end, "{name} frame {}", i + 1),
                None => assert_eq!(got, data.len().min(128), "{name} frame {}", i + 1),
            }
        }
    }
    assert!(checked > 1000, "only {checked} frames compared");
}

/// Bytes per packet, ratio against the raw ring at the same snaplen, encode and decode
/// ns per packet. Run in release:
/// `cargo test --release --test ring_codec compression_figures -- --ignored --nocapture`.
#[test]
#[ignore = "prints figures; run in release"]
fn compression_figures() {
    const PACKETS: usize = 400_000;
    println!(
        "{:<44} {:>9} {:>9} {:>7} {:>9} {:>9}",
        "traffic, snaplen", "raw B/pkt", "zst B/pkt", "ratio", "enc ns", "dec ns"
    );
    let regular = |qps| Shape {
        random_order: false,
        jitter_ns: 0,
        mixed: false,
        ..Shape::realistic(qps)
    };
    let cases = [
        ("8 QPs realistic", Shape::realistic(8)),
        ("64 QPs realistic", Shape::realistic(64)),
        (
            "8 QPs realistic, IP ID counting",
            Shape {
                ip_id_counts: true,
                ..Shape::realistic(8)
            },
        ),
        ("8 QPs round robin, regular ts, WRITE+ACK", regular(8)),
        ("64 QPs round robin, regular ts, WRITE+ACK", regular(64)),
    ];
    for (name, shape) in cases {
        for (snap, label) in [(Snap::Headers, "headers"), (Snap::Bytes(128), "128")] {
            let blocks = generated_blocks(shape, PACKETS, snap, 256 * 1024);
            let raw: usize = blocks.iter().map(Vec::len).sum();
            let mut enc = Encoder::new();
            let mut dec = Decoder::new();
            // One output buffer, reused as a compressor thread would, then kept per block
            // for the decode pass (the copy is outside the timing).
            let mut zs: Vec<Vec<u8>> = Vec::with_capacity(blocks.len());
            let mut z = Vec::with_capacity(512 * 1024);
            let mut enc_time = std::time::Duration::ZERO;
            for b in &blocks {
                z.clear();
                let t = Instant::now();
                enc.encode(b, &mut z).expect("encode");
                enc_time += t.elapsed();
                zs.push(z.clone());
            }
            let enc_ns = enc_time.as_nanos() as f64 / PACKETS as f64;
            let mut back = Vec::with_capacity(512 * 1024);
            let t = Instant::now();
            for z in &zs {
                back.clear();
                dec.decode(z, &mut back).expect("decode");
            }
            let dec_ns = t.elapsed().as_nanos() as f64 / PACKETS as f64;
            for (b, z) in blocks.iter().zip(&zs) {
                back.clear();
                dec.decode(z, &mut back).expect("decode");
                assert!(back == *b);
            }
            let z: usize = zs.iter().map(Vec::len).sum();
            println!(
                "{:<44} {:>9.1} {:>9.2} {:>6.1}x {:>9.0} {:>9.0}",
                format!("{name}, {label}"),
                raw as f64 / PACKETS as f64,
                z as f64 / PACKETS as f64,
                raw as f64 / z as f64,
                enc_ns,
                dec_ns
            );
        }
    }
}
