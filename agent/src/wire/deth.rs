//! Datagram Extended Transport Header (DETH, 8 bytes): Q_Key and source QP of UD (and RD
//! request) packets.

mod field {
    use crate::wire::Field;
    pub const Q_KEY: Field = 0..4;
    pub const SRC_QP: Field = 5..8;
}

/// Length of the DETH in bytes.
pub const HEADER_LEN: usize = field::SRC_QP.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// Queue key.
    pub fn q_key(&self) -> u32 {
        super::be_u32(&self.buffer.as_ref()[field::Q_KEY])
    }
    /// Source QP (24 bits).
    pub fn src_qp(&self) -> u32 {
        super::bth::be24(&self.buffer.as_ref()[field::SRC_QP])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields() {
        // rdma_cm ConnectRequest to QP1 (montybeatnik captures): Q_Key 0x80010000, src QP 1.
        let b = [0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01];
        let p = super::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.q_key(), p.src_qp()), (0x8001_0000, 1));
        assert!(super::Packet::new_checked(&b[..7]).is_err());
    }
}
