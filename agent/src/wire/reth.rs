//! RDMA Extended Transport Header (RETH, 16 bytes): the remote buffer of an RDMA WRITE
//! (First/Only) or READ Request.

use super::{Error, Result};

mod field {
    use crate::wire::Field;
    pub const VA: Field = 0..8;
    pub const R_KEY: Field = 8..12;
    pub const DMA_LEN: Field = 12..16;
}

/// Length of the RETH in bytes.
pub const HEADER_LEN: usize = field::DMA_LEN.end;

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
    /// Length of the whole DMA transfer in bytes.
    pub fn dma_len(&self) -> u32 {
        super::be_u32(&self.buffer.as_ref()[field::DMA_LEN])
    }
}

/// The meaning of a RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub va: u64,
    pub r_key: u32,
    pub dma_len: u32,
}

impl Repr {
    /// Reads a RETH.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            va: packet.va(),
            r_key: packet.r_key(),
            dma_len: packet.dma_len(),
        })
    }

    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let b = buf.get_mut(..HEADER_LEN).ok_or(Error)?;
        b[field::VA].copy_from_slice(&self.va.to_be_bytes());
        b[field::R_KEY].copy_from_slice(&self.r_key.to_be_bytes());
        b[field::DMA_LEN].copy_from_slice(&self.dma_len.to_be_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RETH of frame 2 of `public-hexdumps_roce_snippets.pcap` (tshark: va 0x00007fee260fb000,
    /// r_key 0x000002b8, dmalen 65536).
    const REAL: [u8; 16] = [
        0x00, 0x00, 0x7f, 0xee, 0x26, 0x0f, 0xb0, 0x00, 0x00, 0x00, 0x02, 0xb8, 0x00, 0x01, 0x00,
        0x00,
    ];

    #[test]
    fn parse_real() {
        let r = Repr::parse(&Packet::new_checked(&REAL[..]).unwrap()).unwrap();
        assert_eq!(r.va, 0x7fee_260f_b000);
        assert_eq!(r.r_key, 0x2b8);
        assert_eq!(r.dma_len, 65536);
        let mut buf = [0u8; 16];
        r.emit(&mut buf).unwrap();
        assert_eq!(buf, REAL);
        assert!(Packet::new_checked(&REAL[..15]).is_err());
        assert!(r.emit(&mut [0u8; 15]).is_err());
    }
}
