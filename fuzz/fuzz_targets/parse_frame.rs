//! Fuzzes `wire::parse_frame`: the first byte picks the link type, the rest is the frame.
//! Every accessor of the result is touched so that a panic anywhere below shows up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tripcap::wire::{self, linktype, Frame, FrameCounts};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let lt = match sel % 7 {
        0 => linktype::ETHERNET,
        1 => linktype::LINUX_SLL,
        2 => linktype::LINUX_SLL2,
        3 => linktype::RAW,
        4 => linktype::ERF,
        5 => linktype::INFINIBAND,
        _ => u32::from(sel),
    };
    let f = wire::parse_frame(lt, frame);
    let _ = wire::frame_timestamp_ns(lt, frame);
    let mut counts = FrameCounts::default();
    counts.add(&f);
    match f {
        Frame::Roce(r) => {
            let t = r.transport;
            let b = t.bth();
            let _ = (
                b.opcode(),
                b.psn(),
                b.dest_qp(),
                b.pkey(),
                b.ackreq(),
                b.becn(),
            );
            let _ = (r.src.to_string(), r.dst.to_string(), t.payload().len());
            let _ = t.reth().map(|h| (h.va(), h.r_key(), h.dma_len()));
            let _ = t.aeth().map(|h| (h.syndrome(), h.msn()));
            let _ = t.atomic_eth().map(|h| (h.va(), h.compare(), h.swap_add()));
            let _ = t.atomic_ack_eth().map(|h| h.orig_remote_data());
            let _ = t.deth().map(|h| (h.q_key(), h.src_qp()));
            let _ = (t.immdt().map(|h| h.data()), t.ieth().map(|h| h.r_key()));
            let _ = (
                t.rdeth().map(|h| h.ee_context()),
                t.xrceth().map(|h| h.xrc_srq()),
            );
        }
        Frame::MacControl(p) => {
            let _ = (p.opcode(), p.paused_mask(), p.pause_time(), p.quanta(7));
        }
        _ => {}
    }
});
