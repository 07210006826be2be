//! Local Route Header (LRH, 8 bytes): the link header of native InfiniBand, as found in
//! ERF InfiniBand records (see [`super::erf`]). Not present in RoCE.

mod field {
    use crate::wire::Field;
    /// VL (4 bits), LVer (4 bits).
    pub const VL_LVER: usize = 0;
    /// SL (4 bits), reserved (2), LNH (2).
    pub const SL_LNH: usize = 1;
    pub const DLID: Field = 2..4;
    /// reserved (5 bits), PktLen in 4-byte words (11 bits).
    pub const PKTLEN: Field = 4..6;
    pub const SLID: Field = 6..8;
}

/// Length of the LRH in bytes.
pub const HEADER_LEN: usize = field::SLID.end;

/// What follows the LRH (Link Next Header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHeader {
    /// Raw packet (no IBA transport).
    Raw,
    /// Raw IPv6 (non-IBA transport).
    Ipv6,
    /// IBA transport (BTH) directly.
    IbaLocal,
    /// GRH, then IBA transport.
    IbaGlobal,
}

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Virtual lane.
    pub fn vl(&self) -> u8 {
        self.b()[field::VL_LVER] >> 4
    }
    /// Service level.
    pub fn sl(&self) -> u8 {
        self.b()[field::SL_LNH] >> 4
    }
    /// Link next header.
    pub fn next_header(&self) -> NextHeader {
        match self.b()[field::SL_LNH] & 0x3 {
            0 => NextHeader::Raw,
            1 => NextHeader::Ipv6,
            2 => NextHeader::IbaLocal,
            _ => NextHeader::IbaGlobal,
        }
    }
    /// Destination LID.
    pub fn dlid(&self) -> u16 {
        let b = &self.b()[field::DLID];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Packet length in 4-byte words (LRH to ICRC/VCRC inclusive).
    pub fn pkt_len_words(&self) -> u16 {
        let b = &self.b()[field::PKTLEN];
        u16::from_be_bytes([b[0], b[1]]) & 0x07ff
    }
    /// Source LID.
    pub fn slid(&self) -> u16 {
        let b = &self.b()[field::SLID];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// The bytes after the LRH.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_smp() {
        // wireshark-wiki_infiniband_erf.pcap frame 1: VL 15, LNH 2, DLID/SLID 0xffff.
        let b = [0xf0, 0x02, 0xff, 0xff, 0x00, 0x48, 0xff, 0xff];
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.vl(), 15);
        assert_eq!(p.next_header(), NextHeader::IbaLocal);
        assert_eq!(
            (p.dlid(), p.slid(), p.pkt_len_words()),
            (0xffff, 0xffff, 0x48)
        );
        assert!(Packet::new_checked(&b[..7]).is_err());
    }
}
