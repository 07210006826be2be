//! The InfiniBand transport layer of one packet: the BTH and the extended transport headers
//! its opcode announces, located without copying.
//!
//! [`Transport::parse`] fails only if the BTH itself is cut. If an extended header is cut
//! (a snaplen-limited capture), the headers that fit stay available and
//! [`Transport::is_truncated`] says the rest is missing: tshark shows such packets too, with
//! the fields it could read.

use super::bth::{self, ExtHeaders, Opcode};
use super::Result;
use super::{aeth, atomic_ack_eth, atomic_eth, cnp, deth, ieth, immdt, rdeth, reth, xrceth};

/// Offsets (from the start of the BTH) of the extended headers present; 0 = absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Offsets {
    rdeth: u8,
    deth: u8,
    xrceth: u8,
    pub(super) reth: u8,
    atomic_eth: u8,
    pub(super) aeth: u8,
    atomic_ack_eth: u8,
    immdt: u8,
    ieth: u8,
    cnp: u8,
}

/// A checked view of BTH + extended headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transport<'a> {
    data: &'a [u8],
    opcode: Opcode,
    off: Offsets,
    headers_end: usize,
    truncated: bool,
}

/// Where an opcode's extended headers sit in a packet of `len` bytes (from the BTH), where
/// they end, and whether one is cut off.
fn layout(opcode: Opcode, len: usize) -> (Offsets, usize, bool) {
    let ExtHeaders {
        rdeth,
        deth,
        xrceth,
        reth,
        atomic_eth,
        aeth,
        atomic_ack_eth,
        immdt,
        ieth,
        cnp,
    } = opcode.ext_headers();
    let mut off = Offsets::default();
    let mut pos = bth::HEADER_LEN;
    let mut truncated = false;
    // Wire order per IBTA vol. 1 §9.2.
    let layout: [(bool, usize, &mut u8); 10] = [
        (rdeth, rdeth::HEADER_LEN, &mut off.rdeth),
        (deth, deth::HEADER_LEN, &mut off.deth),
        (xrceth, xrceth::HEADER_LEN, &mut off.xrceth),
        (reth, reth::HEADER_LEN, &mut off.reth),
        (atomic_eth, atomic_eth::HEADER_LEN, &mut off.atomic_eth),
        (aeth, aeth::HEADER_LEN, &mut off.aeth),
        (
            atomic_ack_eth,
            atomic_ack_eth::HEADER_LEN,
            &mut off.atomic_ack_eth,
        ),
        (immdt, immdt::HEADER_LEN, &mut off.immdt),
        (ieth, ieth::HEADER_LEN, &mut off.ieth),
        (cnp, cnp::HEADER_LEN, &mut off.cnp),
    ];
    for (present, hlen, slot) in layout {
        if !present {
            continue;
        }
        if pos + hlen > len {
            truncated = true;
            break;
        }
        // At most 12 + 4 + 8 + 4 + 28 + … < 256: fits in u8.
        *slot = pos as u8;
        pos += hlen;
    }
    (off, pos.min(len), truncated)
}

/// An opcode byte's [`Opcode`] and the layout of a packet that holds all its headers.
/// The one table of extended-header layouts: [`Transport::parse`] reads it, and so does
/// `headers_len`, which cuts every captured packet with it.
#[derive(Debug, Clone, Copy)]
pub(super) struct FullLayout {
    pub(super) opcode: Opcode,
    /// Offsets from the start of the BTH.
    pub(super) off: Offsets,
    /// The end of the last extended header, from the start of the BTH.
    pub(super) end: u8,
}

/// [`FullLayout`] of every opcode byte, worked out once.
pub(super) fn layouts() -> &'static [FullLayout; 256] {
    static TABLE: std::sync::OnceLock<[FullLayout; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        std::array::from_fn(|byte| {
            let opcode = Opcode::from(byte as u8);
            let (off, end, _) = layout(opcode, usize::MAX);
            FullLayout {
                opcode,
                off,
                end: u8::try_from(end).unwrap_or(u8::MAX),
            }
        })
    })
}

impl<'a> Transport<'a> {
    /// Locates the BTH and the extended headers at the start of `data`.
    #[inline]
    pub fn parse(data: &'a [u8]) -> Result<Transport<'a>> {
        let bth = bth::Packet::new_checked(data)?;
        // The layout of a whole packet comes from a table per opcode byte; only a packet
        // cut inside its extended headers is worked out again.
        let full = &layouts()[usize::from(data[0])];
        let (off, end, truncated) = if usize::from(full.end) <= data.len() {
            (full.off, usize::from(full.end), false)
        } else {
            layout(full.opcode, data.len())
        };
        debug_assert_eq!(bth.opcode(), full.opcode);
        Ok(Transport {
            data,
            opcode: full.opcode,
            off,
            headers_end: end,
            truncated,
        })
    }

    /// The BTH.
    pub fn bth(&self) -> bth::Packet<&'a [u8]> {
        bth::Packet::new_unchecked(self.data)
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// Whether an extended header the opcode announces is cut off.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    fn at(&self, off: u8, len: usize) -> Option<&'a [u8]> {
        if off == 0 {
            return None;
        }
        let start = usize::from(off);
        self.data.get(start..start + len)
    }

    /// RDETH, if present and captured.
    pub fn rdeth(&self) -> Option<rdeth::Packet<&'a [u8]>> {
        self.at(self.off.rdeth, rdeth::HEADER_LEN)
            .map(rdeth::Packet::new_unchecked)
    }
    /// DETH, if present and captured.
    pub fn deth(&self) -> Option<deth::Packet<&'a [u8]>> {
        self.at(self.off.deth, deth::HEADER_LEN)
            .map(deth::Packet::new_unchecked)
    }
    /// XRCETH, if present and captured.
    pub fn xrceth(&self) -> Option<xrceth::Packet<&'a [u8]>> {
        self.at(self.off.xrceth, xrceth::HEADER_LEN)
            .map(xrceth::Packet::new_unchecked)
    }
    /// RETH, if present and captured.
    pub fn reth(&self) -> Option<reth::Packet<&'a [u8]>> {
        self.at(self.off.reth, reth::HEADER_LEN)
            .map(reth::Packet::new_unchecked)
    }
    /// AtomicETH, if present and captured.
    pub fn atomic_eth(&self) -> Option<atomic_eth::Packet<&'a [u8]>> {
        self.at(self.off.atomic_eth, atomic_eth::HEADER_LEN)
            .map(atomic_eth::Packet::new_unchecked)
    }
    /// AETH, if present and captured.
    pub fn aeth(&self) -> Option<aeth::Packet<&'a [u8]>> {
        self.at(self.off.aeth, aeth::HEADER_LEN)
            .map(aeth::Packet::new_unchecked)
    }
    /// AtomicAckETH, if present and captured.
    pub fn atomic_ack_eth(&self) -> Option<atomic_ack_eth::Packet<&'a [u8]>> {
        self.at(self.off.atomic_ack_eth, atomic_ack_eth::HEADER_LEN)
            .map(atomic_ack_eth::Packet::new_unchecked)
    }
    /// ImmDt, if present and captured.
    pub fn immdt(&self) -> Option<immdt::Packet<&'a [u8]>> {
        self.at(self.off.immdt, immdt::HEADER_LEN)
            .map(immdt::Packet::new_unchecked)
    }
    /// IETH, if present and captured.
    pub fn ieth(&self) -> Option<ieth::Packet<&'a [u8]>> {
        self.at(self.off.ieth, ieth::HEADER_LEN)
            .map(ieth::Packet::new_unchecked)
    }
    /// CNP body, if this is a CNP and it was captured.
    pub fn cnp(&self) -> Option<cnp::Packet<&'a [u8]>> {
        self.at(self.off.cnp, cnp::HEADER_LEN)
            .map(cnp::Packet::new_unchecked)
    }

    /// Everything after the headers (payload, pad and ICRC, as far as captured).
    pub fn payload(&self) -> &'a [u8] {
        &self.data[self.headers_end..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::aeth::Syndrome;

    fn bth(opcode: u8) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[0] = opcode;
        b
    }

    /// The table per opcode byte gives what working the layout out for the packet's length
    /// gives, for every opcode byte cut at every length.
    #[test]
    fn the_layout_table_agrees_with_the_layout_at_every_length() {
        let mut data = [0u8; 96];
        for byte in 0..=255u8 {
            data[0] = byte;
            for len in 0..data.len() {
                let Ok(t) = Transport::parse(&data[..len]) else {
                    assert!(len < bth::HEADER_LEN, "{byte:#x} at {len}");
                    continue;
                };
                let (off, end, truncated) = layout(Opcode::from(byte), len);
                assert_eq!(
                    (t.opcode, t.off, t.headers_end, t.truncated),
                    (Opcode::from(byte), off, end, truncated),
                    "{byte:#x} at {len}"
                );
            }
        }
    }

    #[test]
    fn write_only_imm_headers() {
        let mut d = bth(0x0b).to_vec();
        d.extend_from_slice(&[0; 16]); // RETH
        d.extend_from_slice(&[0, 0, 0, 7]); // ImmDt
        d.extend_from_slice(&[0xaa; 8]); // payload
        let t = Transport::parse(&d).unwrap();
        assert!(t.reth().is_some());
        assert_eq!(t.immdt().map(|i| i.data()), Some(7));
        assert!(t.aeth().is_none());
        assert!(!t.is_truncated());
        assert_eq!(t.payload(), &[0xaa; 8]);
    }

    #[test]
    fn cut_ext_header_keeps_bth() {
        let mut d = bth(0x11).to_vec();
        d.extend_from_slice(&[0x60, 0]); // half an AETH
        let t = Transport::parse(&d).unwrap();
        assert!(t.is_truncated());
        assert!(t.aeth().is_none());
        assert!(t.payload().len() == 2);
        d.extend_from_slice(&[0, 1]);
        let t = Transport::parse(&d).unwrap();
        assert_eq!(
            t.aeth().map(|a| a.syndrome()),
            Some(Syndrome::Nak(crate::wire::aeth::NakCode::PsnSequenceError))
        );
        assert!(Transport::parse(&d[..11]).is_err());
    }

    #[test]
    fn atomic_ack_order() {
        let mut d = bth(0x12).to_vec();
        d.extend_from_slice(&[0x1f, 0, 0, 9]);
        d.extend_from_slice(&42u64.to_be_bytes());
        let t = Transport::parse(&d).unwrap();
        assert_eq!(t.aeth().map(|a| a.msn()), Some(9));
        assert_eq!(t.atomic_ack_eth().map(|a| a.orig_remote_data()), Some(42));
    }
}
