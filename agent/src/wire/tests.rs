//! Frame-classification tests with byte arrays taken from the captures in `tests/data/pcaps`,
//! plus cut-off and random input (no panic, every frame counted).

use super::*;
use crate::wire::aeth::Syndrome;
use crate::wire::bth::{Operation, Service};

/// `public-hexdumps_roce_snippets.pcap` frame 1: CNP from a ConnectX-4 Lx.
const CNP: [u8; 74] = hex74(concat!(
    "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b70028",
    "00008100ffff40000118000000000000000000000000000000000000000082fd002a",
));
/// `public-hexdumps_roce_snippets.pcap` frame 2: RC RDMA READ Request.
const READ_REQ: [u8; 74] = hex74(concat!(
    "000c29ae1ca4000c2989a2e508004500003cbe10400040118a4bc0a83881c0a83883df9412b70028",
    "00000c00ffff000000118054cb6300007fee260fb000000002b80001000008c6154a",
));
/// `synthetic_rocev1.pcap` frame 2: RoCE v1 RC Acknowledge.
const V1_ACK: [u8; 74] = hex74(concat!(
    "02000000000a02000000000b891566a0000000141b4000000000000000000000ffff0a0000020000",
    "0000000000000000ffff0a0000011100ffff0000010b00fffffa1f000001191d66eb",
));

const fn hex74(s: &str) -> [u8; 74] {
    let b = s.as_bytes();
    let mut out = [0u8; 74];
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        let c = b[i];
        i += 1;
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => continue,
        };
        out[n / 2] |= if n % 2 == 0 { v << 4 } else { v };
        n += 1;
    }
    assert!(n == 148);
    out
}

fn roce(frame: Frame<'_>) -> Roce<'_> {
    match frame {
        Frame::Roce(r) => r,
        other => panic!("not RoCE: {other:?}"),
    }
}

#[test]
fn cnp_from_connectx4() {
    let r = roce(parse_frame(linktype::ETHERNET, &CNP));
    assert_eq!(r.encap, Encap::RoceV2);
    assert_eq!(r.src.to_string(), "10.0.17.1");
    assert_eq!(r.dst.to_string(), "10.0.18.1");
    assert_eq!(r.ecn, Some(2));
    // TOS 0xc2: DSCP 48 (the class NICs send CNPs in), as tshark's ip.dsfield.dscp says.
    assert_eq!(r.dscp, Some(48));
    assert_eq!(r.transport.opcode(), bth::Opcode::Cnp);
    let b = r.transport.bth();
    assert!(b.becn() && !b.fecn());
    assert_eq!(b.dest_qp(), 0x118);
    assert!(r.transport.cnp().is_some());
}

#[test]
fn read_request_with_reth() {
    let r = roce(parse_frame(linktype::ETHERNET, &READ_REQ));
    assert_eq!(
        r.transport.opcode(),
        bth::Opcode::Op(Service::Rc, Operation::ReadRequest)
    );
    assert_eq!(r.udp_src_port, Some(57236));
    assert_eq!(r.transport.reth().map(|h| h.dma_len()), Some(65536));
    assert_eq!(r.transport.bth().psn(), 5557091);
}

#[test]
fn roce_v1_ack() {
    let r = roce(parse_frame(linktype::ETHERNET, &V1_ACK));
    assert_eq!(r.encap, Encap::RoceV1);
    assert_eq!(r.src.to_string(), "::ffff:10.0.0.2");
    assert_eq!(r.transport.bth().dest_qp(), 0x10b);
    assert_eq!(
        r.transport.aeth().map(|a| a.syndrome()),
        Some(Syndrome::Ack { credits: 31 })
    );
}

#[test]
fn vlan_tag_is_reported() {
    // READ_REQ with an 802.1Q tag (VLAN 100, PCP 3) inserted after the MACs.
    let mut f = READ_REQ[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00, 0x60, 0x64]);
    f.extend_from_slice(&READ_REQ[12..]);
    let r = roce(parse_frame(linktype::ETHERNET, &f));
    assert_eq!(r.vlan, Some(Vlan { id: 100, pcp: 3 }));
}

#[test]
fn pfc_and_pause() {
    let mut f = vec![0x01, 0x80, 0xc2, 0, 0, 1, 2, 0, 0, 0, 0, 0x5c, 0x88, 0x08];
    f.extend_from_slice(&[0x01, 0x01, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
    f.resize(60, 0);
    match parse_frame(linktype::ETHERNET, &f) {
        Frame::MacControl(p) => assert_eq!(p.paused_mask(), 0x08),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse_frame(linktype::ETHERNET, &f[..20]),
        Frame::Malformed(Layer::MacControl)
    );
}

#[test]
fn src_port_4791_alone_is_not_roce() {
    let mut f = READ_REQ;
    f[34..36].copy_from_slice(&4791u16.to_be_bytes());
    f[36..38].copy_from_slice(&50000u16.to_be_bytes());
    assert_eq!(parse_frame(linktype::ETHERNET, &f), Frame::Other);
}

#[test]
fn every_cut_of_real_frames_is_classified_without_panic() {
    for frame in [&CNP[..], &READ_REQ[..], &V1_ACK[..]] {
        let mut counts = FrameCounts::default();
        for len in 0..=frame.len() {
            let f = parse_frame(linktype::ETHERNET, &frame[..len]);
            counts.add(&f);
            // Up to the end of the BTH the frame is malformed; after it, RoCE.
            let bth_end = if frame == &V1_ACK[..] {
                14 + 40 + 12
            } else {
                14 + 20 + 8 + 12
            };
            if len >= bth_end {
                assert!(matches!(f, Frame::Roce(_)), "len {len}: {f:?}");
            } else if len >= 14 {
                assert!(matches!(f, Frame::Malformed(_)), "len {len}: {f:?}");
            }
        }
        assert_eq!(counts.total(), frame.len() as u64 + 1);
    }
    // Cut inside the RETH: RoCE, BTH readable, RETH missing, counted as truncated.
    let r = roce(parse_frame(linktype::ETHERNET, &READ_REQ[..60]));
    assert!(r.transport.is_truncated() && r.transport.reth().is_none());
}

/// xorshift64*: deterministic pseudo-random bytes without a dependency.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

#[test]
fn random_bytes_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut counts = FrameCounts::default();
    let linktypes = [
        linktype::ETHERNET,
        linktype::LINUX_SLL,
        linktype::LINUX_SLL2,
        linktype::RAW,
        linktype::ERF,
        linktype::INFINIBAND,
        9999,
    ];
    let mut n = 0u64;
    for i in 0..20_000 {
        let len = (rng(&mut seed) % 200) as usize;
        let mut buf = [0u8; 200];
        for b in buf.iter_mut().take(len) {
            *b = rng(&mut seed) as u8;
        }
        // Half of the inputs get a plausible prefix so the deeper layers are reached.
        if i % 2 == 0 && len > 40 {
            let prefix: &[u8] = match i % 6 {
                0 => &READ_REQ[..42],
                2 => &V1_ACK[..14],
                _ => &CNP[..36],
            };
            buf[..prefix.len().min(len)].copy_from_slice(&prefix[..prefix.len().min(len)]);
        }
        let lt = linktypes[i % linktypes.len()];
        counts.add(&parse_frame(lt, &buf[..len]));
        let _ = frame_timestamp_ns(lt, &buf[..len]);
        n += 1;
    }
    assert_eq!(counts.total(), n);
    assert!(counts.roce_v2 > 0 && counts.malformed > 0);
}

/// Every Ethernet frame of the sample captures, and every cut of it, classifies the same
/// through the IPv4/UDP fast path as through `etherparse`.
#[test]
fn fast_path_equals_etherparse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pcaps");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list the sample captures in {}: {e}", dir.display()));
    let mut checked = 0;
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("pcap") {
            continue;
        }
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let Ok(mut r) = crate::capture_file::reader::Reader::new(std::io::BufReader::new(file))
        else {
            continue;
        };
        while let Ok(Some(p)) = r.next_packet() {
            if p.link_type != linktype::ETHERNET {
                continue;
            }
            let mut frame = p.data.to_vec();
            for cut in 0..=frame.len() {
                let d = &frame[..cut];
                if let Some(fast) = fast_roce_v4(d) {
                    assert_eq!(fast, slow_ethernet(d), "{} cut {cut}", path.display());
                    checked += 1;
                }
            }
            // Odd lengths: shrink the UDP and IP length fields.
            if let Some(Frame::Roce(_)) = fast_roce_v4(&frame) {
                let off = if frame[12..14] == [0x81, 0x00] {
                    18
                } else {
                    14
                };
                let ihl = usize::from(frame[off] & 0x0f) * 4;
                for (at, v) in [
                    (off + ihl + 4, 9u16),
                    (off + ihl + 4, 7),
                    (off + 2, 40),
                    (off + 2, 1500),
                ] {
                    let old = [frame[at], frame[at + 1]];
                    frame[at..at + 2].copy_from_slice(&v.to_be_bytes());
                    if let Some(fast) = fast_roce_v4(&frame) {
                        assert_eq!(
                            fast,
                            slow_ethernet(&frame),
                            "{} field {at} = {v}",
                            path.display()
                        );
                    }
                    frame[at..at + 2].copy_from_slice(&old);
                }
            }
        }
    }
    assert!(checked > 10_000, "only {checked} fast-path frames checked");
}

/// `READ_REQ` with the IPv4 flags/offset field set to `flags` (IP checksum left stale).
fn read_req_with_flags(flags: u16) -> [u8; 74] {
    let mut f = READ_REQ;
    f[20..22].copy_from_slice(&flags.to_be_bytes());
    f
}

#[test]
fn ipv4_fragments_of_roce_are_not_roce_and_are_found() {
    // DF alone: an ordinary RoCE packet, no fragment.
    assert!(ipv4_fragment(linktype::ETHERNET, &READ_REQ).is_none());
    assert!(matches!(
        parse_frame(linktype::ETHERNET, &READ_REQ),
        Frame::Roce(_)
    ));
    // First fragment (MF, offset 0): the UDP header is there, the datagram is not whole.
    let first = read_req_with_flags(0x2000);
    assert_eq!(parse_frame(linktype::ETHERNET, &first), Frame::Other);
    let f = ipv4_fragment(linktype::ETHERNET, &first).expect("a fragment");
    assert!(f.more);
    assert_eq!(f.offset, 0);
    assert_eq!(f.protocol, 17);
    assert_eq!(f.udp_dst_port, Some(ROCE_V2_PORT));
    assert_eq!(f.src, core::net::Ipv4Addr::new(192, 168, 56, 129));
    // A later fragment: offset 1480 bytes (185 units), no UDP header.
    let later = read_req_with_flags(185);
    let f = ipv4_fragment(linktype::ETHERNET, &later).expect("a fragment");
    assert!(!f.more);
    assert_eq!(f.offset, 1480);
    assert_eq!(f.udp_dst_port, None);
    assert!(!matches!(
        parse_frame(linktype::ETHERNET, &later),
        Frame::Roce(_)
    ));
    // Raw IPv4 and cut frames never panic.
    assert!(ipv4_fragment(linktype::RAW, &first[14..]).is_some());
    for cut in 0..first.len() {
        let _ = ipv4_fragment(linktype::ETHERNET, &first[..cut]);
        let _ = ipv4_fragment(linktype::LINUX_SLL2, &first[..cut]);
    }
}

#[test]
fn ipv4_checksum_matches_the_word_by_word_definition_at_every_length() {
    // RFC 791: the one's complement of the one's complement sum of the header's
    // 16-bit words, the checksum word taken as zero (an odd byte padded with zero).
    fn reference(h: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, c) in h.chunks(2).enumerate() {
            if i != 5 {
                sum += u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]));
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }
    let mut x: u32 = 0x9e37_79b9;
    for len in 0..=64 {
        for _ in 0..50 {
            let h: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            assert_eq!(ipv4_checksum(&h), reference(&h), "{h:02x?}");
        }
    }
    // A real header checks out: its stored checksum is the computed one.
    let real = &READ_REQ[14..34];
    assert_eq!(
        ipv4_checksum(real),
        u16::from_be_bytes([real[10], real[11]])
    );
}
