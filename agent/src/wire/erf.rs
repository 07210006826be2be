//! Endace ERF record header (pcap link type 197): 16 bytes, optional 8-byte extension
//! headers, then the captured frame. tripcap reads ERF so the native-InfiniBand sample
//! capture can be decoded; ERF type 21 (InfiniBand) carries an LRH, the Ethernet types
//! carry 2 bytes of padding and an Ethernet frame.
//!
//! The ERF timestamp (32.32 fixed point, little endian) is more precise than the pcap
//! record's; tshark uses it, and so does [`Packet::timestamp_ns`] with tshark's rounding.

mod field {
    use crate::wire::Field;
    pub const TS: Field = 0..8;
    pub const TYPE: usize = 8;
    pub const FLAGS: usize = 9;
    pub const RLEN: Field = 10..12;
    pub const LCTR: Field = 12..14;
    pub const WLEN: Field = 14..16;
}

/// Length of the fixed ERF header in bytes.
pub const HEADER_LEN: usize = field::WLEN.end;

/// ERF record type of InfiniBand.
pub const TYPE_INFINIBAND: u8 = 21;
/// ERF record type of InfiniBand link-layer frames.
pub const TYPE_INFINIBAND_LINK: u8 = 25;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Record type without the extension-header bit.
    pub fn record_type(&self) -> u8 {
        self.b()[field::TYPE] & 0x7f
    }
    /// Flags byte.
    pub fn flags(&self) -> u8 {
        self.b()[field::FLAGS]
    }
    /// Record length including this header.
    pub fn rlen(&self) -> u16 {
        let b = &self.b()[field::RLEN];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Loss counter / colour.
    pub fn lctr(&self) -> u16 {
        let b = &self.b()[field::LCTR];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Wire length.
    pub fn wlen(&self) -> u16 {
        let b = &self.b()[field::WLEN];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// The raw 32.32 fixed-point timestamp.
    pub fn timestamp_raw(&self) -> u64 {
        let b = &self.b()[field::TS];
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_le_bytes(a)
    }
    /// Timestamp in nanoseconds since the epoch, rounded like Wireshark's wiretap.
    pub fn timestamp_ns(&self) -> i64 {
        let ts = self.timestamp_raw();
        let secs = (ts >> 32) as i64;
        let mut frac = (ts & 0xffff_ffff) * 1_000_000_000;
        frac += (frac & 0x8000_0000) << 1;
        let nsecs = (frac >> 32) as i64;
        secs * 1_000_000_000 + nsecs
    }
    /// The frame after the header and its extension headers (and, for Ethernet types, the
    /// 2 padding bytes); `None` if the extension-header chain is cut.
    pub fn frame(&self) -> Option<&[u8]> {
        let b = self.b();
        let mut off = HEADER_LEN;
        let mut more = b[field::TYPE] & 0x80 != 0;
        while more {
            let ext = b.get(off..off + 8)?;
            more = ext[0] & 0x80 != 0;
            off += 8;
        }
        if self.is_ethernet() {
            off += 2;
        }
        b.get(off..)
    }
    /// Whether the record type carries an Ethernet frame (ETH, COLOR_ETH, DSM_COLOR_ETH,
    /// COLOR_HASH_ETH).
    pub fn is_ethernet(&self) -> bool {
        matches!(self.record_type(), 2 | 10 | 16 | 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_timestamp() {
        let mut b = [0u8; 20];
        // 1210794479 s + 0x7fdf0000/2^32 s
        let ts: u64 = (1_210_794_479u64 << 32) | 0x7fec_1234;
        b[..8].copy_from_slice(&ts.to_le_bytes());
        b[8] = TYPE_INFINIBAND;
        b[10..12].copy_from_slice(&20u16.to_be_bytes());
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.record_type(), 21);
        assert_eq!(p.rlen(), 20);
        assert_eq!(p.frame().map(|f| f.len()), Some(4));
        assert_eq!(p.timestamp_ns() / 1_000_000_000, 1_210_794_479);
        // extension header bit set but no extension header: cut
        b[8] |= 0x80;
        assert_eq!(Packet::new_checked(&b[..]).unwrap().frame(), None);
        assert!(Packet::new_checked(&b[..15]).is_err());
    }
}
