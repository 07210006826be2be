//! Invalidate Extended Transport Header (IETH, 4 bytes): SEND "with Invalidate".

mod field {
    use crate::wire::Field;
    pub const R_KEY: Field = 0..4;
}

/// Length of the IETH in bytes.
pub const HEADER_LEN: usize = field::R_KEY.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// The remote key to invalidate.
    pub fn r_key(&self) -> u32 {
        super::be_u32(&self.buffer.as_ref()[field::R_KEY])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields() {
        let p = super::Packet::new_checked(&[0, 0, 2, 0xb8][..]).unwrap();
        assert_eq!(p.r_key(), 0x2b8);
        assert!(super::Packet::new_checked(&[0u8; 3][..]).is_err());
    }
}
