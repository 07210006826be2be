//! Fuzzes the pcap/pcapng reader on arbitrary files: it must return packets or an error,
//! never panic, and never allocate past its record-size bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tripcap::capture_file::reader::Reader;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = Reader::new(data) else {
        return;
    };
    while let Ok(Some(p)) = reader.next_packet() {
        let _ = tripcap::wire::parse_frame(p.link_type, p.data);
    }
});
