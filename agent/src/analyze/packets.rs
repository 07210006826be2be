//! `--packets`: one tab-separated row per RoCE/InfiniBand packet with a BTH, in tshark's
//! conventions, so that `tshark -Y infiniband -T fields …` is an exact oracle:
//!
//! | column | tshark field | format |
//! | --- | --- | --- |
//! | `frame` | `frame.number` | 1-based index over all frames of the file |
//! | `time_epoch` | `frame.time_epoch` | seconds with 9 decimals (ERF: the ERF timestamp) |
//! | `src`, `dst` | `ip.src`/`ipv6.src`; `infiniband.grh.sgid`; `infiniband.lrh.slid` | IP for RoCE v2, GID for RoCE v1 and routed IB, decimal LID otherwise |
//! | `opcode` | `infiniband.bth.opcode` | decimal |
//! | `dest_qp` | `infiniband.bth.destqp` | `0x%06x` |
//! | `psn` | `infiniband.bth.psn` | decimal |
//! | `ackreq` | `infiniband.bth.a` | 0/1 |
//! | `aeth_syndrome` | `infiniband.aeth.syndrome` | decimal, empty without AETH |
//!
//! A header line with these names comes first. The loop allocates nothing per packet.

use std::io::{self, Read, Write};

use crate::capture_file::reader::{self, Reader};
use crate::wire::{self, Frame};

/// Column names of the table, in order.
pub const COLUMNS: [&str; 9] = [
    "frame",
    "time_epoch",
    "src",
    "dst",
    "opcode",
    "dest_qp",
    "psn",
    "ackreq",
    "aeth_syndrome",
];

/// Why writing the table stopped.
#[derive(Debug)]
pub enum Failure {
    /// The capture file is broken.
    Read(reader::Error),
    /// The output failed.
    Write(io::Error),
}

/// Writes the header and one row per RoCE/IB packet.
pub fn write<R: Read>(reader: &mut Reader<R>, out: &mut dyn Write) -> Result<(), Failure> {
    writeln!(out, "{}", COLUMNS.join("\t")).map_err(Failure::Write)?;
    let mut frame_no: u64 = 0;
    while let Some(p) = reader.next_packet().map_err(Failure::Read)? {
        frame_no += 1;
        let Frame::Roce(r) = wire::parse_frame(p.link_type, p.data) else {
            continue;
        };
        let ts = wire::frame_timestamp_ns(p.link_type, p.data).unwrap_or(p.ts_ns);
        let bth = r.transport.bth();
        write!(
            out,
            "{frame_no}\t{}\t{}\t{}\t{}\t0x{:06x}\t{}\t{}\t",
            super::format_epoch(ts),
            r.src,
            r.dst,
            bth.opcode_raw(),
            bth.dest_qp(),
            bth.psn(),
            u8::from(bth.ackreq()),
        )
        .map_err(Failure::Write)?;
        match r.transport.aeth() {
            Some(a) => writeln!(out, "{}", a.syndrome_raw()),
            None => writeln!(out),
        }
        .map_err(Failure::Write)?;
    }
    Ok(())
}
