//! ACK Extended Transport Header (AETH, 4 bytes): the syndrome and MSN carried by
//! Acknowledge, ATOMIC Acknowledge and RDMA READ Response First/Last/Only packets.
//!
//! The syndrome byte (IBTA vol. 1 §9.7.5.1): bit 7 reserved, bits 6:5 the kind
//! (00 ACK, 01 RNR NAK, 10 reserved, 11 NAK), bits 4:0 the credit count, RNR timer code or
//! NAK code. [`Syndrome`] decodes it and keeps unknown values.

use super::{Error, Result};
use core::fmt;

mod field {
    use crate::wire::Field;
    pub const SYNDROME: usize = 0;
    pub const MSN: Field = 1..4;
}

/// Length of the AETH in bytes.
pub const HEADER_LEN: usize = field::MSN.end;

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// The raw syndrome byte (tshark's `infiniband.aeth.syndrome`).
    pub fn syndrome_raw(&self) -> u8 {
        self.buffer.as_ref()[field::SYNDROME]
    }
    /// The decoded syndrome.
    pub fn syndrome(&self) -> Syndrome {
        Syndrome::from(self.syndrome_raw())
    }
    /// Message sequence number (24 bits).
    pub fn msn(&self) -> u32 {
        super::bth::be24(&self.buffer.as_ref()[field::MSN])
    }
}

/// NAK codes (syndrome kind 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error: the responder expected another PSN (go-back-N follows).
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
    /// Reserved code.
    Unknown(u8),
}

impl NakCode {
    fn from_bits(v: u8) -> NakCode {
        match v {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            v => NakCode::Unknown(v),
        }
    }
    fn bits(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Unknown(v) => v & 0x1f,
        }
    }
}

/// A decoded AETH syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement; `credits` is the 5-bit credit count code (31 = invalid /
    /// end-to-end credits not used).
    Ack { credits: u8 },
    /// Receiver not ready; `timer` is the 5-bit RNR timer code (see [`rnr_timer_us`]).
    RnrNak { timer: u8 },
    /// Negative acknowledgement.
    Nak(NakCode),
    /// Reserved kind (bits 6:5 = 10) or the reserved bit 7 set: the raw byte.
    Reserved(u8),
}

impl From<u8> for Syndrome {
    fn from(v: u8) -> Syndrome {
        if v & 0x80 != 0 {
            return Syndrome::Reserved(v);
        }
        let low = v & 0x1f;
        match (v >> 5) & 0x3 {
            0 => Syndrome::Ack { credits: low },
            1 => Syndrome::RnrNak { timer: low },
            3 => Syndrome::Nak(NakCode::from_bits(low)),
            _ => Syndrome::Reserved(v),
        }
    }
}

impl From<Syndrome> for u8 {
    fn from(s: Syndrome) -> u8 {
        match s {
            Syndrome::Ack { credits } => credits & 0x1f,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(code) => 0x60 | code.bits(),
            Syndrome::Reserved(v) => v,
        }
    }
}

impl fmt::Display for Syndrome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Syndrome::Ack { credits } => write!(f, "ACK (credits code {credits})"),
            Syndrome::RnrNak { timer } => {
                let us = rnr_timer_us(*timer);
                write!(
                    f,
                    "RNR NAK (timer {}.{:02} ms)",
                    us / 1000,
                    (us % 1000) / 10
                )
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => f.write_str("NAK PSN sequence error"),
            Syndrome::Nak(NakCode::InvalidRequest) => f.write_str("NAK invalid request"),
            Syndrome::Nak(NakCode::RemoteAccessError) => f.write_str("NAK remote access error"),
            Syndrome::Nak(NakCode::RemoteOperationalError) => {
                f.write_str("NAK remote operational error")
            }
            Syndrome::Nak(NakCode::InvalidRdRequest) => f.write_str("NAK invalid RD request"),
            Syndrome::Nak(NakCode::Unknown(c)) => write!(f, "NAK reserved code {c}"),
            Syndrome::Reserved(v) => write!(f, "reserved syndrome 0x{v:02x}"),
        }
    }
}

/// The RNR NAK timer in microseconds for a 5-bit timer code (IBTA vol. 1 table 45;
/// code 0 means 655.36 ms).
pub fn rnr_timer_us(code: u8) -> u32 {
    const TABLE: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
        245_760, 327_680, 491_520,
    ];
    TABLE[usize::from(code & 0x1f)]
}

/// The meaning of an AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub syndrome: Syndrome,
    /// 24-bit message sequence number.
    pub msn: u32,
}

impl Repr {
    /// Reads an AETH.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            syndrome: packet.syndrome(),
            msn: packet.msn(),
        })
    }

    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf` (MSN masked to 24 bits).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let b = buf.get_mut(..HEADER_LEN).ok_or(Error)?;
        b[field::SYNDROME] = u8::from(self.syndrome);
        b[field::MSN].copy_from_slice(&self.msn.to_be_bytes()[1..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_syndromes() {
        // oferby-proxy_roce.pcap frame 16: syndrome 6 (ACK, credit count 6), MSN 1.
        let p = Packet::new_checked(&[0x06, 0x00, 0x00, 0x01][..]).unwrap();
        assert_eq!(p.syndrome(), Syndrome::Ack { credits: 6 });
        assert_eq!(p.msn(), 1);
        assert_eq!(Syndrome::from(0x1f), Syndrome::Ack { credits: 31 });
        assert_eq!(Syndrome::from(0x2e), Syndrome::RnrNak { timer: 14 });
        assert_eq!(rnr_timer_us(14), 1280);
        assert_eq!(
            Syndrome::from(0x60),
            Syndrome::Nak(NakCode::PsnSequenceError)
        );
        assert_eq!(
            Syndrome::from(0x63),
            Syndrome::Nak(NakCode::RemoteOperationalError)
        );
        assert_eq!(
            Syndrome::from(0x64),
            Syndrome::Nak(NakCode::InvalidRdRequest)
        );
        assert_eq!(Syndrome::from(0x45), Syndrome::Reserved(0x45));
        for v in 0..=255u8 {
            assert_eq!(u8::from(Syndrome::from(v)), v);
        }
    }

    #[test]
    fn repr_round_trip() {
        let r = Repr {
            syndrome: Syndrome::RnrNak { timer: 14 },
            msn: 0x123456,
        };
        let mut buf = [0u8; HEADER_LEN];
        r.emit(&mut buf).unwrap();
        assert_eq!(Repr::parse(&Packet::new_checked(&buf[..]).unwrap()), Ok(r));
        assert!(Packet::new_checked(&buf[..3]).is_err());
    }
}
