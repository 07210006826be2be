//! Global Route Header (GRH, 40 bytes): IPv6-shaped header in front of the BTH in RoCE v1
//! (ethertype 0x8915) and in routed native InfiniBand (LRH LNH = 3).
//!
//! Its GIDs are formatted as IPv6 addresses, as tshark does (`::ffff:10.0.0.1` for
//! IPv4-mapped GIDs). The low 2 bits of the traffic class are the ECN bits in RoCE v1.

use core::net::Ipv6Addr;

mod field {
    use crate::wire::Field;
    /// IPVer (4 bits), TClass (8 bits), FlowLabel (20 bits).
    pub const VER_TC_FLOW: Field = 0..4;
    pub const PAYLEN: Field = 4..6;
    pub const NXTHDR: usize = 6;
    pub const HOPLMT: usize = 7;
    pub const SGID: Field = 8..24;
    pub const DGID: Field = 24..40;
}

/// Length of the GRH in bytes.
pub const HEADER_LEN: usize = field::DGID.end;

/// `NxtHdr` value announcing a BTH (IBA transport).
pub const NXTHDR_BTH: u8 = 0x1b;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    fn word0(&self) -> u32 {
        super::be_u32(&self.buffer.as_ref()[field::VER_TC_FLOW])
    }
    /// IP version field (6 on conforming senders).
    pub fn ip_ver(&self) -> u8 {
        (self.word0() >> 28) as u8
    }
    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }
    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }
    /// Payload length in bytes.
    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PAYLEN];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Next header ([`NXTHDR_BTH`] for IBA transport).
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXTHDR]
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOPLMT]
    }
    /// Source GID.
    pub fn sgid(&self) -> Ipv6Addr {
        gid(&self.buffer.as_ref()[field::SGID])
    }
    /// Destination GID.
    pub fn dgid(&self) -> Ipv6Addr {
        gid(&self.buffer.as_ref()[field::DGID])
    }
    /// The bytes after the GRH.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

fn gid(b: &[u8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(b);
    Ipv6Addr::from(a)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields() {
        let mut b = [0u8; 40];
        b[0] = 0x60;
        b[1] = 0x20; // traffic class 0x02 (ECT(0))
        b[6] = super::NXTHDR_BTH;
        b[7] = 64;
        b[18..24].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
        b[34..40].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 2]);
        let p = super::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.ip_ver(), 6);
        assert_eq!(p.traffic_class(), 2);
        assert_eq!(p.next_header(), 0x1b);
        assert_eq!(p.sgid().to_string(), "::ffff:10.0.0.1");
        assert_eq!(p.dgid().to_string(), "::ffff:10.0.0.2");
        assert!(super::Packet::new_checked(&b[..39]).is_err());
    }
}
