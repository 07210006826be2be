//! How much of a frame diagnosis reads: the length a header-only snaplen keeps.
//!
//! [`headers_len`] is the number of leading bytes of a frame that tripcap's analysis looks
//! at: for RoCE, the link header (Ethernet and its 802.1Q/802.1ad tags, Linux cooked
//! headers, the LRH of native InfiniBand, the ERF record header), the network header
//! (IPv4 with options, IPv6, or the GRH of RoCE v1 / native IB), UDP, the BTH and every
//! extended transport header the opcode announces (RDETH, DETH, XRCETH, RETH, AtomicETH,
//! AETH, AtomicAckETH, ImmDt, IETH, and the 16 reserved bytes of a CNP), in IBTA wire order
//! as [`super::ib::Transport`] reads them. The application payload, the pad and the ICRC
//! are left out: they are private data and nothing reads them (payload sizes come from the
//! original length).
//!
//! Two kinds of frames keep more:
//! - management datagrams to QP0/QP1 (SMPs, CM's connect/reject MADs): headers plus the
//!   256-byte MAD, which is not application data and says why a connection was refused;
//! - everything that is not RoCE with a known opcode (ARP, PFC and PAUSE, TCP, ICMP,
//!   unknown opcodes whose header layout is unknown, frames too cut to classify): the
//!   first [`NON_ROCE_BOUND`] bytes, enough for every header tripcap decodes there.
//!
//! The result never exceeds the frame's length. [`roce_layout`] gives the offsets of each
//! header, which the ring's codec (`ring::codec`) uses to find the fields it predicts.

use super::bth::Opcode;
use super::{erf, grh, ib, linktype, lrh, ETHERTYPE_ROCE_V1, ROCE_V2_PORT};

/// Bytes kept of frames that are not RoCE with a known opcode (ARP, PFC, TCP, …).
pub const NON_ROCE_BOUND: usize = 128;

/// Bytes of a management datagram (MAD) kept after the headers of a QP0/QP1 packet.
pub const MAD_LEN: usize = 256;

/// Where the headers of a RoCE (or native InfiniBand) frame lie, as offsets from the
/// start of the frame. Offsets may point past the captured bytes when the frame is cut:
/// they are where the headers *would* be, as the bytes before them announce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoceLayout {
    /// IPv4 header (RoCE v2 over IPv4).
    pub ipv4: Option<usize>,
    /// IPv6 header (RoCE v2 over IPv6).
    pub ipv6: Option<usize>,
    /// GRH (RoCE v1, native InfiniBand with LNH = GRH).
    pub grh: Option<usize>,
    /// UDP header (RoCE v2).
    pub udp: Option<usize>,
    /// The BTH.
    pub bth: usize,
    /// The RETH, if the opcode carries one.
    pub reth: Option<usize>,
    /// The AETH, if the opcode carries one.
    pub aeth: Option<usize>,
    /// The end of the transport headers (BTH and extended headers).
    pub end: usize,
    /// Whether the opcode is a defined operation or a CNP (else its headers are unknown
    /// past the BTH).
    pub known_opcode: bool,
    /// Whether the destination QP is 0 or 1 (a management datagram follows the headers).
    pub management: bool,
}

/// How many bytes of this frame diagnosis reads (see the module doc); at most
/// `frame.len()`.
pub fn headers_len(linktype: u32, frame: &[u8]) -> usize {
    // The common frame without working out its whole layout: the capture thread asks
    // this of every packet.
    if linktype == linktype::ETHERNET && plain_roce_v4(frame) {
        if let Some(bth) = bth_facts(frame, FAST_BTH) {
            let end = FAST_BTH + usize::from(bth.full.end);
            return kept(end, bth.known_opcode, bth.management).min(frame.len());
        }
    }
    let n = match roce_layout(linktype, frame) {
        Some(l) => kept(l.end, l.known_opcode, l.management),
        None => NON_ROCE_BOUND,
    };
    n.min(frame.len())
}

/// The layout of a RoCE v2, RoCE v1 or native InfiniBand frame; `None` for anything else
/// or a frame cut before its BTH opcode byte. Never panics, never allocates.
pub fn roce_layout(linktype: u32, frame: &[u8]) -> Option<RoceLayout> {
    match linktype {
        linktype::ETHERNET => fast_roce_v4(frame).or_else(|| ethernet(frame, 0)),
        linktype::LINUX_SLL => ethertype(frame, be16(frame, 14)?, 16),
        linktype::LINUX_SLL2 => ethertype(frame, be16(frame, 0)?, 20),
        linktype::RAW | linktype::RAW_OLD | linktype::IPV4 | linktype::IPV6 => {
            match frame.first()? >> 4 {
                4 => ipv4(frame, 0),
                6 => ipv6(frame, 0),
                _ => None,
            }
        }
        linktype::INFINIBAND => native_ib(frame, 0),
        linktype::ERF => {
            let p = erf::Packet::new_checked(frame).ok()?;
            let inner = p.frame()?;
            let off = frame.len() - inner.len();
            match p.record_type() {
                erf::TYPE_INFINIBAND | erf::TYPE_INFINIBAND_LINK => native_ib(frame, off),
                _ if p.is_ethernet() => ethernet(frame, off),
                _ => None,
            }
        }
        _ => None,
    }
}

const FAST_IP: usize = 14;
const FAST_UDP: usize = FAST_IP + 20;
const FAST_BTH: usize = FAST_UDP + 8;

/// Whether `frame` is the common frame, with one bounds check: Ethernet without a tag,
/// IPv4 without options, not fragmented, UDP to port 4791, the BTH opcode byte captured.
/// Anything else takes the general way, which gives the same layout for these
/// (`the_fast_path_gives_what_the_general_one_gives` cuts frames at every length).
#[inline]
fn plain_roce_v4(frame: &[u8]) -> bool {
    let Some(h) = frame.first_chunk::<{ FAST_BTH + 1 }>() else {
        return false;
    };
    let port = ROCE_V2_PORT.to_be_bytes();
    h[12] == 0x08
        && h[13] == 0x00
        && h[FAST_IP] == 0x45
        && h[FAST_IP + 9] == 17
        && h[FAST_IP + 6] & 0x1f == 0
        && h[FAST_IP + 7] == 0
        && h[FAST_UDP + 2] == port[0]
        && h[FAST_UDP + 3] == port[1]
}

#[inline]
fn fast_roce_v4(frame: &[u8]) -> Option<RoceLayout> {
    if !plain_roce_v4(frame) {
        return None;
    }
    let mut l = transport(frame, FAST_BTH)?;
    l.ipv4 = Some(FAST_IP);
    l.udp = Some(FAST_UDP);
    Some(l)
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([
        *b.get(at)?,
        *b.get(at.checked_add(1)?)?,
    ]))
}

/// Ethernet at `off`, with up to four 802.1Q/802.1ad tags.
fn ethernet(frame: &[u8], off: usize) -> Option<RoceLayout> {
    let mut et = be16(frame, off + 12)?;
    let mut at = off + 14;
    for _ in 0..4 {
        if !matches!(et, 0x8100 | 0x88a8 | 0x9100) {
            break;
        }
        et = be16(frame, at + 2)?;
        at += 4;
    }
    ethertype(frame, et, at)
}

fn ethertype(frame: &[u8], et: u16, at: usize) -> Option<RoceLayout> {
    match et {
        0x0800 => ipv4(frame, at),
        0x86dd => ipv6(frame, at),
        ETHERTYPE_ROCE_V1 => grh_bth(frame, at),
        _ => None,
    }
}

fn ipv4(frame: &[u8], at: usize) -> Option<RoceLayout> {
    let b0 = *frame.get(at)?;
    let ihl = usize::from(b0 & 0x0f) * 4;
    if b0 >> 4 != 4 || ihl < 20 {
        return None;
    }
    let fragment_offset = be16(frame, at + 6)? & 0x1fff;
    if *frame.get(at + 9)? != 17 || fragment_offset != 0 {
        return None;
    }
    let mut l = udp(frame, at + ihl)?;
    l.ipv4 = Some(at);
    Some(l)
}

fn ipv6(frame: &[u8], at: usize) -> Option<RoceLayout> {
    if frame.get(at)? >> 4 != 6 || *frame.get(at + 6)? != 17 {
        return None;
    }
    let mut l = udp(frame, at + 40)?;
    l.ipv6 = Some(at);
    Some(l)
}

fn udp(frame: &[u8], at: usize) -> Option<RoceLayout> {
    if be16(frame, at + 2)? != ROCE_V2_PORT {
        return None;
    }
    let mut l = transport(frame, at + 8)?;
    l.udp = Some(at);
    Some(l)
}

fn grh_bth(frame: &[u8], at: usize) -> Option<RoceLayout> {
    if *frame.get(at + 6)? != grh::NXTHDR_BTH {
        return None;
    }
    let mut l = transport(frame, at + grh::HEADER_LEN)?;
    l.grh = Some(at);
    Some(l)
}

fn native_ib(frame: &[u8], at: usize) -> Option<RoceLayout> {
    match frame.get(at + 1)? & 0x03 {
        3 => grh_bth(frame, at + lrh::HEADER_LEN),
        2 => transport(frame, at + lrh::HEADER_LEN),
        _ => None,
    }
}

/// What a header-only snaplen needs of a BTH: its opcode's layout, and whether a
/// management datagram follows.
struct BthFacts {
    full: &'static ib::FullLayout,
    known_opcode: bool,
    management: bool,
}

#[inline]
fn bth_facts(frame: &[u8], at: usize) -> Option<BthFacts> {
    let full = &ib::layouts()[usize::from(*frame.get(at)?)];
    Some(BthFacts {
        full,
        known_opcode: !matches!(full.opcode, Opcode::Unknown(_)),
        management: frame
            .get(at + 5..at + 8)
            .is_some_and(|qp| qp == [0, 0, 0] || qp == [0, 0, 1]),
    })
}

/// The bytes a header-only snaplen keeps of a RoCE frame whose transport headers end at
/// `end` (before the cut to the frame's length).
fn kept(end: usize, known_opcode: bool, management: bool) -> usize {
    match (known_opcode, management) {
        (true, true) => end + MAD_LEN,
        (true, false) => end,
        (false, _) => NON_ROCE_BOUND,
    }
}

/// The BTH at `at` and the extended headers its opcode announces.
fn transport(frame: &[u8], at: usize) -> Option<RoceLayout> {
    let BthFacts {
        full,
        known_opcode,
        management,
    } = bth_facts(frame, at)?;
    let from_bth = |off: u8| (off != 0).then(|| at + usize::from(off));
    Some(RoceLayout {
        bth: at,
        known_opcode,
        management,
        reth: from_bth(full.off.reth),
        aeth: from_bth(full.off.aeth),
        end: at + usize::from(full.end),
        ..RoceLayout::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::bth;

    fn eth(ethertype: u16) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f
    }

    fn ipv4_udp(f: &mut Vec<u8>, dst_port: u16) {
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[6] = 0x40;
        ip[9] = 17;
        f.extend_from_slice(&ip);
        f.extend_from_slice(&49152u16.to_be_bytes());
        f.extend_from_slice(&dst_port.to_be_bytes());
        f.extend_from_slice(&[0; 4]);
    }

    fn bth(f: &mut Vec<u8>, opcode: u8, qp: u32) {
        let mut b = [0u8; 12];
        b[0] = opcode;
        b[5..8].copy_from_slice(&qp.to_be_bytes()[1..]);
        f.extend_from_slice(&b);
    }

    /// A RoCE v2 frame with `opcode` to QP 0x12, `rest` bytes of extended headers,
    /// payload and ICRC after the BTH.
    fn v2(opcode: u8, rest: usize) -> Vec<u8> {
        let mut f = eth(0x0800);
        ipv4_udp(&mut f, ROCE_V2_PORT);
        bth(&mut f, opcode, 0x12);
        f.resize(f.len() + rest, 0xab);
        f
    }

    /// The fast path agrees with the general walk wherever it answers, on plain, tagged,
    /// optioned, fragmented, non-RoCE and cut frames, for every opcode byte.
    #[test]
    fn the_fast_path_gives_what_the_general_one_gives() {
        let mut frames = Vec::new();
        for op in 0..=255u8 {
            frames.push(v2(op, 40));
        }
        let mut tagged = eth(0x8100);
        tagged.extend_from_slice(&[0, 5, 0x08, 0x00]);
        ipv4_udp(&mut tagged, ROCE_V2_PORT);
        bth(&mut tagged, 0x0a, 1);
        frames.push(tagged);
        let mut options = v2(0x06, 30);
        options[14] = 0x46;
        frames.push(options);
        let mut fragment = v2(0x06, 30);
        fragment[14 + 7] = 1;
        frames.push(fragment);
        let mut more_fragments = v2(0x06, 30);
        more_fragments[14 + 6] = 0x20;
        frames.push(more_fragments);
        let mut other_port = eth(0x0800);
        ipv4_udp(&mut other_port, 53);
        other_port.resize(80, 0);
        frames.push(other_port);
        let mut fast = 0;
        for f in &frames {
            for len in 0..=f.len() {
                let cut = &f[..len];
                if let Some(l) = fast_roce_v4(cut) {
                    assert_eq!(Some(l), ethernet(cut, 0), "{cut:02x?}");
                    fast += 1;
                }
                assert_eq!(
                    roce_layout(linktype::ETHERNET, cut),
                    ethernet(cut, 0),
                    "{cut:02x?}"
                );
                let general = ethernet(cut, 0).map_or(NON_ROCE_BOUND, |l| {
                    kept(l.end, l.known_opcode, l.management)
                });
                assert_eq!(
                    headers_len(linktype::ETHERNET, cut),
                    general.min(cut.len()),
                    "{cut:02x?}"
                );
            }
        }
        assert!(fast > 256 * 40, "the fast path answered only {fast} times");
    }

    #[test]
    fn each_opcode_kind_keeps_its_extended_headers() {
        let base = 14 + 20 + 8 + 12;
        let cases: &[(u8, usize)] = &[
            (0x06, 16),            // RC WRITE First: RETH
            (0x07, 0),             // RC WRITE Middle
            (0x08, 0),             // RC WRITE Last
            (0x09, 4),             // RC WRITE Last with Immediate: ImmDt
            (0x0a, 16),            // RC WRITE Only: RETH
            (0x0b, 20),            // RC WRITE Only with Immediate: RETH + ImmDt
            (0x0c, 16),            // RC READ Request: RETH
            (0x0d, 4),             // RC READ Response First: AETH
            (0x0e, 0),             // RC READ Response Middle
            (0x10, 4),             // RC READ Response Only: AETH
            (0x11, 4),             // RC Acknowledge: AETH
            (0x12, 12),            // RC Atomic Acknowledge: AETH + AtomicAckETH
            (0x13, 28),            // RC CmpSwap: AtomicETH
            (0x14, 28),            // RC FetchAdd: AtomicETH
            (0x16, 4),             // RC SEND Last with Invalidate: IETH
            (0x04, 0),             // RC SEND Only
            (0x05, 4),             // RC SEND Only with Immediate
            (0x64, 8),             // UD SEND Only: DETH
            (0x65, 12),            // UD SEND Only with Immediate: DETH + ImmDt
            (0x2a, 16),            // UC WRITE Only: RETH
            (0x46, 4 + 8 + 16),    // RD WRITE First: RDETH + DETH + RETH
            (0xa6, 4 + 16),        // XRC WRITE First: XRCETH + RETH
            (bth::OPCODE_CNP, 16), // CNP: 16 reserved bytes
        ];
        for &(opcode, ext) in cases {
            let f = v2(opcode, ext + 1000);
            assert_eq!(
                headers_len(linktype::ETHERNET, &f),
                base + ext,
                "opcode 0x{opcode:02x}"
            );
            // Cut inside the headers: the whole (cut) frame.
            let cut = &f[..base + ext / 2];
            assert_eq!(headers_len(linktype::ETHERNET, cut), cut.len());
        }
    }

    #[test]
    fn vlan_tags_ipv6_and_roce_v1() {
        // Two tags (802.1ad + 802.1Q).
        let mut f = eth(0x88a8);
        f.extend_from_slice(&[0, 100, 0x81, 0x00, 0x60, 100, 0x08, 0x00]);
        ipv4_udp(&mut f, ROCE_V2_PORT);
        bth(&mut f, 0x11, 7);
        f.resize(f.len() + 8, 0);
        assert_eq!(
            headers_len(linktype::ETHERNET, &f),
            14 + 8 + 20 + 8 + 12 + 4
        );

        let mut f = eth(0x86dd);
        let mut ip6 = [0u8; 40];
        ip6[0] = 0x60;
        ip6[6] = 17;
        f.extend_from_slice(&ip6);
        f.extend_from_slice(&[0xc0, 0, 0x12, 0xb7, 0, 0, 0, 0]);
        bth(&mut f, 0x07, 7);
        f.resize(f.len() + 4096, 0);
        assert_eq!(headers_len(linktype::ETHERNET, &f), 14 + 40 + 8 + 12);

        let mut f = eth(ETHERTYPE_ROCE_V1);
        let mut g = [0u8; 40];
        g[0] = 0x60;
        g[6] = grh::NXTHDR_BTH;
        f.extend_from_slice(&g);
        bth(&mut f, 0x0c, 7);
        f.resize(f.len() + 20, 0);
        assert_eq!(headers_len(linktype::ETHERNET, &f), 14 + 40 + 12 + 16);

        // IPv4 with options.
        let mut f = v2(0x07, 100);
        f[14] = 0x46;
        f.splice(34..34, [1, 1, 1, 0]);
        assert_eq!(headers_len(linktype::ETHERNET, &f), 14 + 24 + 8 + 12);
    }

    #[test]
    fn other_link_types() {
        let f = v2(0x11, 8);
        // Raw IP.
        assert_eq!(headers_len(linktype::RAW, &f[14..]), 20 + 8 + 12 + 4);
        // Linux cooked v1: 16-byte header, ethertype at 14.
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(&f[14..]);
        assert_eq!(headers_len(linktype::LINUX_SLL, &sll), 16 + 20 + 8 + 16);
        // Native IB: LRH (LNH = BTH) + BTH + AETH.
        let mut ib = vec![0x00, 0x02, 0, 1, 0, 6, 0, 2];
        bth(&mut ib, 0x11, 7);
        ib.resize(ib.len() + 8, 0);
        assert_eq!(headers_len(linktype::INFINIBAND, &ib), 8 + 12 + 4);
    }

    #[test]
    fn management_datagrams_keep_the_mad() {
        let mut f = eth(0x0800);
        ipv4_udp(&mut f, ROCE_V2_PORT);
        bth(&mut f, 0x64, 1); // UD SEND Only to QP1
        f.resize(f.len() + 8 + 256 + 4, 0);
        assert_eq!(
            headers_len(linktype::ETHERNET, &f),
            14 + 20 + 8 + 12 + 8 + MAD_LEN
        );
    }

    #[test]
    fn non_roce_frames_keep_up_to_the_bound() {
        let mut arp = eth(0x0806);
        arp.resize(60, 0);
        assert_eq!(headers_len(linktype::ETHERNET, &arp), 60);
        let mut pfc = eth(0x8808);
        pfc.resize(60, 0);
        assert_eq!(headers_len(linktype::ETHERNET, &pfc), 60);
        let mut other = eth(0x0800);
        ipv4_udp(&mut other, 53);
        other.resize(1500, 0);
        assert_eq!(headers_len(linktype::ETHERNET, &other), NON_ROCE_BOUND);
        // An unknown opcode: its headers are unknown.
        assert_eq!(
            headers_len(linktype::ETHERNET, &v2(0xf0, 1000)),
            NON_ROCE_BOUND
        );
        assert_eq!(headers_len(linktype::ETHERNET, &[]), 0);
        assert_eq!(headers_len(999, &v2(0x07, 1000)), NON_ROCE_BOUND);
    }

    #[test]
    fn never_panics_on_any_cut() {
        let f = v2(0x0b, 64);
        for cut in 0..f.len() {
            for lt in [1, 12, 101, 113, 197, 228, 229, 247, 276] {
                assert!(headers_len(lt, &f[..cut]) <= cut);
            }
        }
    }
}
