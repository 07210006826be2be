//! Base Transport Header (BTH, IBTA vol. 1 §9.2): the 12 bytes every InfiniBand and RoCE
//! transport packet starts with.
//!
//! ```text
//!  0       1               2               4               5               8       9               12
//! +-------+-+-+---+-------+---------------+-+-+-----------+---------------+-+-----+---------------+
//! |OpCode |S|M|Pad| TVer  |    P_Key      |F|B|  Resv6    |    DestQP     |A|Resv7|      PSN      |
//! +-------+-+-+---+-------+---------------+-+-+-----------+---------------+-+-----+---------------+
//! ```
//!
//! [`Opcode`] keeps what it does not know ([`Opcode::Unknown`]) so a strange opcode is
//! reported, not rejected. [`Opcode::ext_headers`] is the IBTA table of which extended
//! transport headers follow the BTH; [`super::ib::Transport`] walks them.

use super::Result;
use core::fmt;

mod field {
    use crate::wire::Field;
    pub const OPCODE: usize = 0;
    /// SE (bit 7), MigReq (bit 6), PadCnt (bits 5:4), TVer (bits 3:0).
    pub const FLAGS: usize = 1;
    pub const PKEY: Field = 2..4;
    /// FECN (bit 7), BECN (bit 6), 6 reserved bits.
    pub const FECN_BECN: usize = 4;
    pub const DEST_QP: Field = 5..8;
    /// AckReq (bit 7), 7 reserved bits.
    pub const ACKREQ: usize = 8;
    pub const PSN: Field = 9..12;
}

/// Length of the BTH in bytes.
pub const HEADER_LEN: usize = field::PSN.end;

/// Largest PSN value plus one: PSNs are 24-bit and wrap.
pub const PSN_MODULUS: u32 = 1 << 24;

/// The transport service an opcode belongs to (opcode bits 7:5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Reliable Connection (0x00–0x1f).
    Rc,
    /// Unreliable Connection (0x20–0x3f).
    Uc,
    /// Reliable Datagram (0x40–0x5f).
    Rd,
    /// Unreliable Datagram (0x60–0x7f).
    Ud,
    /// Extended Reliable Connection (0xa0–0xbf).
    Xrc,
}

impl Service {
    /// The abbreviation used by IBTA and tshark ("RC", "UD", …).
    pub fn name(self) -> &'static str {
        match self {
            Service::Rc => "RC",
            Service::Uc => "UC",
            Service::Rd => "RD",
            Service::Ud => "UD",
            Service::Xrc => "XRC",
        }
    }
}

/// The operation an opcode names (opcode bits 4:0), common to all services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Operation {
    SendFirst = 0x00,
    SendMiddle = 0x01,
    SendLast = 0x02,
    SendLastImm = 0x03,
    SendOnly = 0x04,
    SendOnlyImm = 0x05,
    WriteFirst = 0x06,
    WriteMiddle = 0x07,
    WriteLast = 0x08,
    WriteLastImm = 0x09,
    WriteOnly = 0x0a,
    WriteOnlyImm = 0x0b,
    ReadRequest = 0x0c,
    ReadResponseFirst = 0x0d,
    ReadResponseMiddle = 0x0e,
    ReadResponseLast = 0x0f,
    ReadResponseOnly = 0x10,
    Acknowledge = 0x11,
    AtomicAcknowledge = 0x12,
    CompareSwap = 0x13,
    FetchAdd = 0x14,
    SendLastInvalidate = 0x16,
    SendOnlyInvalidate = 0x17,
}

impl Operation {
    fn from_bits(v: u8) -> Option<Operation> {
        use Operation::*;
        Some(match v {
            0x00 => SendFirst,
            0x01 => SendMiddle,
            0x02 => SendLast,
            0x03 => SendLastImm,
            0x04 => SendOnly,
            0x05 => SendOnlyImm,
            0x06 => WriteFirst,
            0x07 => WriteMiddle,
            0x08 => WriteLast,
            0x09 => WriteLastImm,
            0x0a => WriteOnly,
            0x0b => WriteOnlyImm,
            0x0c => ReadRequest,
            0x0d => ReadResponseFirst,
            0x0e => ReadResponseMiddle,
            0x0f => ReadResponseLast,
            0x10 => ReadResponseOnly,
            0x11 => Acknowledge,
            0x12 => AtomicAcknowledge,
            0x13 => CompareSwap,
            0x14 => FetchAdd,
            0x16 => SendLastInvalidate,
            0x17 => SendOnlyInvalidate,
            _ => return None,
        })
    }

    /// IBTA name of the operation ("SEND First", "RDMA READ Response Only", …).
    pub fn name(self) -> &'static str {
        use Operation::*;
        match self {
            SendFirst => "SEND First",
            SendMiddle => "SEND Middle",
            SendLast => "SEND Last",
            SendLastImm => "SEND Last with Immediate",
            SendOnly => "SEND Only",
            SendOnlyImm => "SEND Only with Immediate",
            WriteFirst => "RDMA WRITE First",
            WriteMiddle => "RDMA WRITE Middle",
            WriteLast => "RDMA WRITE Last",
            WriteLastImm => "RDMA WRITE Last with Immediate",
            WriteOnly => "RDMA WRITE Only",
            WriteOnlyImm => "RDMA WRITE Only with Immediate",
            ReadRequest => "RDMA READ Request",
            ReadResponseFirst => "RDMA READ Response First",
            ReadResponseMiddle => "RDMA READ Response Middle",
            ReadResponseLast => "RDMA READ Response Last",
            ReadResponseOnly => "RDMA READ Response Only",
            Acknowledge => "Acknowledge",
            AtomicAcknowledge => "ATOMIC Acknowledge",
            CompareSwap => "CmpSwap",
            FetchAdd => "FetchAdd",
            SendLastInvalidate => "SEND Last with Invalidate",
            SendOnlyInvalidate => "SEND Only with Invalidate",
        }
    }

    /// Whether the packet is sent by the responder (READ responses and ACKs).
    pub fn is_response(self) -> bool {
        (Operation::ReadResponseFirst as u8..=Operation::AtomicAcknowledge as u8)
            .contains(&(self as u8))
    }
}

/// A BTH opcode: a service and an operation, the Congestion Notification Packet, or a value
/// this parser does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// A defined operation of one of the transport services.
    Op(Service, Operation),
    /// RoCE v2 Congestion Notification Packet (0x81).
    Cnp,
    /// Reserved or manufacturer-specific opcode, kept as is.
    Unknown(u8),
}

/// Opcode value of the RoCE v2 Congestion Notification Packet.
pub const OPCODE_CNP: u8 = 0x81;

impl From<u8> for Opcode {
    fn from(v: u8) -> Opcode {
        let op = Operation::from_bits(v & 0x1f);
        let service = match v >> 5 {
            0 => Service::Rc,
            1 => Service::Uc,
            2 => Service::Rd,
            3 => Service::Ud,
            5 => Service::Xrc,
            _ if v == OPCODE_CNP => return Opcode::Cnp,
            _ => return Opcode::Unknown(v),
        };
        let Some(op) = op else {
            return Opcode::Unknown(v);
        };
        let allowed = match service {
            Service::Rc | Service::Xrc => true,
            Service::Uc => (op as u8) <= Operation::WriteOnlyImm as u8,
            Service::Rd => (op as u8) <= Operation::FetchAdd as u8,
            Service::Ud => matches!(op, Operation::SendOnly | Operation::SendOnlyImm),
        };
        if allowed {
            Opcode::Op(service, op)
        } else {
            Opcode::Unknown(v)
        }
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        match op {
            Opcode::Op(service, op) => {
                let base = match service {
                    Service::Rc => 0x00,
                    Service::Uc => 0x20,
                    Service::Rd => 0x40,
                    Service::Ud => 0x60,
                    Service::Xrc => 0xa0,
                };
                base | op as u8
            }
            Opcode::Cnp => OPCODE_CNP,
            Opcode::Unknown(v) => v,
        }
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opcode::Op(s, op) => write!(f, "{} {}", s.name(), op.name()),
            Opcode::Cnp => f.write_str("CNP"),
            Opcode::Unknown(v) => write!(f, "Unknown opcode 0x{v:02x}"),
        }
    }
}

/// Which extended transport headers follow the BTH, in wire order
/// (RDETH, DETH, XRCETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtHeaders {
    pub rdeth: bool,
    pub deth: bool,
    pub xrceth: bool,
    pub reth: bool,
    pub atomic_eth: bool,
    pub aeth: bool,
    pub atomic_ack_eth: bool,
    pub immdt: bool,
    pub ieth: bool,
    /// CNP: 16 reserved bytes.
    pub cnp: bool,
}

impl Opcode {
    /// The extended headers this opcode carries, per the IBTA opcode table (vol. 1 §9.2).
    pub fn ext_headers(self) -> ExtHeaders {
        use Operation::*;
        let mut h = ExtHeaders::default();
        let (service, op) = match self {
            Opcode::Op(s, op) => (s, op),
            Opcode::Cnp => {
                h.cnp = true;
                return h;
            }
            Opcode::Unknown(_) => return h,
        };
        match service {
            Service::Rd => {
                h.rdeth = true;
                h.deth = !op.is_response();
            }
            Service::Ud => h.deth = true,
            Service::Xrc => h.xrceth = !op.is_response(),
            Service::Rc | Service::Uc => {}
        }
        h.reth = matches!(op, WriteFirst | WriteOnly | WriteOnlyImm | ReadRequest);
        h.atomic_eth = matches!(op, CompareSwap | FetchAdd);
        h.aeth = matches!(
            op,
            ReadResponseFirst
                | ReadResponseLast
                | ReadResponseOnly
                | Acknowledge
                | AtomicAcknowledge
        );
        h.atomic_ack_eth = op == AtomicAcknowledge;
        h.immdt = matches!(op, SendLastImm | SendOnlyImm | WriteLastImm | WriteOnlyImm);
        h.ieth = matches!(op, SendLastInvalidate | SendOnlyInvalidate);
        h
    }

    /// The service, if the opcode is a defined operation.
    pub fn service(self) -> Option<Service> {
        match self {
            Opcode::Op(s, _) => Some(s),
            _ => None,
        }
    }

    /// The operation, if the opcode is a defined operation.
    pub fn operation(self) -> Option<Operation> {
        match self {
            Opcode::Op(_, op) => Some(op),
            _ => None,
        }
    }
}

super::view!(HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The raw opcode byte.
    pub fn opcode_raw(&self) -> u8 {
        self.b()[field::OPCODE]
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode::from(self.opcode_raw())
    }

    /// Solicited Event.
    pub fn se(&self) -> bool {
        self.b()[field::FLAGS] & 0x80 != 0
    }

    /// Migration request.
    pub fn migreq(&self) -> bool {
        self.b()[field::FLAGS] & 0x40 != 0
    }

    /// Pad count (0–3 bytes appended to the payload).
    pub fn pad(&self) -> u8 {
        (self.b()[field::FLAGS] >> 4) & 0x3
    }

    /// Transport header version.
    pub fn tver(&self) -> u8 {
        self.b()[field::FLAGS] & 0x0f
    }

    /// Partition key.
    pub fn pkey(&self) -> u16 {
        let b = &self.b()[field::PKEY];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Forward ECN: the packet met congestion on its way.
    pub fn fecn(&self) -> bool {
        self.b()[field::FECN_BECN] & 0x80 != 0
    }

    /// Backward ECN: congestion was seen on the reverse path (set in CNPs).
    pub fn becn(&self) -> bool {
        self.b()[field::FECN_BECN] & 0x40 != 0
    }

    /// The 6 reserved bits of byte 4 (some NICs set them; tshark shows the byte as
    /// `infiniband.reserved`).
    pub fn reserved6(&self) -> u8 {
        self.b()[field::FECN_BECN] & 0x3f
    }

    /// Destination queue pair number (24 bits).
    pub fn dest_qp(&self) -> u32 {
        be24(&self.b()[field::DEST_QP])
    }

    /// Acknowledge request.
    pub fn ackreq(&self) -> bool {
        self.b()[field::ACKREQ] & 0x80 != 0
    }

    /// Packet sequence number (24 bits).
    pub fn psn(&self) -> u32 {
        be24(&self.b()[field::PSN])
    }

    /// The bytes after the BTH.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bm(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Sets the opcode.
    pub fn set_opcode(&mut self, op: Opcode) {
        self.bm()[field::OPCODE] = u8::from(op);
    }

    /// Sets SE, MigReq, PadCnt (masked to 2 bits) and TVer (masked to 4 bits).
    pub fn set_flags(&mut self, se: bool, migreq: bool, pad: u8, tver: u8) {
        self.bm()[field::FLAGS] =
            (u8::from(se) << 7) | (u8::from(migreq) << 6) | ((pad & 0x3) << 4) | (tver & 0x0f);
    }

    /// Sets the partition key.
    pub fn set_pkey(&mut self, pkey: u16) {
        self.bm()[field::PKEY].copy_from_slice(&pkey.to_be_bytes());
    }

    /// Sets FECN and BECN; the reserved bits become 0.
    pub fn set_fecn_becn(&mut self, fecn: bool, becn: bool) {
        self.bm()[field::FECN_BECN] = (u8::from(fecn) << 7) | (u8::from(becn) << 6);
    }

    /// Sets the destination QP (masked to 24 bits).
    pub fn set_dest_qp(&mut self, qp: u32) {
        self.bm()[field::DEST_QP].copy_from_slice(&qp.to_be_bytes()[1..]);
    }

    /// Sets AckReq; the reserved bits become 0.
    pub fn set_ackreq(&mut self, a: bool) {
        self.bm()[field::ACKREQ] = u8::from(a) << 7;
    }

    /// Sets the PSN (masked to 24 bits).
    pub fn set_psn(&mut self, psn: u32) {
        self.bm()[field::PSN].copy_from_slice(&psn.to_be_bytes()[1..]);
    }
}

pub(crate) fn be24(b: &[u8]) -> u32 {
    (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2])
}

/// The meaning of a BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub opcode: Opcode,
    pub se: bool,
    pub migreq: bool,
    /// Pad count, 0–3.
    pub pad: u8,
    /// Transport header version, 0–15 (0 today).
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// 24-bit destination QP.
    pub dest_qp: u32,
    pub ackreq: bool,
    /// 24-bit packet sequence number.
    pub psn: u32,
}

impl Repr {
    /// Reads a checked BTH.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        Ok(Repr {
            opcode: packet.opcode(),
            se: packet.se(),
            migreq: packet.migreq(),
            pad: packet.pad(),
            tver: packet.tver(),
            pkey: packet.pkey(),
            fecn: packet.fecn(),
            becn: packet.becn(),
            dest_qp: packet.dest_qp(),
            ackreq: packet.ackreq(),
            psn: packet.psn(),
        })
    }

    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header; out-of-range values are masked to their field width and reserved
    /// bits are written as 0. The buffer must hold at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_opcode(self.opcode);
        packet.set_flags(self.se, self.migreq, self.pad, self.tver);
        packet.set_pkey(self.pkey);
        packet.set_fecn_becn(self.fecn, self.becn);
        packet.set_dest_qp(self.dest_qp);
        packet.set_ackreq(self.ackreq);
        packet.set_psn(self.psn);
    }
}

/// Signed distance `a - b` of two 24-bit PSNs, in `[-2^23, 2^23)`: how far
/// `a` is ahead of `b` (negative: behind), across the wrap at 2^24.
pub fn psn_distance(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & (PSN_MODULUS - 1);
    if d >= PSN_MODULUS / 2 {
        d as i32 - PSN_MODULUS as i32
    } else {
        d as i32
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn psn_distance_wraps_at_24_bits() {
        assert_eq!(super::psn_distance(0, 0xff_ffff), 1);
        assert_eq!(super::psn_distance(0xff_ffff, 0), -1);
        assert_eq!(super::psn_distance(5, 3), 2);
        assert_eq!(super::psn_distance(3, 5), -2);
        assert_eq!(super::psn_distance(0x80_0000, 0), -0x80_0000);
    }

    use super::*;
    use crate::wire::Error;

    /// BTH of frame 2 of `public-hexdumps_roce_snippets.pcap` (RC RDMA READ Request,
    /// QP 0x000011, PSN 5557091, AckReq).
    const READ_REQ: [u8; 12] = [
        0x0c, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x54, 0xcb, 0x63,
    ];

    #[test]
    fn parse_real_read_request() {
        let p = Packet::new_checked(&READ_REQ[..]).unwrap();
        assert_eq!(p.opcode(), Opcode::Op(Service::Rc, Operation::ReadRequest));
        assert_eq!(p.dest_qp(), 0x11);
        assert_eq!(p.psn(), 5557091);
        assert!(p.ackreq());
        assert_eq!(p.pkey(), 0xffff);
        assert!(p.opcode().ext_headers().reth);
    }

    #[test]
    fn short_buffer_is_rejected() {
        assert_eq!(Packet::new_checked(&READ_REQ[..11]), Err(Error));
    }

    #[test]
    fn repr_round_trip() {
        let repr = Repr {
            opcode: Opcode::Cnp,
            se: true,
            migreq: false,
            pad: 3,
            tver: 0,
            pkey: 0x8001,
            fecn: false,
            becn: true,
            dest_qp: 0xabcdef,
            ackreq: true,
            psn: 0xffffff,
        };
        let mut buf = [0u8; HEADER_LEN];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        let back = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(back, repr);
    }

    #[test]
    fn every_opcode_byte_round_trips() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Opcode::from(v)), v);
        }
        assert_eq!(Opcode::from(0x81), Opcode::Cnp);
        assert_eq!(
            Opcode::from(0x64),
            Opcode::Op(Service::Ud, Operation::SendOnly)
        );
        assert_eq!(Opcode::from(0x66), Opcode::Unknown(0x66));
        assert_eq!(Opcode::from(0x2c), Opcode::Unknown(0x2c)); // UC has no READ
        assert_eq!(Opcode::from(0x15), Opcode::Unknown(0x15));
    }

    #[test]
    fn ext_header_table() {
        let h = Opcode::from(0x0b).ext_headers(); // RC WRITE Only with Immediate
        assert!(h.reth && h.immdt && !h.aeth);
        let h = Opcode::from(0x12).ext_headers(); // RC ATOMIC Acknowledge
        assert!(h.aeth && h.atomic_ack_eth);
        let h = Opcode::from(0x4d).ext_headers(); // RD READ Response First
        assert!(h.rdeth && !h.deth && h.aeth);
        let h = Opcode::from(0x65).ext_headers(); // UD SEND Only with Immediate
        assert!(h.deth && h.immdt);
        assert!(Opcode::from(0x0e).ext_headers() == ExtHeaders::default());
    }
}
