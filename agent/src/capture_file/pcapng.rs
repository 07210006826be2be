//! A minimal pcapng writer: section header, interface descriptions, enhanced
//! packet blocks, nanosecond timestamps. Little-endian, one section.

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_HARDWARE: u16 = 2;
const SHB_OS: u16 = 3;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;
const IF_FILTER: u16 = 11;

/// What a pcapng interface description block says about one captured interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceDesc {
    /// Interface name (`ens1f0np0`, `lo`, or `replay:FILE`).
    pub name: String,
    /// Free text (e.g. "tstamp precision: nano").
    pub description: String,
    /// libpcap link type (1 = Ethernet).
    pub linktype: u16,
    /// Snapshot length.
    pub snaplen: u32,
    /// The BPF filter the capture ran with.
    pub filter: String,
}

fn pad4(n: usize) -> usize {
    (4 - n % 4) % 4
}

fn option_len(value: &[u8]) -> usize {
    4 + value.len() + pad4(value.len())
}

fn put_option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    // An option value is at most 65535 bytes: cut longer texts.
    let value = &value[..value.len().min(u16::MAX as usize & !3)];
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    out.extend(std::iter::repeat_n(0u8, pad4(value.len())));
}

fn finish_block(out: &mut Vec<u8>, block_type: u32, body: &[u8]) {
    let total = (12 + body.len()) as u32;
    out.extend_from_slice(&block_type.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&total.to_le_bytes());
}

/// Bytes reserved for the section header block. The header is written when a
/// window opens and rewritten in place when it closes, once every trigger
/// line is known; unused space is a custom padding option that readers skip.
pub const SHB_RESERVED: usize = 32 * 1024;

/// Longest single comment kept in the section header (the sidecar has all).
const MAX_COMMENT: usize = 4096;

/// Custom option "binary, not copied" (pcapng §3.5.1), used as padding.
const OPT_CUSTOM_PADDING: u16 = 2989;
/// IANA's documentation PEN (RFC 5612), for the padding option.
const PADDING_PEN: u32 = 32473;

/// A section header block of exactly [`SHB_RESERVED`] bytes. `comments`
/// become `opt_comment` options (each cut to 4 KiB at a char boundary); those
/// that do not fit are replaced by one comment saying how many were left out.
pub fn section_header(comments: &[String]) -> Vec<u8> {
    let mut fixed = Vec::new();
    put_option(&mut fixed, SHB_HARDWARE, std::env::consts::ARCH.as_bytes());
    put_option(&mut fixed, SHB_OS, std::env::consts::OS.as_bytes());
    let appl = format!("tripcap {}", env!("CARGO_PKG_VERSION"));
    put_option(&mut fixed, SHB_USERAPPL, appl.as_bytes());
    // type, length, magic, version, section length, end of options, trailing length.
    let overhead = 4 + 4 + 4 + 4 + 8 + 4 + 4;
    let budget = SHB_RESERVED - overhead - fixed.len();
    let mut opts = Vec::new();
    for (i, c) in comments.iter().enumerate() {
        let text = cut(c, MAX_COMMENT);
        // Keep room for a "left out" note (and the padding option).
        let note = format!(
            "(+{} more trigger lines: see the JSON sidecar)",
            comments.len() - i
        );
        if opts.len() + option_len(text.as_bytes()) + option_len(note.as_bytes()) + 8 > budget {
            put_option(&mut opts, OPT_COMMENT, note.as_bytes());
            break;
        }
        put_option(&mut opts, OPT_COMMENT, text.as_bytes());
    }
    let room = budget - opts.len();
    opts.extend_from_slice(&fixed);
    match room {
        0 => {}
        4 => put_option(&mut opts, OPT_COMMENT, &[]),
        n => {
            let mut pad = vec![0u8; n - 4];
            pad[..4].copy_from_slice(&PADDING_PEN.to_le_bytes());
            put_option(&mut opts, OPT_CUSTOM_PADDING, &pad);
        }
    }
    put_option(&mut opts, OPT_END, &[]);
    let mut body = Vec::with_capacity(SHB_RESERVED);
    body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes()); // major
    body.extend_from_slice(&0u16.to_le_bytes()); // minor
    body.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
    body.extend_from_slice(&opts);
    let mut out = Vec::with_capacity(SHB_RESERVED);
    finish_block(&mut out, SHB, &body);
    debug_assert_eq!(out.len(), SHB_RESERVED);
    out
}

/// `text` cut to at most `max` bytes at a char boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One interface description block per interface, in order (interface id = index).
pub fn interface_blocks(interfaces: &[InterfaceDesc]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut body = Vec::new();
    for iface in interfaces {
        body.clear();
        body.extend_from_slice(&iface.linktype.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&iface.snaplen.to_le_bytes());
        put_option(&mut body, IF_NAME, iface.name.as_bytes());
        if !iface.description.is_empty() {
            put_option(&mut body, IF_DESCRIPTION, iface.description.as_bytes());
        }
        put_option(&mut body, IF_TSRESOL, &[9]);
        if !iface.filter.is_empty() {
            // First byte 0: the filter is a libpcap filter string.
            let mut f = Vec::with_capacity(iface.filter.len() + 1);
            f.push(0u8);
            f.extend_from_slice(iface.filter.as_bytes());
            put_option(&mut body, IF_FILTER, &f);
        }
        put_option(&mut body, OPT_END, &[]);
        finish_block(&mut out, IDB, &body);
    }
    out
}

/// Bytes of an Enhanced Packet Block's framing: the header (type, total length,
/// interface id, timestamp high and low, captured and original length) and the
/// trailing total length. The packet data between them is padded to 4 bytes.
pub const EPB_OVERHEAD: usize = 32;
/// Bytes of an Enhanced Packet Block before its packet data.
const EPB_HEAD: usize = 28;

/// Length of the Enhanced Packet Block holding `caplen` captured bytes.
pub fn epb_len(caplen: usize) -> usize {
    EPB_OVERHEAD + caplen + pad4(caplen)
}

/// Frame one packet as an Enhanced Packet Block (timestamp in ns, as our
/// interface blocks declare) into `out`, which must be exactly
/// [`epb_len`]`(data.len())` bytes. The padding is zeroed, so a reused buffer
/// leaks nothing. Timestamps before the epoch are written as 0.
#[inline]
pub fn put_epb(out: &mut [u8], iface: u32, ts_ns: i64, orig_len: u32, data: &[u8]) {
    let total = out.len();
    let ts = ts_ns.max(0) as u64;
    let (head, rest) = out.split_at_mut(EPB_HEAD);
    let fields = [
        EPB,
        total as u32,
        iface,
        (ts >> 32) as u32,
        ts as u32,
        data.len() as u32,
        orig_len,
    ];
    for (slot, v) in head.chunks_exact_mut(4).zip(fields) {
        slot.copy_from_slice(&v.to_le_bytes());
    }
    let (body, tail) = rest.split_at_mut(rest.len() - 4);
    body[..data.len()].copy_from_slice(data);
    body[data.len()..].fill(0);
    tail.copy_from_slice(&(total as u32).to_le_bytes());
}

/// One packet of an Enhanced Packet Block written by [`put_epb`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epb<'a> {
    /// Interface id.
    pub iface: u32,
    /// Timestamp, ns since the epoch.
    pub ts_ns: i64,
    /// Length on the wire.
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
    /// The whole block.
    pub block: &'a [u8],
}

/// Read the Enhanced Packet Block [`put_epb`] wrote at the start of `buf`;
/// `None` if `buf` is too short for it.
#[inline]
pub fn parse_epb(buf: &[u8]) -> Option<Epb<'_>> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(buf.get(at..at + 4)?.try_into().ok()?))
    };
    let total = (u32_at(4)? as usize).max(EPB_OVERHEAD);
    let ts = (u64::from(u32_at(12)?) << 32) | u64::from(u32_at(16)?);
    let caplen = u32_at(20)? as usize;
    Some(Epb {
        iface: u32_at(8)?,
        ts_ns: ts as i64,
        orig_len: u32_at(24)?,
        data: buf.get(EPB_HEAD..EPB_HEAD + caplen)?,
        block: buf.get(..total)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enhanced_packet_block_is_framed_to_the_byte_and_read_back() {
        let ts = 1_796_000_000_123_456_789i64; // 0x18ec_ac7c_07f5_cd15
        let mut block = vec![0xffu8; epb_len(5)]; // dirty: padding must be zeroed
        put_epb(&mut block, 3, ts, 1500, &[1, 2, 3, 4, 5]);
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            6, 0, 0, 0,            // type: Enhanced Packet Block
            40, 0, 0, 0,           // total length: 32 + 5 + 3
            3, 0, 0, 0,            // interface id
            0x7c, 0xac, 0xec, 0x18, // timestamp, high 32 bits (ns)
            0x15, 0xcd, 0xf5, 0x07, // timestamp, low 32 bits
            5, 0, 0, 0,            // captured length
            0xdc, 5, 0, 0,         // original length 1500
            1, 2, 3, 4, 5, 0, 0, 0, // data, zero padding
            40, 0, 0, 0,           // total length again
        ];
        assert_eq!(block, expected);
        let epb = parse_epb(&block).expect("parses");
        assert_eq!(
            (
                epb.iface,
                epb.ts_ns,
                epb.orig_len,
                epb.data,
                epb.block.len()
            ),
            (3, ts, 1500, &[1u8, 2, 3, 4, 5][..], 40)
        );
        assert_eq!(parse_epb(&block[..39]), None, "cut short");
    }

    fn comments_of(shb: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        let mut at = 24;
        while at + 4 <= shb.len() - 4 {
            let code = u16::from_le_bytes([shb[at], shb[at + 1]]);
            let len = usize::from(u16::from_le_bytes([shb[at + 2], shb[at + 3]]));
            if code == OPT_END {
                break;
            }
            if code == OPT_COMMENT {
                out.push(String::from_utf8_lossy(&shb[at + 4..at + 4 + len]).into_owned());
            }
            at += 4 + len + pad4(len);
        }
        out
    }

    #[test]
    fn section_header_is_always_the_reserved_size() {
        for n in [0usize, 1, 3, 10, 100] {
            for len in [0usize, 1, 2, 3, 4, 5, 300, 5000] {
                let comments: Vec<String> =
                    (0..n).map(|i| format!("{i}:{}", "é".repeat(len))).collect();
                let shb = section_header(&comments);
                assert_eq!(shb.len(), SHB_RESERVED, "n={n} len={len}");
                assert_eq!(
                    u32::from_le_bytes([shb[4], shb[5], shb[6], shb[7]]) as usize,
                    SHB_RESERVED
                );
                let got = comments_of(&shb);
                assert!(!got.is_empty() || n == 0);
                if got.len() < n {
                    assert!(
                        got.last().is_some_and(|c| c.contains("more trigger lines")),
                        "{got:?}"
                    );
                }
            }
        }
    }
}
