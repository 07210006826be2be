//! RoCE and InfiniBand on the wire: zero-copy header views and frame classification.
//!
//! Shaped like smoltcp's `wire`: one header per file (`bth`, `reth`, `aeth`, …), each with a
//! private `mod field` of byte ranges, a `HEADER_LEN`, and a `Packet<T: AsRef<[u8]>>` view
//! whose `new_checked` verifies the length once so that no accessor panics afterwards.
//! Enums keep what they don't know (`Opcode::Unknown(u8)`), and `Repr`s (BTH, RETH, AETH)
//! parse and emit, so the demo traffic generator builds packets with the same code that
//! reads them.
//!
//! Ethernet, 802.1Q, IPv4/IPv6 and UDP are left to `etherparse`'s `LaxSlicedPacket`, which
//! tolerates frames cut by the capture snaplen; this module writes only the InfiniBand part.
//! [`parse_frame`] is the one entry point for captured bytes: it classifies a frame as
//! RoCE v2, RoCE v1, native InfiniBand, PFC/PAUSE, ARP, other, or malformed, never panics and
//! never allocates. [`FrameCounts`] tallies the classes.
//!
//! RoCE v2 is recognised by UDP **destination** port 4791 only (IBTA annex A17: the source
//! port is an entropy value). tshark instead tries the lower of the two ports first, so a
//! RoCE packet whose source port has a registered dissector (e.g. 69, TFTP) needs
//! `-d udp.port==69,infiniband` there, while a non-RoCE datagram *from* port 4791 would be
//! shown as InfiniBand by tshark and is `Other` here.

use core::fmt;
use core::net::IpAddr;

use etherparse::{LaxLinkExtSlice, LaxNetSlice, LaxSlicedPacket, TransportSlice};

pub mod aeth;
pub mod atomic_ack_eth;
pub mod atomic_eth;
pub mod bth;
pub mod cnp;
pub mod deth;
pub mod erf;
pub mod grh;
pub mod headers_len;
pub mod ib;
pub mod ieth;
pub mod immdt;
pub mod lrh;
pub mod pfc;
pub mod rdeth;
pub mod reth;
pub mod xrceth;

pub use headers_len::headers_len;

/// The checksum of an IPv4 header (`header`: the whole header, options
/// included), its checksum field (bytes 10–11) taken as zero.
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    // Every 16-bit word (a loop the compiler vectorises: the ring codec computes
    // one per IPv4 packet), then the checksum field (bytes 10 and 11) taken back out.
    let words = header.chunks_exact(2);
    let odd = words.remainder().first().map_or(0, |&b| u32::from(b) << 8);
    let mut sum: u32 = words
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum::<u32>()
        + odd;
    sum -= header.get(10).map_or(0, |&b| u32::from(b) << 8)
        + header.get(11).map_or(0, |&b| u32::from(b));
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A byte range of a header field.
pub type Field = core::ops::Range<usize>;

/// A buffer too short for the header it should hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("buffer too short for the header")
    }
}

impl std::error::Error for Error {}

/// Result of the header views.
pub type Result<T> = core::result::Result<T, Error>;

/// Defines `Packet<T>` with `new_unchecked`, `new_checked`, `check_len` and `into_inner`
/// for a header of fixed length `$len`.
macro_rules! view {
    ($len:expr) => {
        /// A zero-copy view of the header. Construct with [`Packet::new_checked`] for
        /// captured bytes; no accessor panics afterwards.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Wraps a buffer without checking its length; accessors may panic if it is
            /// shorter than `HEADER_LEN`.
            pub const fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            /// Wraps a buffer after [`Packet::check_len`].
            pub fn new_checked(buffer: T) -> $crate::wire::Result<Packet<T>> {
                let p = Self::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }

            /// Fails if the buffer is shorter than `HEADER_LEN`.
            pub fn check_len(&self) -> $crate::wire::Result<()> {
                if self.buffer.as_ref().len() < $len {
                    Err($crate::wire::Error)
                } else {
                    Ok(())
                }
            }

            /// Returns the underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}
pub(crate) use view;

pub(crate) fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

pub(crate) fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// pcap/pcapng link types that [`parse_frame`] understands.
pub mod linktype {
    /// Ethernet (DLT_EN10MB).
    pub const ETHERNET: u32 = 1;
    /// Raw IP (OpenBSD numbering).
    pub const RAW_OLD: u32 = 12;
    /// Raw IP.
    pub const RAW: u32 = 101;
    /// Linux cooked capture v1 (`any` device).
    pub const LINUX_SLL: u32 = 113;
    /// Endace ERF records.
    pub const ERF: u32 = 197;
    /// Native InfiniBand starting with the LRH (libpcap's RDMA sniffer).
    pub const INFINIBAND: u32 = 247;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux cooked capture v2.
    pub const LINUX_SLL2: u32 = 276;
}

/// UDP destination port of RoCE v2.
pub const ROCE_V2_PORT: u16 = 4791;
/// Ethertype of RoCE v1.
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;
const ETHERTYPE_ARP: u16 = 0x0806;

/// How the InfiniBand transport was carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encap {
    /// UDP/IP, destination port 4791.
    RoceV2,
    /// Ethertype 0x8915 + GRH.
    RoceV1,
    /// Native InfiniBand (LRH, optional GRH), e.g. from ERF.
    NativeIb,
}

/// A network-layer address of a RoCE/IB packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Addr {
    /// An IP address (RoCE v2) or a GID formatted as IPv6 (RoCE v1, native IB with GRH).
    Ip(IpAddr),
    /// A local identifier (native IB without GRH).
    Lid(u16),
}

/// One word per address (two for IPv6), where the derived hash would feed the hasher
/// both enum tags, a length and the octets one chunk at a time: the analysis looks a
/// connection up by two addresses for every packet. Equal addresses write the same
/// words, as `Eq` requires; an IPv4 address and a LID may collide, which `Eq` settles.
impl std::hash::Hash for Addr {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Addr::Ip(IpAddr::V4(a)) => state.write_u64(u64::from(u32::from(*a))),
            Addr::Ip(IpAddr::V6(a)) => {
                let v = u128::from(*a);
                state.write_u64((v >> 64) as u64 | 1 << 63);
                state.write_u64(v as u64);
            }
            Addr::Lid(l) => state.write_u64(1 << 32 | u64::from(*l)),
        }
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Ip(ip) => ip.fmt(f),
            Addr::Lid(lid) => lid.fmt(f),
        }
    }
}

/// An 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vlan {
    /// VLAN identifier (12 bits).
    pub id: u16,
    /// Priority code point (3 bits): the PFC priority.
    pub pcp: u8,
}

/// A RoCE or InfiniBand transport packet and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roce<'a> {
    /// Encapsulation.
    pub encap: Encap,
    /// Outer 802.1Q tag, if any.
    pub vlan: Option<Vlan>,
    /// Source address (IP, GID, or LID).
    pub src: Addr,
    /// Destination address.
    pub dst: Addr,
    /// ECN bits of the IP header / GRH traffic class (3 = CE); `None` for native IB without
    /// GRH.
    pub ecn: Option<u8>,
    /// DSCP of the IP header / GRH traffic class (the traffic class RoCE is
    /// configured by); `None` for native IB without GRH.
    pub dscp: Option<u8>,
    /// UDP source port (RoCE v2 only).
    pub udp_src_port: Option<u16>,
    /// BTH and extended headers.
    pub transport: ib::Transport<'a>,
}

/// The layer at which a frame stopped making sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// Link header (Ethernet, VLAN, SLL) cut or invalid.
    Link,
    /// ERF record header.
    Erf,
    /// InfiniBand LRH.
    Lrh,
    /// GRH (RoCE v1 or native IB).
    Grh,
    /// IPv4/IPv6 header.
    Ip,
    /// UDP header.
    Udp,
    /// BTH cut (RoCE frame with fewer than 12 bytes of BTH).
    Bth,
    /// MAC Control (PFC/PAUSE) frame shorter than its fields.
    MacControl,
}

/// What one captured frame is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// RoCE v1/v2 or native InfiniBand with a BTH.
    Roce(Roce<'a>),
    /// MAC Control frame (PFC or 802.3x PAUSE), with its 802.1Q tag if any.
    MacControl(pfc::Packet<&'a [u8]>),
    /// ARP.
    Arp,
    /// Anything else (TCP, ICMP, other UDP, IB without BTH, unknown link type, …).
    Other,
    /// Recognised up to `Layer`, then cut or invalid.
    Malformed(Layer),
}

/// Classifies one captured frame of the given pcap link type. Never panics, never
/// allocates.
pub fn parse_frame(linktype: u32, data: &[u8]) -> Frame<'_> {
    match linktype {
        linktype::ETHERNET => parse_ethernet(data),
        linktype::LINUX_SLL => match data.get(14..16).zip(data.get(16..)) {
            Some((p, rest)) => parse_ethertype(u16::from_be_bytes([p[0], p[1]]), rest, None),
            None => Frame::Malformed(Layer::Link),
        },
        linktype::LINUX_SLL2 => match data.get(0..2).zip(data.get(20..)) {
            Some((p, rest)) => parse_ethertype(u16::from_be_bytes([p[0], p[1]]), rest, None),
            None => Frame::Malformed(Layer::Link),
        },
        linktype::RAW | linktype::RAW_OLD | linktype::IPV4 | linktype::IPV6 => {
            match LaxSlicedPacket::from_ip(data) {
                Ok(p) => from_sliced(&p, None),
                Err(_) => Frame::Malformed(Layer::Ip),
            }
        }
        linktype::ERF => parse_erf(data),
        linktype::INFINIBAND => parse_native_ib(data),
        _ => Frame::Other,
    }
}

/// The timestamp a frame carries itself, which tshark prefers over the capture file's
/// record timestamp: the ERF header's (nanoseconds since the epoch).
pub fn frame_timestamp_ns(linktype: u32, data: &[u8]) -> Option<i64> {
    if linktype != linktype::ERF {
        return None;
    }
    erf::Packet::new_checked(data)
        .ok()
        .map(|p| p.timestamp_ns())
}

fn parse_ethernet(data: &[u8]) -> Frame<'_> {
    if let Some(f) = fast_roce_v4(data) {
        return f;
    }
    slow_ethernet(data)
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The common case without `etherparse`: Ethernet, at most one 802.1Q tag, an unfragmented
/// IPv4 header, UDP to port 4791. Anything else (IPv6, options we can't vouch for, odd
/// lengths) is `None` and goes the general way. Gives exactly what [`slow_ethernet`] gives
/// (`fast_path_equals_etherparse` in the tests checks every sample frame, cut at every
/// length); it exists because `LaxSlicedPacket` copies a few hundred bytes of slices per
/// frame, which dominated `tripcap analyze`.
fn fast_roce_v4(data: &[u8]) -> Option<Frame<'_>> {
    let mut et = be16(data, 12)?;
    let mut off = 14;
    let mut vlan = None;
    if et == 0x8100 {
        let tci = be16(data, 14)?;
        vlan = Some(Vlan {
            id: tci & 0x0fff,
            pcp: (tci >> 13) as u8,
        });
        et = be16(data, 16)?;
        off = 18;
    }
    if et != 0x0800 {
        return None;
    }
    let ip = data.get(off..)?;
    let ihl = usize::from(*ip.first()? & 0x0f) * 4;
    if ip[0] >> 4 != 4 || ihl < 20 || ip.len() < ihl + 8 {
        return None;
    }
    let total = usize::from(be16(ip, 2)?);
    if total < ihl + 8 || be16(ip, 6)? & 0x3fff != 0 || ip[9] != 17 {
        return None;
    }
    let ip_payload = &ip[ihl..total.min(ip.len())];
    if be16(ip_payload, 2)? != ROCE_V2_PORT {
        return None;
    }
    let udp_len = usize::from(be16(ip_payload, 4)?);
    if udp_len < 8 || udp_len > total - ihl {
        return None;
    }
    let payload = &ip_payload[8..udp_len.min(ip_payload.len())];
    // The fixed header as an array (`ihl >= 20` was checked): constant indexes, no
    // bounds checks, the addresses read as words.
    let fixed: &[u8; 20] = ip.first_chunk()?;
    let addr = |at: usize| {
        core::net::Ipv4Addr::from([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]])
    };
    Some(match ib::Transport::parse(payload) {
        Ok(transport) => Frame::Roce(Roce {
            encap: Encap::RoceV2,
            vlan,
            src: Addr::Ip(IpAddr::V4(addr(12))),
            dst: Addr::Ip(IpAddr::V4(addr(16))),
            ecn: Some(ip[1] & 0x03),
            dscp: Some(ip[1] >> 2),
            udp_src_port: be16(ip_payload, 0),
            transport,
        }),
        Err(_) => Frame::Malformed(Layer::Bth),
    })
}

/// Any Ethernet frame, through `etherparse`.
fn slow_ethernet(data: &[u8]) -> Frame<'_> {
    match LaxSlicedPacket::from_ethernet(data) {
        Ok(p) => {
            let vlan = p.link_exts.iter().find_map(|e| match e {
                LaxLinkExtSlice::Vlan(v) => Some(Vlan {
                    id: v.vlan_identifier().value(),
                    pcp: v.priority_code_point().value(),
                }),
                LaxLinkExtSlice::Macsec(_) => None,
            });
            if p.net.is_none() {
                if let Some(payload) = p.ether_payload() {
                    return parse_non_ip(payload.ether_type.0, payload.payload, vlan);
                }
                if p.stop_err.is_some() {
                    return Frame::Malformed(Layer::Link);
                }
            }
            from_sliced(&p, vlan)
        }
        Err(_) => Frame::Malformed(Layer::Link),
    }
}

/// Frames after an SLL header: the ethertype is known, the rest is the network layer.
fn parse_ethertype(ether_type: u16, rest: &[u8], vlan: Option<Vlan>) -> Frame<'_> {
    match ether_type {
        0x0800 | 0x86dd => {
            let p = LaxSlicedPacket::from_ether_type(etherparse::EtherType(ether_type), rest);
            from_sliced(&p, vlan)
        }
        _ => parse_non_ip(ether_type, rest, vlan),
    }
}

fn parse_non_ip(ether_type: u16, payload: &[u8], vlan: Option<Vlan>) -> Frame<'_> {
    match ether_type {
        ETHERTYPE_ROCE_V1 => parse_grh_bth(payload, Encap::RoceV1, vlan),
        pfc::ETHERTYPE => match pfc::Packet::new_checked(payload) {
            Ok(p) => Frame::MacControl(p),
            Err(_) => Frame::Malformed(Layer::MacControl),
        },
        ETHERTYPE_ARP => Frame::Arp,
        0x0800 | 0x86dd => Frame::Malformed(Layer::Ip),
        _ => Frame::Other,
    }
}

fn from_sliced<'a>(p: &LaxSlicedPacket<'a>, vlan: Option<Vlan>) -> Frame<'a> {
    let (src, dst, ecn, dscp) = match &p.net {
        Some(LaxNetSlice::Arp(_)) => return Frame::Arp,
        Some(LaxNetSlice::Ipv4(ip)) => {
            let h = ip.header();
            (
                IpAddr::V4(h.source_addr()),
                IpAddr::V4(h.destination_addr()),
                h.ecn().value(),
                h.dcp().value(),
            )
        }
        Some(LaxNetSlice::Ipv6(ip)) => {
            let h = ip.header();
            (
                IpAddr::V6(h.source_addr()),
                IpAddr::V6(h.destination_addr()),
                h.ecn().value(),
                h.dscp().value(),
            )
        }
        None => {
            return match p.stop_err {
                Some(_) => Frame::Malformed(Layer::Ip),
                None => Frame::Other,
            }
        }
    };
    match &p.transport {
        Some(TransportSlice::Udp(udp)) if udp.destination_port() == ROCE_V2_PORT => {
            match ib::Transport::parse(udp.payload()) {
                Ok(transport) => Frame::Roce(Roce {
                    encap: Encap::RoceV2,
                    vlan,
                    src: Addr::Ip(src),
                    dst: Addr::Ip(dst),
                    ecn: Some(ecn),
                    dscp: Some(dscp),
                    udp_src_port: Some(udp.source_port()),
                    transport,
                }),
                Err(_) => Frame::Malformed(Layer::Bth),
            }
        }
        Some(_) => Frame::Other,
        None => match p.stop_err {
            Some((_, etherparse::err::Layer::UdpHeader)) => Frame::Malformed(Layer::Udp),
            Some(_) => Frame::Malformed(Layer::Ip),
            None => Frame::Other,
        },
    }
}

/// GRH then BTH (RoCE v1, native IB with LNH = 3).
fn parse_grh_bth(data: &[u8], encap: Encap, vlan: Option<Vlan>) -> Frame<'_> {
    let Ok(grh) = grh::Packet::new_checked(data) else {
        return Frame::Malformed(Layer::Grh);
    };
    if grh.next_header() != grh::NXTHDR_BTH {
        return Frame::Other;
    }
    let payload = &data[grh::HEADER_LEN..];
    match ib::Transport::parse(payload) {
        Ok(transport) => Frame::Roce(Roce {
            encap,
            vlan,
            src: Addr::Ip(IpAddr::V6(grh.sgid())),
            dst: Addr::Ip(IpAddr::V6(grh.dgid())),
            ecn: Some(grh.traffic_class() & 0x3),
            dscp: Some(grh.traffic_class() >> 2),
            udp_src_port: None,
            transport,
        }),
        Err(_) => Frame::Malformed(Layer::Bth),
    }
}

fn parse_native_ib(data: &[u8]) -> Frame<'_> {
    let Ok(lrh) = lrh::Packet::new_checked(data) else {
        return Frame::Malformed(Layer::Lrh);
    };
    let rest = &data[lrh::HEADER_LEN..];
    match lrh.next_header() {
        lrh::NextHeader::IbaGlobal => parse_grh_bth(rest, Encap::NativeIb, None),
        lrh::NextHeader::IbaLocal => match ib::Transport::parse(rest) {
            Ok(transport) => Frame::Roce(Roce {
                encap: Encap::NativeIb,
                vlan: None,
                src: Addr::Lid(lrh.slid()),
                dst: Addr::Lid(lrh.dlid()),
                ecn: None,
                dscp: None,
                udp_src_port: None,
                transport,
            }),
            Err(_) => Frame::Malformed(Layer::Bth),
        },
        lrh::NextHeader::Raw | lrh::NextHeader::Ipv6 => Frame::Other,
    }
}

fn parse_erf(data: &[u8]) -> Frame<'_> {
    let Ok(erf) = erf::Packet::new_checked(data) else {
        return Frame::Malformed(Layer::Erf);
    };
    let Some(frame) = erf.frame() else {
        return Frame::Malformed(Layer::Erf);
    };
    // `frame()` borrows from `erf`, which borrows `data`: re-slice `data` for the lifetime.
    let frame = &data[data.len() - frame.len()..];
    match erf.record_type() {
        erf::TYPE_INFINIBAND | erf::TYPE_INFINIBAND_LINK => parse_native_ib(frame),
        _ if erf.is_ethernet() => parse_ethernet(frame),
        _ => Frame::Other,
    }
}

/// An IPv4 fragment: a datagram with More Fragments set or a non-zero fragment offset.
/// RoCE v2 must not be fragmented (NICs set DF); a fragment to UDP port 4791 means some
/// hop's MTU is below the RoCE path MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Fragment {
    /// Source address.
    pub src: core::net::Ipv4Addr,
    /// Destination address.
    pub dst: core::net::Ipv4Addr,
    /// IP identification (the same for every fragment of a datagram).
    pub id: u16,
    /// Fragment offset in bytes.
    pub offset: u16,
    /// More Fragments flag.
    pub more: bool,
    /// IP protocol.
    pub protocol: u8,
    /// UDP destination port, for the first fragment (offset 0) of a UDP datagram.
    pub udp_dst_port: Option<u16>,
}

/// The IPv4 fragment a frame carries, if it is one (Ethernet with up to two 802.1Q tags,
/// Linux cooked v1/v2, raw IPv4). Never panics, never allocates.
pub fn ipv4_fragment(linktype: u32, data: &[u8]) -> Option<Ipv4Fragment> {
    let ip = match linktype {
        linktype::ETHERNET => {
            let mut et = be16(data, 12)?;
            let mut off = 14;
            while et == 0x8100 || et == 0x88a8 {
                et = be16(data, off + 2)?;
                off += 4;
                if off > 22 {
                    return None;
                }
            }
            (et == 0x0800).then(|| data.get(off..))??
        }
        linktype::LINUX_SLL => (be16(data, 14)? == 0x0800).then(|| data.get(16..))??,
        linktype::LINUX_SLL2 => (be16(data, 0)? == 0x0800).then(|| data.get(20..))??,
        linktype::RAW | linktype::RAW_OLD | linktype::IPV4 => data,
        _ => return None,
    };
    let ihl = usize::from(*ip.first()? & 0x0f) * 4;
    if ip[0] >> 4 != 4 || ihl < 20 || ip.len() < 20 {
        return None;
    }
    let flags = be16(ip, 6)?;
    let more = flags & 0x2000 != 0;
    let offset = (flags & 0x1fff) * 8;
    if !more && offset == 0 {
        return None;
    }
    // The fixed header as an array (`ihl >= 20` was checked): constant indexes, no
    // bounds checks, the addresses read as words.
    let fixed: &[u8; 20] = ip.first_chunk()?;
    let addr = |at: usize| {
        core::net::Ipv4Addr::from([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]])
    };
    Some(Ipv4Fragment {
        src: addr(12),
        dst: addr(16),
        id: be16(ip, 4)?,
        offset,
        more,
        protocol: ip[9],
        udp_dst_port: if offset == 0 && ip[9] == 17 {
            be16(ip, ihl + 2)
        } else {
            None
        },
    })
}

/// Tallies of [`Frame`] classes, e.g. for "N frames were not RoCE" summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FrameCounts {
    pub roce_v2: u64,
    pub roce_v1: u64,
    pub native_ib: u64,
    /// RoCE/IB packets whose extended headers were cut by the snaplen.
    pub truncated_ib_headers: u64,
    pub pfc: u64,
    pub pause: u64,
    pub mac_control_other: u64,
    pub arp: u64,
    pub other: u64,
    pub malformed: u64,
}

impl FrameCounts {
    /// Counts one frame.
    pub fn add(&mut self, frame: &Frame<'_>) {
        match frame {
            Frame::Roce(r) => {
                match r.encap {
                    Encap::RoceV2 => self.roce_v2 += 1,
                    Encap::RoceV1 => self.roce_v1 += 1,
                    Encap::NativeIb => self.native_ib += 1,
                }
                if r.transport.is_truncated() {
                    self.truncated_ib_headers += 1;
                }
            }
            Frame::MacControl(p) => match p.opcode() {
                pfc::Opcode::Pfc => self.pfc += 1,
                pfc::Opcode::Pause => self.pause += 1,
                pfc::Opcode::Unknown(_) => self.mac_control_other += 1,
            },
            Frame::Arp => self.arp += 1,
            Frame::Other => self.other += 1,
            Frame::Malformed(_) => self.malformed += 1,
        }
    }

    /// All frames counted.
    pub fn total(&self) -> u64 {
        self.roce_v2
            + self.roce_v1
            + self.native_ib
            + self.pfc
            + self.pause
            + self.mac_control_other
            + self.arp
            + self.other
            + self.malformed
    }
}

#[cfg(test)]
mod tests;
