//! Immediate Data Extended Transport Header (ImmDt, 4 bytes): SEND/WRITE "with Immediate".

mod field {
    use crate::wire::Field;
    pub const DATA: Field = 0..4;
}

/// Length of the ImmDt header in bytes.
pub const HEADER_LEN: usize = field::DATA.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// The 32-bit immediate value (network order, as tshark shows it).
    pub fn data(&self) -> u32 {
        super::be_u32(&self.buffer.as_ref()[field::DATA])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields() {
        let p = super::Packet::new_checked(&[0, 0, 0, 1][..]).unwrap();
        assert_eq!(p.data(), 1);
        assert!(super::Packet::new_checked(&[0u8; 3][..]).is_err());
    }
}
