//! A minimal pcapng writer: section header, interface descriptions, enhanced
//! packet blocks, nanosecond timestamps. Little-endian, one section.

use std::io::{self, Write};

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

/// The section header and interface blocks, as bytes. `comments` become
/// `opt_comment` options of the section header (one per trigger line).
pub fn header_blocks(comments: &[String], interfaces: &[InterfaceDesc]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut body = Vec::new();
    body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes()); // major
    body.extend_from_slice(&0u16.to_le_bytes()); // minor
    body.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
    for c in comments {
        put_option(&mut body, OPT_COMMENT, c.as_bytes());
    }
    put_option(&mut body, SHB_HARDWARE, std::env::consts::ARCH.as_bytes());
    put_option(&mut body, SHB_OS, std::env::consts::OS.as_bytes());
    let appl = format!("tripcap {}", env!("CARGO_PKG_VERSION"));
    put_option(&mut body, SHB_USERAPPL, appl.as_bytes());
    put_option(&mut body, OPT_END, &[]);
    finish_block(&mut out, SHB, &body);

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
    debug_assert!(comments.iter().all(|c| option_len(c.as_bytes()) > 0));
    out
}

/// Write one enhanced packet block (no allocation). Returns the bytes written.
#[inline]
pub fn write_packet<W: Write>(
    out: &mut W,
    iface: u32,
    ts_ns: i64,
    orig_len: u32,
    data: &[u8],
) -> io::Result<usize> {
    let pad = pad4(data.len());
    let total = (32 + data.len() + pad) as u32;
    let ts = ts_ns.max(0) as u64;
    let mut head = [0u8; 28];
    head[0..4].copy_from_slice(&EPB.to_le_bytes());
    head[4..8].copy_from_slice(&total.to_le_bytes());
    head[8..12].copy_from_slice(&iface.to_le_bytes());
    head[12..16].copy_from_slice(&((ts >> 32) as u32).to_le_bytes());
    head[16..20].copy_from_slice(&(ts as u32).to_le_bytes());
    head[20..24].copy_from_slice(&(data.len() as u32).to_le_bytes());
    head[24..28].copy_from_slice(&orig_len.to_le_bytes());
    out.write_all(&head)?;
    out.write_all(data)?;
    let mut tail = [0u8; 7];
    tail[pad..pad + 4].copy_from_slice(&total.to_le_bytes());
    out.write_all(&tail[..pad + 4])?;
    Ok(total as usize)
}
