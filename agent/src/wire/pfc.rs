//! MAC Control frames (ethertype 0x8808): IEEE 802.1Qbb Priority Flow Control (opcode
//! 0x0101: class-enable vector + 8 pause quanta) and IEEE 802.3x PAUSE (opcode 0x0001:
//! one pause time). A quantum is 512 bit times; 0 means XON (resume).
//!
//! MAC Control frames are padded to the 46-byte minimum payload, so [`HEADER_LEN`] covers
//! the PFC layout for both opcodes and no accessor needs its own length check.

mod field {
    use crate::wire::Field;
    pub const OPCODE: Field = 0..2;
    /// PFC: class-enable vector (low 8 bits). PAUSE: pause time.
    pub const PARAM0: Field = 2..4;
    pub const QUANTA: Field = 4..20;
}

/// Length of the parsed part of a MAC Control frame, in bytes.
pub const HEADER_LEN: usize = field::QUANTA.end;

/// Ethertype of MAC Control frames.
pub const ETHERTYPE: u16 = 0x8808;

/// A MAC Control opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// 802.3x PAUSE (0x0001).
    Pause,
    /// 802.1Qbb Priority Flow Control (0x0101).
    Pfc,
    /// Any other MAC Control opcode.
    Unknown(u16),
}

impl From<u16> for Opcode {
    fn from(v: u16) -> Opcode {
        match v {
            0x0001 => Opcode::Pause,
            0x0101 => Opcode::Pfc,
            v => Opcode::Unknown(v),
        }
    }
}

impl From<Opcode> for u16 {
    fn from(o: Opcode) -> u16 {
        match o {
            Opcode::Pause => 0x0001,
            Opcode::Pfc => 0x0101,
            Opcode::Unknown(v) => v,
        }
    }
}

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    fn u16_at(&self, off: usize) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[off], b[off + 1]])
    }
    /// The MAC Control opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode::from(self.u16_at(field::OPCODE.start))
    }
    /// PFC: bit `c` set means the quanta of priority `c` are valid.
    pub fn class_enable_vector(&self) -> u8 {
        (self.u16_at(field::PARAM0.start) & 0xff) as u8
    }
    /// PFC: pause quanta of priority `class` (0–7; other values give 0).
    pub fn quanta(&self, class: u8) -> u16 {
        if class > 7 {
            return 0;
        }
        self.u16_at(field::QUANTA.start + 2 * usize::from(class))
    }
    /// 802.3x PAUSE: pause time in quanta.
    pub fn pause_time(&self) -> u16 {
        self.u16_at(field::PARAM0.start)
    }
    /// Priorities paused by this frame (enabled with non-zero quanta) as a bit mask; for
    /// 802.3x PAUSE, all priorities if the pause time is non-zero.
    pub fn paused_mask(&self) -> u8 {
        match self.opcode() {
            Opcode::Pfc => {
                let cev = self.class_enable_vector();
                (0..8u8)
                    .filter(|&c| cev & (1 << c) != 0 && self.quanta(c) != 0)
                    .fold(0, |m, c| m | (1 << c))
            }
            Opcode::Pause if self.pause_time() != 0 => 0xff,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_xoff_prio3() {
        // synthetic_roce_default.pcap frame 531: PFC, enbv 0x0008, c3 = 65535.
        let mut b = [0u8; 46];
        b[0..2].copy_from_slice(&[0x01, 0x01]);
        b[2..4].copy_from_slice(&[0x00, 0x08]);
        b[10..12].copy_from_slice(&[0xff, 0xff]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.opcode(), Opcode::Pfc);
        assert_eq!(p.class_enable_vector(), 0x08);
        assert_eq!(p.quanta(3), 0xffff);
        assert_eq!(p.quanta(9), 0);
        assert_eq!(p.paused_mask(), 0x08);
        assert!(Packet::new_checked(&b[..19]).is_err());
    }

    #[test]
    fn pause_8023x() {
        let mut b = [0u8; 46];
        b[0..2].copy_from_slice(&[0x00, 0x01]);
        b[2..4].copy_from_slice(&[0x12, 0x34]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.opcode(), Opcode::Pause);
        assert_eq!(p.pause_time(), 0x1234);
        assert_eq!(p.paused_mask(), 0xff);
    }
}
