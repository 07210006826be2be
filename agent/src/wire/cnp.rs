//! RoCE v2 Congestion Notification Packet (CNP, IBTA annex A17): a BTH with opcode 0x81
//! (BECN set, dest QP = the QP whose traffic was marked) followed by 16 reserved bytes.
//! Sent by the notification point when it receives ECN-CE packets (DCQCN).

mod field {
    use crate::wire::Field;
    pub const RESERVED: Field = 0..16;
}

/// Length of the CNP body after the BTH, in bytes.
pub const HEADER_LEN: usize = field::RESERVED.end;

pub use super::bth::OPCODE_CNP as OPCODE;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// The 16 reserved bytes (zero on conforming senders).
    pub fn reserved(&self) -> &[u8] {
        &self.buffer.as_ref()[field::RESERVED]
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reserved_bytes() {
        let b = [0u8; 16];
        assert!(super::Packet::new_checked(&b[..])
            .unwrap()
            .reserved()
            .iter()
            .all(|&x| x == 0));
        assert!(super::Packet::new_checked(&b[..15]).is_err());
    }
}
