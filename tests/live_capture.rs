//! Live: the agent captures on `lo` while this test sends real RoCE v2
//! datagrams at a steady rate and appends a matching log line. tcpdump
//! captures the same traffic at the same time (the oracle); tshark decodes
//! both files. The line says the collective ran for 600 s, so the window is
//! back-dated to before the agent started: the capture must say so and hold
//! exactly the oracle's packets from the start of capture to T+post, in
//! order, with nanosecond timestamps, and the comment.
//! Needs root (or CAP_NET_RAW), as CI has.

mod common;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::Duration;

use common::*;
use tripcap::traffic::{Flow, Generator, ROCE_PORT};

const SRC: Ipv4Addr = Ipv4Addr::new(127, 88, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(127, 88, 0, 2);

#[test]
fn live_capture_holds_exactly_the_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let log = logs.join("rank0.log");
    std::fs::write(&log, "NCCL INFO healthy line before the agent starts\n").expect("log");
    let oracle = dir.path().join("oracle.pcap");
    let filter = format!("udp port {ROCE_PORT} and host {DST}");

    let (mut tcpdump, _) = spawn_ready(
        Command::new("tcpdump")
            .args(["-i", "lo", "-n", "--time-stamp-precision=nano", "-U", "-w"])
            .arg(&oracle)
            .arg(&filter),
        "listening on",
        Duration::from_secs(20),
    );
    let (mut agent, agent_log) = spawn_ready(
        tripcap()
            .args([
                "run",
                "-i",
                "lo",
                "-f",
                &filter,
                "--pattern",
                "Watchdog caught collective operation timeout",
                "--pre",
                "1s",
                "--post",
                "1s",
                "-o",
            ])
            .arg(&out)
            .arg("--log")
            .arg(logs.join("*.log")),
        "capturing",
        Duration::from_secs(20),
    );

    // 4 s of traffic at 1000 packets/s on two QPs; the line at 2 s.
    let sock = UdpSocket::bind(SocketAddr::from((SRC, 0))).expect("bind");
    let to = SocketAddr::from((DST, ROCE_PORT));
    let mut g = Generator::new(
        vec![
            Flow::new(0x1a, 0x2a, 7, 4),
            Flow::new(0x1b, 0x2b, 0xff_fff0, 4),
        ],
        128,
    );
    let mut buf = Vec::new();
    paced(4000, Duration::from_millis(1), |i| {
        if i == 2000 {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .expect("append");
            writeln!(f, "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600050 milliseconds before timing out.").expect("write");
        }
        g.next_packet(&mut buf).expect("packet");
        sock.send_to(&buf, to).expect("send");
    });

    wait_until(Duration::from_secs(20), "the sidecar", || {
        sidecars(&out).len() == 1
    });
    assert!(
        interrupt(&mut agent).success(),
        "agent exit: {}",
        agent_log.lock().map(|l| l.clone()).unwrap_or_default()
    );
    interrupt(&mut tcpdump);

    let side = read_sidecar(&sidecars(&out)[0]);
    let pcapng = out.join(&side.file);
    assert_eq!(side.triggers.len(), 1);
    let t = &side.triggers[0];
    assert!(t
        .line
        .as_deref()
        .is_some_and(|l| l.contains("ran for 600050 milliseconds")));
    // The line says the collective ran for 600.05 s: the window starts
    // `pre` before that onset, long before the agent started, and says so.
    let onset = t.onset_ns.expect("onset from `ran for`");
    assert_eq!(onset, t.at_ns - 600_050_000_000);
    assert_eq!(side.window.asked_start_ns, onset - 1_000_000_000);
    assert_eq!(side.window.asked_end_ns, t.at_ns + 1_000_000_000);
    assert!(!side.window.complete);
    assert!(
        side.window
            .shortfall
            .iter()
            .any(|s| s.starts_with("tripcap started capturing at")),
        "{:?}",
        side.window.shortfall
    );
    assert!(side.window.covered_start_ns > onset && side.window.covered_start_ns < t.at_ns);
    assert_eq!(side.interfaces[0].tstamp_precision, "nano");

    let ours = tshark_rows(&pcapng);
    let expected: Vec<Row> = tshark_rows(&oracle)
        .into_iter()
        .filter(|r| r.ts >= side.window.covered_start_ns && r.ts <= side.window.asked_end_ns)
        .map(|r| Row {
            iface: "lo".into(),
            ..r
        })
        .collect();
    assert!(
        expected.len() > 1500,
        "the oracle saw {} packets in the window",
        expected.len()
    );
    assert_eq!(
        ours.len(),
        expected.len(),
        "packet count differs from tcpdump's capture"
    );
    assert_eq!(
        ours, expected,
        "packets (ts, qp, psn) differ from tcpdump's capture"
    );
    assert_eq!(side.packets, ours.len() as u64);
    // Nanosecond timestamps: not all multiples of 1000 ns.
    assert!(
        ours.iter().any(|r| r.ts % 1000 != 0),
        "timestamps look like microseconds"
    );

    let comments = capture_comments(&pcapng);
    assert!(
        comments
            .iter()
            .any(|c| c.contains("trigger pattern (custom)")
                && c.contains("Watchdog caught collective operation timeout")),
        "{comments:?}"
    );
    let mode = std::fs::metadata(&pcapng)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777)
        .expect("stat");
    assert_eq!(mode, 0o600);
}

/// `--snaplen headers` live on `lo`: every captured packet is cut exactly where
/// its headers end (`wire::headers_len` of the whole frame, which
/// tests/ring_codec.rs checks against tshark), its bytes those of tcpdump's full
/// copy, its original length kept; tshark reads the file.
#[test]
fn headers_snaplen_keeps_exactly_the_headers() {
    const DST_H: Ipv4Addr = Ipv4Addr::new(127, 88, 1, 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let log = dir.path().join("job.log");
    std::fs::write(&log, "").expect("log");
    let oracle = dir.path().join("oracle.pcap");
    let filter = format!("udp port {ROCE_PORT} and host {DST_H}");
    let (mut tcpdump, _) = spawn_ready(
        Command::new("tcpdump")
            .args([
                "-i",
                "lo",
                "-n",
                "-s",
                "0",
                "--time-stamp-precision=nano",
                "-U",
                "-w",
            ])
            .arg(&oracle)
            .arg(&filter),
        "listening on",
        Duration::from_secs(20),
    );
    let (mut agent, agent_log) = spawn_ready(
        tripcap()
            .args(["run", "-i", "lo", "-f", &filter, "--snaplen", "headers"])
            .args(["--pattern", "Watchdog caught collective operation timeout"])
            .args(["--pre", "5s", "--post", "1s", "-o"])
            .arg(&out)
            .arg("--log")
            .arg(&log),
        "capturing",
        Duration::from_secs(20),
    );
    let sock = UdpSocket::bind(SocketAddr::from((SRC, 0))).expect("bind");
    let to = SocketAddr::from((DST_H, ROCE_PORT));
    // 1 KiB segments: WRITE First/Middle/Last with RETH on the first, ACKs back.
    let mut g = Generator::new(vec![Flow::new(0x3a, 0x4a, 7, 4)], 1024);
    let mut buf = Vec::new();
    paced(600, Duration::from_millis(2), |i| {
        if i == 400 {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .expect("append");
            writeln!(f, "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE)").expect("write");
        }
        g.next_packet(&mut buf).expect("packet");
        sock.send_to(&buf, to).expect("send");
    });
    wait_until(Duration::from_secs(20), "the sidecar", || {
        sidecars(&out).len() == 1
    });
    assert!(
        interrupt(&mut agent).success(),
        "{}",
        agent_log.lock().map(|l| l.clone()).unwrap_or_default()
    );
    interrupt(&mut tcpdump);

    let side = read_sidecar(&sidecars(&out)[0]);
    let ours = read_packets(&out.join(&side.file));
    let full = read_packets(&oracle);
    assert!(ours.len() >= 300, "{} packets", ours.len());
    let by_ts: std::collections::HashMap<i64, &(i64, u32, u32, Vec<u8>)> =
        full.iter().map(|p| (p.0, p)).collect();
    let mut cut = 0;
    for (ts, orig, _, data) in &ours {
        let (_, f_orig, f_link, f_data) = by_ts
            .get(ts)
            .unwrap_or_else(|| panic!("packet at {ts} not in tcpdump's capture"));
        assert_eq!(orig, f_orig, "original length kept");
        let want = tripcap::wire::headers_len(*f_link, f_data);
        assert_eq!(data.len(), want, "cut where the headers end");
        assert_eq!(&data[..], &f_data[..want], "the same bytes");
        cut += usize::from(want < f_data.len());
    }
    assert!(
        cut > ours.len() / 2,
        "payloads were cut: {cut} of {}",
        ours.len()
    );
    // tshark reads it, every frame shorter on file than on the wire by its payload.
    let rows = tshark_fields(
        &out.join(&side.file),
        Some("infiniband"),
        &["frame.cap_len", "frame.len"],
    );
    assert_eq!(rows.lines().filter(|l| !l.is_empty()).count(), ours.len());
    assert_eq!(side.interfaces[0].snaplen, tripcap::units::HEADERS_MAX);
}
