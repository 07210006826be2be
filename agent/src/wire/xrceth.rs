//! XRC Extended Transport Header (XRCETH, 4 bytes): the XRC SRQ of XRC requests.

mod field {
    use crate::wire::Field;
    pub const XRC_SRQ: Field = 1..4;
}

/// Length of the XRCETH in bytes.
pub const HEADER_LEN: usize = field::XRC_SRQ.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// XRC shared receive queue number (24 bits).
    pub fn xrc_srq(&self) -> u32 {
        super::bth::be24(&self.buffer.as_ref()[field::XRC_SRQ])
    }
}
