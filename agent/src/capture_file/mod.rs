//! Capture files: the pcapng writer for windows, and a reader for pcap/pcapng.
//!
//! The writer is our own (about a hundred lines): it must set `if_tsresol = 9`
//! (pcap-file 2.0 does not, see CRATES.md), stream packets straight out of ring
//! records without copying, and put the trigger comment in the section header,
//! which is only known when the window closes. So a window writes its packet
//! blocks to a body file as they arrive, and [`pcapng::assemble`] writes the
//! header blocks then appends the body (`copy_file_range` under `io::copy`).

pub mod pcapng;
pub mod reader;
