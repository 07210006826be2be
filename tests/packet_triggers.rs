//! Packet triggers on a replayed ring: a stall and a retransmission storm in a real-shaped
//! capture fire captures with their finding as the line; clean generated traffic fires
//! nothing.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tripcap::capture::replay::{Replay, Speed};
use tripcap::packet_triggers::{self, PacketTriggerDef, PacketTriggerKind};
use tripcap::recorder::Recorder;
use tripcap::ring::{Ring, RingConfig, WATERMARK_END};
use tripcap::sidecar::Sidecar;
use tripcap::traffic::{self, Flow, Generator};
use tripcap::window::CaptureOutcome;

fn pcaps_dir() -> PathBuf {
    common::data_dir().join("pcaps")
}

/// Replays `file` through a ring watched by `defs`; returns every capture's sidecar.
fn replay_with(file: &Path, defs: Vec<PacketTriggerDef>) -> Vec<Sidecar> {
    let out = tempfile::tempdir().expect("tempdir");
    let replay = Replay::open(&[file.to_owned()]).expect("replay opens");
    let interfaces = Arc::new(replay.interfaces().to_vec());
    let ring = Ring::new(
        RingConfig {
            memory_limit: 16 << 20,
            block_size: 64 << 10,
            max_age: Duration::from_secs(600),
            prefault: 0,
        },
        interfaces.len(),
        replay.first_ts().map_or(i64::MIN, |t| t - 1),
    );
    let specs = defs.iter().map(PacketTriggerDef::spec).collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let recorder = Arc::new(Recorder::new(
        Arc::clone(&ring),
        Arc::clone(&interfaces),
        out.path().to_path_buf(),
        "host".into(),
        specs,
        Duration::from_secs(600),
        tx,
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let handle = packet_triggers::spawn(
        &ring,
        Arc::clone(&interfaces),
        Arc::clone(&recorder),
        defs.into_iter().enumerate().collect(),
        Arc::clone(&stop),
    )
    .expect("thread");
    replay.run(&ring, Speed::Max, Vec::new(), |_| {}, &stop);
    ring.advance_all(WATERMARK_END);
    handle.join().expect("packet trigger thread");
    recorder.join();
    let mut sidecars = Vec::new();
    while let Ok(o) = rx.try_recv() {
        match o {
            CaptureOutcome::Written { report, .. } => sidecars.push(*report),
            CaptureOutcome::Failed { error, .. } => panic!("capture failed: {error}"),
        }
    }
    sidecars
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
    let mut g = Generator::new(
        vec![
            Flow::new(0x11, 0x21, 0xff_ff00, 4),
            Flow::new(0x12, 0x22, 5, 1),
        ],
        256,
    );
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut payload = Vec::new();
    let mut frames = Vec::new();
    let t0 = 1_800_000_000_000_000_000i64;
    for i in 0..20_000i64 {
        let p = g.next_packet(&mut payload).expect("packet");
        let (s, d) = if p.reply { (b, a) } else { (a, b) };
        let mut f = Vec::new();
        traffic::frame(s, d, 50_000, &payload, &mut f);
        frames.push((t0 + i * 10_000, f)); // one packet per 10 µs: 200 ms
    }
    let mut file = std::fs::File::create(&path).expect("create");
    traffic::write_pcap(&mut file, 128, frames).expect("write");
    drop(file);
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
    let mut g = Generator::new(vec![Flow::new(0x11, 0x21, 0, 4)], 256);
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut payload = Vec::new();
    let mut frames = Vec::new();
    let t0 = 1_800_000_000_000_000_000i64;
    for i in 0..102i64 {
        let p = g.next_packet(&mut payload).expect("packet");
        let (s, d) = if p.reply { (b, a) } else { (a, b) };
        let mut f = Vec::new();
        traffic::frame(s, d, 50_000, &payload, &mut f);
        frames.push((t0 + i * 10_000, f));
    }
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
    let mut file = std::fs::File::create(&path).expect("create");
    traffic::write_pcap(&mut file, 128, frames).expect("write");
    drop(file);
    let mut stall = def("stall", PacketTriggerKind::QpStall);
    stall.silent = Some(Duration::from_millis(500));
    let sidecars = replay_with(&path, vec![stall]);
    let t: Vec<_> = sidecars.iter().flat_map(|s| s.triggers.iter()).collect();
    assert_eq!(t.len(), 1, "{t:#?}");
    let line = t[0].line.as_deref().unwrap_or("");
    assert!(line.contains("QP 0x000011 silent and still"), "{line}");
}
