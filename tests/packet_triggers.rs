//! Packet triggers on a replayed ring: a stall and a retransmission storm in a real-shaped
//! capture fire captures with their finding as the line; clean generated traffic fires
//! nothing.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tripcap::agent::{self, RunOptions};
use tripcap::config::Config;
use tripcap::packet_triggers::{PacketTriggerDef, PacketTriggerKind};
use tripcap::sidecar::Sidecar;
use tripcap::traffic::{self, Flow, Generator};
use tripcap::window::CaptureOutcome;

fn pcaps_dir() -> PathBuf {
    common::data_dir().join("pcaps")
}

/// Replays `files` (one ring interface each) through the agent with packet
/// triggers `defs`; returns every capture's sidecar.
fn replay_files(files: &[PathBuf], defs: Vec<PacketTriggerDef>) -> Vec<Sidecar> {
    replay_blocks(files, defs, None)
}

/// [`replay_files`] with ring blocks of `block_size` bytes.
fn replay_blocks(
    files: &[PathBuf],
    defs: Vec<PacketTriggerDef>,
    block_size: Option<u64>,
) -> Vec<Sidecar> {
    let out = tempfile::tempdir().expect("tempdir");
    let mut config = Config::default();
    if let Some(b) = block_size {
        config.ring.block_size = b;
    }
    config.output.dir = out.path().to_path_buf();
    config.output.reports = false;
    config.packet_triggers = defs;
    let opts = RunOptions {
        replay: files.to_vec(),
        ..RunOptions::default()
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        agent::run(config, opts, CancellationToken::new(), Some(tx))
            .await
            .expect("agent runs");
        let mut sidecars = Vec::new();
        while let Ok(o) = rx.try_recv() {
            match o {
                CaptureOutcome::Written { report, .. } => sidecars.push(*report),
                CaptureOutcome::Failed { error, .. } => panic!("capture failed: {error}"),
            }
        }
        sidecars
    })
}

fn replay_with(file: &Path, defs: Vec<PacketTriggerDef>) -> Vec<Sidecar> {
    replay_files(&[file.to_owned()], defs)
}

/// `count` frames of `flows` between 10.0.0.1 and 10.0.0.2, one every `step_ns`
/// from `t0` (replies go the other way).
fn flow_frames(
    flows: Vec<Flow>,
    payload_len: usize,
    t0: i64,
    step_ns: i64,
    count: i64,
) -> Vec<(i64, Vec<u8>)> {
    let mut g = Generator::new(flows, payload_len);
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut payload = Vec::new();
    (0..count)
        .map(|i| {
            let p = g.next_packet(&mut payload).expect("packet");
            let (s, d) = if p.reply { (b, a) } else { (a, b) };
            let mut f = Vec::new();
            traffic::frame(s, d, 50_000, &payload, &mut f);
            (t0 + i * step_ns, f)
        })
        .collect()
}

fn write_frames(path: &Path, frames: Vec<(i64, Vec<u8>)>) {
    let mut file = std::fs::File::create(path).expect("create");
    traffic::write_pcap(&mut file, 128, frames).expect("write");
}

fn def(name: &str, kind: PacketTriggerKind) -> PacketTriggerDef {
    let mut d = PacketTriggerDef::new(name, kind);
    d.pre = Some(Duration::from_millis(100));
    d.post = Some(Duration::from_millis(100));
    d.cooldown = Some(Duration::from_secs(60));
    d
}

#[test]
fn stall_and_retransmit_storm_fire_on_the_synthetic_capture() {
    let mut stall = def("stall", PacketTriggerKind::QpStall);
    stall.silent = Some(Duration::from_secs(1));
    let mut gbn = def("gbn", PacketTriggerKind::Retransmit);
    gbn.count = Some(3);
    gbn.within = Some(Duration::from_millis(50));
    let sidecars = replay_with(
        &pcaps_dir().join("synthetic_roce_default.pcap"),
        vec![stall, gbn],
    );
    let triggers: Vec<_> = sidecars.iter().flat_map(|s| s.triggers.iter()).collect();
    let stall = triggers
        .iter()
        .find(|t| t.name == "stall")
        .unwrap_or_else(|| panic!("no stall capture: {triggers:#?}"));
    assert_eq!(stall.class, "qp_stall");
    let line = stall.line.as_deref().unwrap_or("");
    assert!(
        line.starts_with("qp_stall: 10.0.0.1 > 10.0.0.2 QP 0x000203"),
        "{line}"
    );
    assert!(stall
        .groups
        .contains(&("qp".to_owned(), "0x000203".to_owned())));
    // Back-dated to the last packet before the 3 s pause (frame 455).
    let onset = stall.onset_ns.expect("onset");
    assert_eq!(onset, 1_700_000_000_019_393_000, "µs file: {line}");
    assert_eq!(stall.at_ns - onset, 1_000_000_000);
    let gbn = triggers
        .iter()
        .find(|t| t.name == "gbn")
        .unwrap_or_else(|| panic!("no retransmit capture: {triggers:#?}"));
    assert!(
        gbn.line
            .as_deref()
            .is_some_and(|l| l.starts_with("retransmit: 3 retransmissions")),
        "{gbn:?}"
    );
    assert_eq!(triggers.len(), 2, "each fired once: {triggers:#?}");
}

#[test]
fn clean_generated_traffic_fires_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("clean.pcap");
    let t0 = 1_800_000_000_000_000_000i64;
    let flows = vec![
        Flow::new(0x11, 0x21, 0xff_ff00, 4),
        Flow::new(0x12, 0x22, 5, 1),
    ];
    // One packet per 10 µs: 200 ms.
    write_frames(&path, flow_frames(flows, 256, t0, 10_000, 20_000));
    let mut stall = def("stall", PacketTriggerKind::QpStall);
    stall.silent = Some(Duration::from_millis(5));
    let rate = |name, kind| {
        let mut d = def(name, kind);
        d.count = Some(1);
        d
    };
    let defs = vec![
        stall,
        rate("gbn", PacketTriggerKind::Retransmit),
        rate("nak", PacketTriggerKind::NakRate),
        rate("cnp", PacketTriggerKind::CnpRate),
        rate("pfc", PacketTriggerKind::PfcStorm),
    ];
    let sidecars = replay_with(&path, defs);
    assert!(sidecars.is_empty(), "{sidecars:#?}");
}

#[test]
fn a_stall_still_going_fires_from_the_watermark() {
    // Requests then silence: the stall has no packet that ends it.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hang.pcap");
    let t0 = 1_800_000_000_000_000_000i64;
    let mut frames = flow_frames(vec![Flow::new(0x11, 0x21, 0, 4)], 256, t0, 10_000, 102);
    let mut payload = Vec::new();
    // An unrelated flow keeps the clock moving for 2 s while QP 0x11 is mid-message.
    let mut other = Generator::new(vec![Flow::new(0x99, 0x98, 0, 1)], 64);
    for i in 0..200i64 {
        other.next_packet(&mut payload).expect("packet");
        let mut f = Vec::new();
        traffic::frame(
            Ipv4Addr::new(10, 0, 0, 3),
            Ipv4Addr::new(10, 0, 0, 4),
            1,
            &payload,
            &mut f,
        );
        frames.push((t0 + 2_000_000 + i * 10_000_000, f));
    }
    write_frames(&path, frames);
    let mut stall = def("stall", PacketTriggerKind::QpStall);
    stall.silent = Some(Duration::from_millis(500));
    let sidecars = replay_with(&path, vec![stall]);
    let t: Vec<_> = sidecars.iter().flat_map(|s| s.triggers.iter()).collect();
    assert_eq!(t.len(), 1, "{t:#?}");
    let line = t[0].line.as_deref().unwrap_or("");
    assert!(line.contains("QP 0x000011 silent and still"), "{line}");
}

/// Two interfaces: a busy one whose 64 KiB blocks fill and seal every 20 ms of
/// capture time, and a quiet one whose blocks span 400 ms. The quiet queue pair
/// is healthy (a packet every millisecond, acknowledged every 4), but at the end
/// of each of its blocks a request is often outstanding, its answer in the next
/// block, still open while the busy interface delivers 400 ms more.
/// The packet triggers' clock is the lowest watermark across interfaces, so
/// the quiet interface's queue pair is not judged by the busy one's packets.
#[test]
fn a_late_sealing_interface_does_not_stall_falsely() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = 1_800_000_000_000_000_000i64;
    let write = |path: &Path, qp: u32, count: i64, step: i64| {
        write_frames(
            path,
            flow_frames(vec![Flow::new(qp, qp + 0x10, 0, 4)], 64, t0, step, count),
        );
    };
    let (busy, quiet) = (dir.path().join("busy.pcap"), dir.path().join("quiet.pcap"));
    write(&busy, 0x11, 40_000, 50_000); // 2 s, one packet every 50 µs
    write(&quiet, 0x22, 2_000, 1_000_000); // 2 s, one packet every 1 ms
    let mut stall = def("stall", PacketTriggerKind::QpStall);
    stall.silent = Some(Duration::from_millis(100));
    let sidecars = replay_blocks(&[busy, quiet], vec![stall], Some(64 << 10));
    let t: Vec<_> = sidecars.iter().flat_map(|s| s.triggers.iter()).collect();
    assert!(t.is_empty(), "no queue pair stalled: {t:#?}");
}
