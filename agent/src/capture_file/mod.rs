//! Capture files: the pcapng writer for windows, and a reader for pcap/pcapng.
//!
//! The writer is our own (a couple of hundred lines): it must set `if_tsresol = 9`
//! (pcap-file 2.0 does not, see CRATES.md), frame packets in place so the ring
//! can hold each one as the Enhanced Packet Block a file will hold
//! ([`pcapng::put_epb`]) and a window writes ring blocks without re-framing
//! them, and put the trigger comment in the section header, which is only known
//! when the window closes: a window reserves a fixed-size section header
//! ([`pcapng::section_header`]) and rewrites it in place at close.

pub mod pcapng;
pub mod reader;

/// The media type of a file of a capture unit, by its name: what uploads
/// and downloads announce.
pub fn media_type(file_name: &str) -> &'static str {
    if file_name.ends_with(".svg") {
        "image/svg+xml"
    } else if file_name.ends_with(".json") {
        "application/json"
    } else if file_name.ends_with(".pcapng") {
        "application/x-pcapng"
    } else {
        "application/octet-stream"
    }
}
