//! Atomic Acknowledge Extended Transport Header (AtomicAckETH, 8 bytes): the original
//! remote value returned by an ATOMIC Acknowledge.

mod field {
    use crate::wire::Field;
    pub const ORIG_DATA: Field = 0..8;
}

/// Length of the AtomicAckETH in bytes.
pub const HEADER_LEN: usize = field::ORIG_DATA.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// The remote data before the atomic operation.
    pub fn orig_remote_data(&self) -> u64 {
        super::be_u64(&self.buffer.as_ref()[field::ORIG_DATA])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields() {
        let b = 0x0102_0304_0506_0708u64.to_be_bytes();
        let p = super::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.orig_remote_data(), 0x0102_0304_0506_0708);
        assert!(super::Packet::new_checked(&b[..7]).is_err());
    }
}
