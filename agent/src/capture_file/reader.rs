//! Streaming reader for classic pcap and pcapng capture files.
//!
//! One [`Reader`] reads either format (told apart by the first four bytes) from any
//! `io::Read`, one record at a time, into a single reused buffer: [`Reader::next_packet`]
//! returns a [`Packet`] borrowing that buffer, so reading allocates only when a record is
//! larger than every one before it.
//!
//! Supported: pcap with microsecond (`a1b2c3d4`) and nanosecond (`a1b23c4d`) magic in both
//! byte orders; pcapng sections in either byte order (several sections per file, each
//! restarting the interface list), Interface Description Blocks with `if_name`,
//! `if_tsresol` (decimal and power-of-two forms) and `if_tsoffset`, Enhanced and Simple
//! Packet Blocks, the obsolete Packet Block; other blocks are skipped. Timestamps come out
//! as nanoseconds since the epoch (`i64`); a Simple Packet Block has none and gets 0.
//!
//! Errors say what is wrong and at which byte offset, so a cut-off or foreign file is
//! recognisable from one line.

use std::fmt;
use std::io::{self, Read};

/// pcap/pcapng reading failed.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    offset: u64,
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The underlying reader failed.
    Io(io::Error),
    /// The first bytes are neither a pcap nor a pcapng magic.
    NotACaptureFile { magic: [u8; 4] },
    /// The file ends inside a header, record or block.
    Truncated {
        what: &'static str,
        needed: u64,
        got: u64,
    },
    /// A structure is inconsistent (bad block length, unknown interface, …).
    Invalid(String),
}

impl Error {
    fn new(kind: ErrorKind, offset: u64) -> Error {
        Error { kind, offset }
    }
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
    /// Byte offset in the file where the failing header, record or block starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.offset;
        match &self.kind {
            ErrorKind::Io(e) => write!(f, "read error at byte {at}: {e}"),
            ErrorKind::NotACaptureFile { magic } => write!(
                f,
                "not a pcap or pcapng file: magic {:02x}{:02x}{:02x}{:02x} at byte {at}",
                magic[0], magic[1], magic[2], magic[3]
            ),
            ErrorKind::Truncated { what, needed, got } => write!(
                f,
                "file is truncated: {what} at byte {at} needs {needed} bytes, only {got} left"
            ),
            ErrorKind::Invalid(msg) => write!(f, "invalid capture file at byte {at}: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Which container format the file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap; `nanos` is true for the nanosecond magic.
    Pcap { nanos: bool },
    /// pcapng.
    Pcapng,
}

/// One capture interface (pcap files have exactly one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// pcap link type (`LINKTYPE_*`, e.g. 1 for Ethernet).
    pub link_type: u32,
    /// Snapshot length (0 = unlimited).
    pub snaplen: u32,
    /// `if_name`, if the file records it.
    pub name: Option<String>,
    /// Timestamp unit: numerator/denominator of seconds per tick, see [`TsResol`].
    pub ts_resol: TsResol,
    /// `if_tsoffset` in seconds.
    pub ts_offset_s: i64,
}

/// Timestamp resolution of an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResol {
    /// 10^-n seconds per tick.
    Decimal(u8),
    /// 2^-n seconds per tick.
    Binary(u8),
}

impl TsResol {
    fn from_option(v: u8) -> TsResol {
        if v & 0x80 != 0 {
            TsResol::Binary(v & 0x7f)
        } else {
            TsResol::Decimal(v)
        }
    }

    /// Converts a tick count to nanoseconds (saturating).
    pub fn to_ns(self, ticks: u64) -> i64 {
        let ns: u128 = match self {
            TsResol::Decimal(n) if n <= 9 => u128::from(ticks) * 10u128.pow(u32::from(9 - n)),
            TsResol::Decimal(n) => u128::from(ticks) / 10u128.pow(u32::from(n.min(38) - 9)),
            TsResol::Binary(n) => (u128::from(ticks) * 1_000_000_000) >> u32::from(n.min(127)),
        };
        i64::try_from(ns).unwrap_or(i64::MAX)
    }
}

/// One packet record, borrowing the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Index into [`Reader::interfaces`] (0 for pcap).
    pub interface_id: u32,
    /// Link type of that interface.
    pub link_type: u32,
    /// That interface's `if_name`, when the file records one (pcapng).
    pub interface_name: Option<&'a str>,
    /// Nanoseconds since the epoch.
    pub ts_ns: i64,
    /// Length on the wire.
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
}

/// Largest record or block accepted (protects against garbage lengths).
pub const MAX_RECORD_LEN: u32 = 64 << 20;

const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
}

impl Endian {
    fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }
    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }
    fn u64(self, b: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }
}

/// A streaming pcap/pcapng reader.
pub struct Reader<R> {
    inner: R,
    format: Format,
    endian: Endian,
    interfaces: Vec<Interface>,
    /// Bytes read ahead from `inner`: `chunk[pos..end]` is unread.
    chunk: Vec<u8>,
    pos: usize,
    end: usize,
    /// The bytes of the last [`Reader::fill`], within `chunk`.
    win: std::ops::Range<usize>,
    /// Offset of the next unread byte.
    offset: u64,
}

/// Bytes read from the source at a time: records are handed out as slices of this
/// read-ahead buffer, so reading a packet copies nothing.
const CHUNK: usize = 1 << 20;

impl<R: Read> Reader<R> {
    /// Reads the file header (pcap) or first Section Header Block (pcapng).
    pub fn new(mut inner: R) -> Result<Reader<R>, Error> {
        let mut magic = [0u8; 4];
        let got = read_full(&mut inner, &mut magic).map_err(|e| Error::new(ErrorKind::Io(e), 0))?;
        if got < 4 {
            return Err(Error::new(
                ErrorKind::Truncated {
                    what: "file magic",
                    needed: 4,
                    got: got as u64,
                },
                0,
            ));
        }
        let mut reader = Reader {
            inner,
            format: Format::Pcapng,
            endian: Endian::Little,
            interfaces: Vec::new(),
            chunk: Vec::new(),
            pos: 0,
            end: 0,
            win: 0..0,
            offset: 4,
        };
        let le = u32::from_le_bytes(magic);
        let be = u32::from_be_bytes(magic);
        match (le, be) {
            (PCAP_MAGIC_US, _) | (PCAP_MAGIC_NS, _) | (_, PCAP_MAGIC_US) | (_, PCAP_MAGIC_NS) => {
                reader.endian = if le == PCAP_MAGIC_US || le == PCAP_MAGIC_NS {
                    Endian::Little
                } else {
                    Endian::Big
                };
                let nanos = le == PCAP_MAGIC_NS || be == PCAP_MAGIC_NS;
                reader.format = Format::Pcap { nanos };
                reader.read_pcap_header(nanos)?;
            }
            (PCAPNG_SHB, _) => reader.read_shb_rest(0)?,
            _ => {
                return Err(Error::new(ErrorKind::NotACaptureFile { magic }, 0));
            }
        }
        Ok(reader)
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Interfaces seen so far in the current section (pcapng may add more as it goes).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// Offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next packet, or `None` at a clean end of file.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, Error> {
        match self.format {
            Format::Pcap { nanos } => self.next_pcap(nanos),
            Format::Pcapng => self.next_pcapng(),
        }
    }

    /// The bytes of the last [`Reader::fill`].
    #[inline]
    fn buf(&self) -> &[u8] {
        &self.chunk[self.win.clone()]
    }

    /// Consumes exactly `n` bytes, then available as `self.buf()[..n]`; `Ok(false)` on EOF
    /// before the first byte if `eof_ok`.
    fn fill(
        &mut self,
        n: usize,
        what: &'static str,
        start: u64,
        eof_ok: bool,
    ) -> Result<bool, Error> {
        if self.end - self.pos < n {
            self.chunk.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            if self.chunk.len() < n.max(CHUNK) {
                self.chunk.resize(n.max(CHUNK), 0);
            }
            while self.end < n {
                // One read at a time: never wait for more than the record needs.
                let got = loop {
                    match self.inner.read(&mut self.chunk[self.end..]) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        r => break r,
                    }
                }
                .map_err(|e| Error::new(ErrorKind::Io(e), self.offset))?;
                if got == 0 {
                    break;
                }
                self.end += got;
            }
        }
        let got = (self.end - self.pos).min(n);
        self.win = self.pos..self.pos + got;
        self.pos += got;
        self.offset += got as u64;
        if got == n {
            Ok(true)
        } else if got == 0 && eof_ok {
            Ok(false)
        } else {
            Err(Error::new(
                ErrorKind::Truncated {
                    what,
                    needed: (self.offset - start) + (n - got) as u64,
                    got: self.offset - start,
                },
                start,
            ))
        }
    }

    fn read_pcap_header(&mut self, nanos: bool) -> Result<(), Error> {
        // version (2+2), thiszone (4), sigfigs (4), snaplen (4), linktype (4)
        self.fill(20, "pcap file header", 0, false)?;
        let e = self.endian;
        let snaplen = e.u32(&self.buf()[12..16]);
        let link_type = e.u32(&self.buf()[16..20]) & 0x0fff_ffff;
        self.interfaces.push(Interface {
            link_type: link_type & 0xffff,
            snaplen,
            name: None,
            ts_resol: TsResol::Decimal(if nanos { 9 } else { 6 }),
            ts_offset_s: 0,
        });
        Ok(())
    }

    fn next_pcap(&mut self, nanos: bool) -> Result<Option<Packet<'_>>, Error> {
        let start = self.offset;
        if !self.fill(16, "packet record header", start, true)? {
            return Ok(None);
        }
        let e = self.endian;
        let secs = e.u32(&self.buf()[0..4]);
        let frac = e.u32(&self.buf()[4..8]);
        let incl_len = e.u32(&self.buf()[8..12]);
        let orig_len = e.u32(&self.buf()[12..16]);
        if incl_len > MAX_RECORD_LEN {
            return Err(Error::new(
                ErrorKind::Invalid(format!(
                    "packet record claims {incl_len} captured bytes (garbage or wrong byte order)"
                )),
                start,
            ));
        }
        let n = incl_len as usize;
        self.fill(n, "packet data", start, false)?;
        let frac_ns = if nanos {
            i64::from(frac)
        } else {
            i64::from(frac) * 1000
        };
        Ok(Some(Packet {
            interface_id: 0,
            link_type: self.interfaces.first().map_or(0, |i| i.link_type),
            interface_name: None,
            ts_ns: i64::from(secs) * 1_000_000_000 + frac_ns,
            orig_len,
            data: &self.buf()[..n],
        }))
    }

    /// Reads the rest of an SHB whose block type (4 bytes) was read at `start`.
    fn read_shb_rest(&mut self, start: u64) -> Result<(), Error> {
        // total length (4) + byte-order magic (4)
        self.fill(8, "section header block", start, false)?;
        let bom = [self.buf()[4], self.buf()[5], self.buf()[6], self.buf()[7]];
        self.endian = if u32::from_le_bytes(bom) == BYTE_ORDER_MAGIC {
            Endian::Little
        } else if u32::from_be_bytes(bom) == BYTE_ORDER_MAGIC {
            Endian::Big
        } else {
            return Err(Error::new(
                ErrorKind::Invalid("section header block has no byte-order magic".into()),
                start,
            ));
        };
        let total = self.endian.u32(&self.buf()[0..4]);
        check_block_len(total, 28, start)?;
        // The rest: version, section length, options, trailing length.
        self.fill(total as usize - 12, "section header block", start, false)?;
        self.interfaces.clear();
        Ok(())
    }

    fn next_pcapng(&mut self) -> Result<Option<Packet<'_>>, Error> {
        loop {
            let start = self.offset;
            if !self.fill(4, "block header", start, true)? {
                return Ok(None);
            }
            let raw_type = [self.buf()[0], self.buf()[1], self.buf()[2], self.buf()[3]];
            if u32::from_le_bytes(raw_type) == PCAPNG_SHB {
                self.read_shb_rest(start)?;
                continue;
            }
            let block_type = self.endian.u32(&raw_type);
            self.fill(4, "block header", start, false)?;
            let total = self.endian.u32(&self.buf()[0..4]);
            check_block_len(total, 12, start)?;
            let body_len = total as usize - 12;
            // body + trailing length
            self.fill(body_len + 4, "block", start, false)?;
            let e = self.endian;
            let trailer = e.u32(&self.buf()[body_len..body_len + 4]);
            if trailer != total {
                return Err(Error::new(
                    ErrorKind::Invalid(format!(
                        "block length {total} does not match trailing length {trailer}"
                    )),
                    start,
                ));
            }
            match block_type {
                1 => self.parse_idb(body_len, start)?,
                6 | 2 => {
                    // EPB: if_id(4) ts_hi(4) ts_lo(4) caplen(4) origlen(4) data.
                    // Obsolete PB: if_id(2) drops(2) then the same.
                    if body_len < 20 {
                        return Err(invalid("packet block shorter than its header", start));
                    }
                    let b = &self.buf()[..body_len];
                    let if_id = if block_type == 6 {
                        e.u32(&b[0..4])
                    } else {
                        u32::from(e.u16(&b[0..2]))
                    };
                    let ticks = (u64::from(e.u32(&b[4..8])) << 32) | u64::from(e.u32(&b[8..12]));
                    let caplen = e.u32(&b[12..16]) as usize;
                    let orig_len = e.u32(&b[16..20]);
                    if caplen > body_len - 20 {
                        return Err(invalid("captured length exceeds the block", start));
                    }
                    let Some(iface) = self.interfaces.get(if_id as usize) else {
                        return Err(invalid(
                            &format!("packet refers to undeclared interface {if_id}"),
                            start,
                        ));
                    };
                    let ts_ns = iface
                        .ts_resol
                        .to_ns(ticks)
                        .saturating_add(iface.ts_offset_s.saturating_mul(1_000_000_000));
                    let link_type = iface.link_type;
                    return Ok(Some(Packet {
                        interface_id: if_id,
                        link_type,
                        interface_name: iface.name.as_deref(),
                        ts_ns,
                        orig_len,
                        data: &self.buf()[20..20 + caplen],
                    }));
                }
                3 => {
                    // SPB: origlen(4) data (captured length = min(origlen, snaplen, body)).
                    if body_len < 4 {
                        return Err(invalid(
                            "simple packet block shorter than its header",
                            start,
                        ));
                    }
                    let Some(iface) = self.interfaces.first() else {
                        return Err(invalid("simple packet block before any interface", start));
                    };
                    let orig_len = e.u32(&self.buf()[0..4]);
                    let mut caplen = (orig_len as usize).min(body_len - 4);
                    if iface.snaplen != 0 {
                        caplen = caplen.min(iface.snaplen as usize);
                    }
                    let link_type = iface.link_type;
                    return Ok(Some(Packet {
                        interface_id: 0,
                        link_type,
                        interface_name: iface.name.as_deref(),
                        ts_ns: 0,
                        orig_len,
                        data: &self.buf()[4..4 + caplen],
                    }));
                }
                _ => continue,
            }
        }
    }

    fn parse_idb(&mut self, body_len: usize, start: u64) -> Result<(), Error> {
        if body_len < 8 {
            return Err(invalid("interface description block too short", start));
        }
        let e = self.endian;
        let b = &self.buf()[..body_len];
        let mut iface = Interface {
            link_type: u32::from(e.u16(&b[0..2])),
            snaplen: e.u32(&b[4..8]),
            name: None,
            ts_resol: TsResol::Decimal(6),
            ts_offset_s: 0,
        };
        let mut opts = &b[8..];
        while opts.len() >= 4 {
            let code = e.u16(&opts[0..2]);
            let len = usize::from(e.u16(&opts[2..4]));
            let Some(val) = opts.get(4..4 + len) else {
                return Err(invalid("interface option runs past the block", start));
            };
            match code {
                0 => break,
                2 => iface.name = Some(String::from_utf8_lossy(val).into_owned()),
                9 if len >= 1 => iface.ts_resol = TsResol::from_option(val[0]),
                14 if len >= 8 => iface.ts_offset_s = e.u64(val) as i64,
                _ => {}
            }
            let padded = (len + 3) & !3;
            opts = opts.get(4 + padded..).unwrap_or(&[]);
        }
        self.interfaces.push(iface);
        Ok(())
    }
}

fn invalid(msg: &str, at: u64) -> Error {
    Error::new(ErrorKind::Invalid(msg.to_owned()), at)
}

fn check_block_len(total: u32, min: u32, start: u64) -> Result<(), Error> {
    if total < min || !total.is_multiple_of(4) || total > MAX_RECORD_LEN {
        return Err(invalid(
            &format!("block length {total} is not a multiple of 4 in [{min}, {MAX_RECORD_LEN}]"),
            start,
        ));
    }
    Ok(())
}

/// Reads until `buf` is full or EOF; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap_bytes(be: bool, nanos: bool) -> Vec<u8> {
        let magic = if nanos { PCAP_MAGIC_NS } else { PCAP_MAGIC_US };
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut f = Vec::new();
        f.extend_from_slice(&w32(magic));
        f.extend_from_slice(&w16(2));
        f.extend_from_slice(&w16(4));
        f.extend_from_slice(&[0; 8]);
        f.extend_from_slice(&w32(65535));
        f.extend_from_slice(&w32(1));
        for (i, data) in [&b"abc"[..], &b"defgh"[..]].iter().enumerate() {
            f.extend_from_slice(&w32(1_700_000_000 + i as u32));
            f.extend_from_slice(&w32(123));
            f.extend_from_slice(&w32(data.len() as u32));
            f.extend_from_slice(&w32(60));
            f.extend_from_slice(data);
        }
        f
    }

    #[test]
    fn pcap_all_magics() {
        for be in [false, true] {
            for nanos in [false, true] {
                let f = pcap_bytes(be, nanos);
                let mut r = Reader::new(&f[..]).unwrap();
                assert_eq!(r.format(), Format::Pcap { nanos });
                let p = r.next_packet().unwrap().unwrap();
                let frac = if nanos { 123 } else { 123_000 };
                assert_eq!(p.ts_ns, 1_700_000_000 * 1_000_000_000 + frac);
                assert_eq!((p.data, p.orig_len, p.link_type), (&b"abc"[..], 60, 1));
                assert_eq!(r.next_packet().unwrap().unwrap().data, b"defgh");
                assert!(r.next_packet().unwrap().is_none());
            }
        }
    }

    #[test]
    fn truncated_pcap_names_the_offset() {
        let f = pcap_bytes(false, false);
        let mut r = Reader::new(&f[..f.len() - 2]).unwrap();
        r.next_packet().unwrap();
        let err = r.next_packet().unwrap_err();
        assert_eq!(err.offset(), 24 + 16 + 3);
        assert!(err.to_string().contains("truncated"), "{err}");
        let err = Reader::new(&f[..10]).err().unwrap();
        assert!(err.to_string().contains("pcap file header"), "{err}");
        let err = Reader::new(&b"GIF89a.........................."[..])
            .err()
            .unwrap();
        assert!(
            err.to_string().starts_with("not a pcap or pcapng file"),
            "{err}"
        );
    }

    /// Builds a pcapng section by hand: SHB, two IDBs (µs and 2^-20 s), EPBs on each, an
    /// SPB and an unknown block.
    fn pcapng_bytes(be: bool) -> Vec<u8> {
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut f = Vec::new();
        let block = |f: &mut Vec<u8>, ty: u32, body: &[u8]| {
            let total = 12 + body.len() as u32;
            f.extend_from_slice(&w32(ty));
            f.extend_from_slice(&w32(total));
            f.extend_from_slice(body);
            f.extend_from_slice(&w32(total));
        };
        let mut shb = Vec::new();
        shb.extend_from_slice(&w32(BYTE_ORDER_MAGIC));
        shb.extend_from_slice(&w16(1));
        shb.extend_from_slice(&w16(0));
        shb.extend_from_slice(&[0xff; 8]);
        block(&mut f, PCAPNG_SHB, &shb);
        for (name, resol) in [(&b"eth0"[..], 6u8), (&b"mlx5_0"[..], 0x80 | 20)] {
            let mut idb = Vec::new();
            idb.extend_from_slice(&w16(1));
            idb.extend_from_slice(&w16(0));
            idb.extend_from_slice(&w32(0));
            idb.extend_from_slice(&w16(2));
            idb.extend_from_slice(&w16(name.len() as u16));
            idb.extend_from_slice(name);
            idb.resize((idb.len() + 3) & !3, 0);
            idb.extend_from_slice(&w16(9));
            idb.extend_from_slice(&w16(1));
            idb.extend_from_slice(&[resol, 0, 0, 0]);
            idb.extend_from_slice(&[0; 4]);
            block(&mut f, 1, &idb);
        }
        for (if_id, ticks) in [(0u32, 1_700_000_000_000_001u64), (1, 3 << 20)] {
            let mut epb = Vec::new();
            epb.extend_from_slice(&w32(if_id));
            epb.extend_from_slice(&w32((ticks >> 32) as u32));
            epb.extend_from_slice(&w32(ticks as u32));
            epb.extend_from_slice(&w32(5));
            epb.extend_from_slice(&w32(64));
            epb.extend_from_slice(b"hello\0\0\0");
            block(&mut f, 6, &epb);
        }
        block(&mut f, 0x0bad, &[1, 2, 3, 4]);
        let mut spb = Vec::new();
        spb.extend_from_slice(&w32(3));
        spb.extend_from_slice(b"xyz\0");
        block(&mut f, 3, &spb);
        f
    }

    #[test]
    fn pcapng_both_endians_two_interfaces() {
        for be in [false, true] {
            let f = pcapng_bytes(be);
            let mut r = Reader::new(&f[..]).unwrap();
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!(
                (p.interface_id, p.ts_ns, p.data),
                (0, 1_700_000_000_000_001_000, &b"hello"[..])
            );
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!(
                (p.interface_id, p.ts_ns, p.orig_len),
                (1, 3_000_000_000, 64)
            );
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!((p.ts_ns, p.data), (0, &b"xyz"[..]));
            assert!(r.next_packet().unwrap().is_none());
            assert_eq!(r.interfaces()[1].name.as_deref(), Some("mlx5_0"));
            assert_eq!(r.interfaces()[1].ts_resol, TsResol::Binary(20));
        }
    }

    #[test]
    fn pcapng_garbage_and_cuts() {
        let f = pcapng_bytes(false);
        // Every cut either ends cleanly at a block boundary or fails with an offset.
        for len in 0..f.len() {
            let res = Reader::new(&f[..len]).and_then(|mut r| {
                while r.next_packet()?.is_some() {}
                Ok(())
            });
            if let Err(e) = res {
                assert!(e.offset() <= len as u64, "{e}");
            }
        }
        // A bad block length.
        let mut g = f.clone();
        g[28 + 4..28 + 8].copy_from_slice(&7u32.to_le_bytes());
        let mut r = Reader::new(&g[..]).unwrap();
        let e = r.next_packet().unwrap_err();
        assert_eq!(e.offset(), 28);
        assert!(e.to_string().contains("block length 7"), "{e}");
    }

    #[test]
    fn tsresol_conversion() {
        assert_eq!(TsResol::Decimal(9).to_ns(5), 5);
        assert_eq!(TsResol::Decimal(3).to_ns(5), 5_000_000);
        assert_eq!(TsResol::Decimal(12).to_ns(5_000), 5);
        assert_eq!(TsResol::Binary(10).to_ns(1024), 1_000_000_000);
        assert_eq!(TsResol::Decimal(0).to_ns(u64::MAX), i64::MAX);
    }
}
