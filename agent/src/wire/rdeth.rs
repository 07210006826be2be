//! Reliable Datagram Extended Transport Header (RDETH, 4 bytes): the EE context of RD
//! packets. Kept so the RD opcodes' headers can be walked; RD is rare in practice.

mod field {
    use crate::wire::Field;
    pub const EE_CONTEXT: Field = 1..4;
}

/// Length of the RDETH in bytes.
pub const HEADER_LEN: usize = field::EE_CONTEXT.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// End-to-end context (24 bits).
    pub fn ee_context(&self) -> u32 {
        super::bth::be24(&self.buffer.as_ref()[field::EE_CONTEXT])
    }
}
