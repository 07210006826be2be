//! Atomic Extended Transport Header (AtomicETH, 28 bytes): CmpSwap and FetchAdd requests.

mod field {
    use crate::wire::Field;
    pub const VA: Field = 0..8;
    pub const R_KEY: Field = 8..12;
    pub const SWAP_ADD: Field = 12..20;
    pub const COMPARE: Field = 20..28;
}

/// Length of the AtomicETH in bytes.
pub const HEADER_LEN: usize = field::COMPARE.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        super::be_u64(&self.buffer.as_ref()[field::VA])
    }
    /// Remote key.
    pub fn r_key(&self) -> u32 {
        super::be_u32(&self.buffer.as_ref()[field::R_KEY])
    }
    /// Swap (CmpSwap) or add (FetchAdd) operand.
    pub fn swap_add(&self) -> u64 {
        super::be_u64(&self.buffer.as_ref()[field::SWAP_ADD])
    }
    /// Compare operand (CmpSwap).
    pub fn compare(&self) -> u64 {
        super::be_u64(&self.buffer.as_ref()[field::COMPARE])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields() {
        let mut b = [0u8; 28];
        b[7] = 1;
        b[11] = 2;
        b[19] = 3;
        b[27] = 4;
        let p = super::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.va(), p.r_key(), p.swap_add(), p.compare()), (1, 2, 3, 4));
        assert!(super::Packet::new_checked(&b[..27]).is_err());
    }
}
