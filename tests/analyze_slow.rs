//! "Why slow": generated captures with one planted limiter each (small packets, PFC
//! pauses, go-back-N retransmissions) get that limiter as the verdict, a healthy one gets
//! none; payload bytes, re-sent bytes, PFC quanta and fragments checked against tshark;
//! an IPv4 fragment of a RoCE datagram and an MTU mismatch between the two directions
//! are findings; the link speed comes from `--link-speed`, else the sidecar.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;

use tripcap::analyze::{run, AnalyzeArgs};
use tripcap::traffic::{self, Flow, Generator};

const START: i64 = 1_700_000_000_000_000_000;
const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Frames of one RC flow A → B (WRITEs of `per_message` packets of `payload` bytes, ACKs
/// back), `data` data packets one every `step_ns` from `start`; `rewind(n)` gives how many
/// PSNs to go back after the `n`th data packet (go-back-N).
fn flow_frames(
    payload: usize,
    per_message: u32,
    data: usize,
    step_ns: i64,
    start: i64,
    (src, dst): (Ipv4Addr, Ipv4Addr),
    rewind: impl Fn(usize) -> u32,
) -> Vec<(i64, Vec<u8>)> {
    let mut g = Generator::new(vec![Flow::new(0x11, 0x22, 1000, per_message)], payload);
    let (mut buf, mut frame) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    let mut sent = 0;
    let mut ts = start;
    while sent < data {
        let Some(p) = g.next_of(0, &mut buf) else {
            break;
        };
        let (s, d) = if p.reply { (dst, src) } else { (src, dst) };
        traffic::frame(s, d, 49152, &buf, &mut frame);
        out.push((ts, frame.clone()));
        ts += step_ns;
        if !p.reply {
            sent += 1;
            let back = rewind(sent);
            if back > 0 {
                g.flows[0].psn = (g.flows[0].psn + (1 << 24) - back) & 0xff_ffff;
            }
        }
    }
    out
}

/// `frames` with their IPv4 DSCP set to `dscp` (ECN bits kept, checksum redone).
fn with_dscp(mut frames: Vec<(i64, Vec<u8>)>, dscp: u8) -> Vec<(i64, Vec<u8>)> {
    for (_, f) in &mut frames {
        traffic::set_dscp(f, dscp);
    }
    frames
}

/// A PFC frame pausing `priority` for `quanta`.
fn pfc_frame(priority: u8, quanta: u16) -> Vec<u8> {
    let mut f = vec![
        0x01, 0x80, 0xc2, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x09, 0x88, 0x08,
    ];
    f.extend_from_slice(&0x0101u16.to_be_bytes());
    f.extend_from_slice(&(1u16 << priority).to_be_bytes());
    for p in 0..8u8 {
        let q = if p == priority { quanta } else { 0 };
        f.extend_from_slice(&q.to_be_bytes());
    }
    f.resize(60, 0);
    f
}

fn write(path: &Path, mut frames: Vec<(i64, Vec<u8>)>) {
    frames.sort_by_key(|f| f.0);
    let mut f = std::fs::File::create(path).expect("create pcap");
    traffic::write_pcap(&mut f, 65535, frames).expect("write pcap");
}

fn analyze(file: &Path, json: bool, link_speed: Option<&str>) -> Vec<u8> {
    let args = AnalyzeArgs {
        file: file.to_owned(),
        packets: false,
        json,
        svg: None,
        link_speed: link_speed.map(|s| tripcap::analyze::parse_link_speed(s).expect("link speed")),
        baseline: None,
    };
    let mut out = Vec::new();
    run(&args, &mut out).unwrap_or_else(|e| panic!("analyze: {e}"));
    out
}

fn json_of(file: &Path, link_speed: Option<&str>) -> serde_json::Value {
    serde_json::from_slice(&analyze(file, true, link_speed)).expect("JSON")
}

fn text_of(file: &Path, link_speed: Option<&str>) -> String {
    String::from_utf8(analyze(file, false, link_speed)).expect("UTF-8")
}

/// Payload bytes of the data packets per tshark: UDP length − UDP, BTH, RETH, ICRC.
fn tshark_payload(file: &Path) -> u64 {
    common::tshark_fields(
        file,
        Some("infiniband && !infiniband.aeth"),
        &["udp.length", "infiniband.reth.dmalen"],
    )
    .lines()
    .filter(|l| !l.is_empty())
    .map(|l| {
        let mut cols = l.split('\t');
        let udp: u64 = cols
            .next()
            .and_then(|x| x.parse().ok())
            .expect("udp.length");
        let reth = cols.next().is_some_and(|x| !x.is_empty());
        udp - 8 - 12 - if reth { 16 } else { 0 } - 4
    })
    .sum()
}

fn limiter(j: &serde_json::Value) -> &str {
    j["throughput"]["verdict"]["limiter"]
        .as_str()
        .expect("a verdict")
}

#[test]
fn a_healthy_capture_has_no_limiter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("healthy.pcap");
    // 4 KiB segments, 1000 data packets over 10 ms: 3.3 Gbit/s, nothing wrong.
    write(
        &file,
        flow_frames(4096, 4, 1000, 10_000, START, (A, B), |_| 0),
    );
    let j = json_of(&file, None);
    assert_eq!(j["version"], 5);
    assert_eq!(limiter(&j), "none", "{}", j["throughput"]);
    let t = &j["throughput"];
    assert_eq!(t["link"]["source"], "assumed");
    assert_eq!(t["link"]["gbps"], 100.0);
    let d = &t["directions"][0];
    assert_eq!(d["src"], "10.0.0.1");
    assert_eq!(d["data_packets"], 1000);
    assert_eq!(d["implied_mtu"], 4096);
    assert_eq!(d["mtu_basis"], "segments");
    assert_eq!(d["mtu_sized_share"], 1.0);
    assert_eq!(d["retransmitted_bytes"], 0);
    assert_eq!(d["payload_bytes"].as_u64(), Some(tshark_payload(&file)));
    assert_eq!(d["goodput_bytes"], 4096 * 1000);
    let g = d["goodput_gbps"].as_f64().expect("goodput");
    // 4096000 B between the first and last data packet.
    let active = d["active_s"].as_f64().expect("active");
    assert!((g - 4_096_000.0 * 8.0 / active / 1e9).abs() < 1e-9, "{d}");
    assert!(t["pauses"].as_array().is_some_and(|p| p.is_empty()));
    // The link speed from the flag.
    let j = json_of(&file, Some("10Gb/s"));
    assert_eq!(j["throughput"]["link"]["source"], "flag");
    assert_eq!(j["throughput"]["link"]["gbps"], 10.0);
    let share = j["throughput"]["directions"][0]["link_share"]
        .as_f64()
        .expect("share");
    assert!((share - g / 10.0).abs() < 1e-9);
    let text = text_of(&file, None);
    assert!(text.contains("why slow: link 100 Gb/s (assumed"), "{text}");
    assert!(text.contains("  verdict: none: "), "{text}");
}

#[test]
fn small_packets_are_the_limiter_against_the_sidecars_mtu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("small.pcap");
    // 256-byte WRITE Only packets, back to back.
    write(
        &file,
        flow_frames(256, 1, 2000, 1_000, START, (A, B), |_| 0),
    );
    // A sidecar as the agent writes it now: the interface's speed and MTU (9000 holds
    // RoCE's 4096).
    std::fs::write(
        dir.path().join("small.json"),
        r#"{"interfaces": [{"name": "eth0", "kernel_drops": 0, "if_drops": 0, "speed_mbps": 25000, "mtu": 9000}]}"#,
    )
    .expect("sidecar");
    let j = json_of(&file, None);
    assert_eq!(limiter(&j), "small_packets", "{}", j["throughput"]);
    let t = &j["throughput"];
    assert_eq!(t["link"]["source"], "sidecar");
    assert_eq!(t["link"]["gbps"], 25.0);
    assert_eq!(t["configured_mtu"], 9000);
    assert_eq!(t["configured_ib_mtu"], 4096);
    assert_eq!(j["capture"]["link_speed_mbps"], 25000);
    let d = &t["directions"][0];
    assert_eq!(d["mean_payload"], 256.0);
    assert_eq!(d["implied_mtu"], 256);
    assert_eq!(d["mtu_basis"], "largest_payload");
    assert_eq!(d["payload_bytes"].as_u64(), Some(tshark_payload(&file)));
    let evidence = t["verdict"]["evidence"].as_str().unwrap_or("");
    assert!(
        evidence.contains("mean payload 256 B") && evidence.contains("4096 B"),
        "{evidence}"
    );
    let text = text_of(&file, None);
    assert!(
        text.contains("verdict: small packets: mean payload 256 B"),
        "{text}"
    );
    assert!(
        text.contains("link 25 Gb/s (the capture's interface)"),
        "{text}"
    );
}

#[test]
fn pfc_pauses_are_the_limiter_with_their_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pfc.pcap");
    // RoCE in DSCP 26, which the default trust-DSCP mapping puts on priority 3.
    let mut frames = with_dscp(flow_frames(4096, 4, 1000, 10_000, START, (A, B), |_| 0), 26);
    // Priority 3: an XOFF of 65535 quanta every ms (335.5 µs at 100 Gb/s), a refresh
    // 100 µs into the first one (overlap: counted once), and one XON.
    for i in 0..10 {
        frames.push((START + 50_000 + i * 1_000_000, pfc_frame(3, 65535)));
    }
    frames.push((START + 150_000, pfc_frame(3, 65535)));
    frames.push((START + 9_600_000, pfc_frame(3, 0)));
    write(&file, frames);
    let j = json_of(&file, Some("100Gb/s"));
    assert_eq!(limiter(&j), "pfc_pauses", "{}", j["throughput"]);
    let p = &j["throughput"]["pauses"][0];
    assert_eq!(p["priority"], 3);
    assert_eq!(p["carries_roce"], true);
    assert_eq!(p["xoff"], 11);
    // The priority the RoCE traffic travels on: every RoCE packet, as tshark counts
    // them in DSCP 26.
    let dscp26 = common::tshark_fields(
        &file,
        Some("infiniband && ip.dsfield.dscp == 26"),
        &["frame.number"],
    )
    .lines()
    .filter(|l| !l.is_empty())
    .count() as u64;
    assert_eq!(
        j["throughput"]["roce_priorities"],
        serde_json::json!([{"priority": 3, "packets": dscp26, "basis": "dscp", "dscp": 26}])
    );
    assert!(
        j["throughput"]["verdict"]["evidence"]
            .as_str()
            .is_some_and(|e| e.contains("the RoCE traffic's priority (DSCP 26 → priority 3)")),
        "{}",
        j["throughput"]["verdict"]
    );
    // tshark's quanta of priority 3 summed.
    let quanta: u64 = common::tshark_fields(&file, Some("macc"), &["macc.cbfc.pause_time.c3"])
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(p["quanta"].as_u64(), Some(quanta));
    assert_eq!(quanta, 11 * 65535);
    // 335,539 ns per XOFF (65535 × 5.12 ns); the first is refreshed after 100 µs.
    let one = (65535.0f64 * 5.12).round() as i64;
    assert_eq!(p["paused_ns"].as_i64(), Some(100_000 + 10 * one));
    let span = (j["last_ns"].as_i64().unwrap_or(0) - j["first_ns"].as_i64().unwrap_or(0)) as f64;
    let share = p["paused_share"].as_f64().expect("share");
    assert!((share - (100_000 + 10 * one) as f64 / span).abs() < 1e-9);
    // At 400 Gb/s a quarter as long (83,885 ns): the refresh comes after the first pause
    // ended, so all eleven count whole.
    let j = json_of(&file, Some("400Gb/s"));
    let quarter = (65535.0f64 * 1.28).round() as i64;
    assert_eq!(
        j["throughput"]["pauses"][0]["paused_ns"].as_i64(),
        Some(11 * quarter)
    );
    let text = text_of(&file, Some("100Gb/s"));
    assert!(
        text.contains("PFC priority 3: 11 XOFF, 720885 quanta = 3.455 ms paused"),
        "{text}"
    );
    assert!(text.contains("; RoCE travels on it"), "{text}");
    // The verdict is under the picture too.
    let svg = dir.path().join("pfc.svg");
    let args = AnalyzeArgs {
        file: file.clone(),
        packets: false,
        json: false,
        svg: Some(svg.clone()),
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut Vec::new()).expect("analyze --svg");
    let svg = std::fs::read_to_string(&svg).expect("svg");
    assert!(
        svg.contains("Why slow: pfc pauses: PFC priority 3"),
        "{svg}"
    );
    assert!(
        text.contains("verdict: pfc pauses: PFC priority 3, the RoCE traffic's priority (DSCP 26 → priority 3) paused"),
        "{text}"
    );
}

#[test]
fn go_back_n_retransmissions_are_the_limiter_with_their_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gbn.pcap");
    // Every 100 data packets, go back 20 PSNs (a message boundary: 4 per message).
    write(
        &file,
        flow_frames(4096, 4, 1000, 10_000, START, (A, B), |n| {
            if n % 100 == 0 {
                20
            } else {
                0
            }
        }),
    );
    let j = json_of(&file, None);
    assert_eq!(limiter(&j), "retransmissions", "{}", j["throughput"]);
    // tshark's PSNs: a data packet whose PSN is not past the highest so far is re-sent.
    let psns = common::tshark_fields(
        &file,
        Some("infiniband && !infiniband.aeth"),
        &["infiniband.bth.psn"],
    );
    let mut highest = None;
    let mut resent = 0u64;
    for psn in psns.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        if highest.is_some_and(|h| psn <= h) {
            resent += 1;
        }
        highest = Some(highest.map_or(psn, |h: u32| h.max(psn)));
    }
    assert_eq!(resent, 9 * 20, "nine rewinds before the end");
    let t = &j["throughput"];
    assert_eq!(t["retransmitted_bytes"].as_u64(), Some(resent * 4096));
    let total = tshark_payload(&file);
    assert_eq!(t["goodput_bytes"].as_u64(), Some(total - resent * 4096));
    let share = t["retransmitted_share"].as_f64().expect("share");
    assert!((share - (resent * 4096) as f64 / (total - resent * 4096) as f64).abs() < 1e-12);
    let evidence = t["verdict"]["evidence"].as_str().unwrap_or("");
    assert!(evidence.contains("9 go-back-N"), "{evidence}");
}

#[test]
fn cnps_name_congestion_and_list_the_rate_cuts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("cnp.pcap");
    let mut frames = flow_frames(4096, 4, 1000, 10_000, START, (A, B), |_| 0);
    // 20 CNPs from B back to A's QP 0x22, one every 400 µs.
    let mut cnp = vec![0u8; 12 + 16 + 4];
    cnp[0] = 0x81;
    cnp[2] = 0xff;
    cnp[3] = 0xff;
    cnp[5..8].copy_from_slice(&[0, 0, 0x22]);
    let mut frame = Vec::new();
    for i in 0..20 {
        traffic::frame(B, A, 49152, &cnp, &mut frame);
        frames.push((START + 5_000 + i * 400_000, frame.clone()));
    }
    write(&file, frames);
    let j = json_of(&file, None);
    assert_eq!(limiter(&j), "congestion", "{}", j["throughput"]);
    let t = &j["throughput"];
    let cuts = &t["cnp_cuts"][0];
    assert_eq!(cuts["conn"], "10.0.0.2 > 10.0.0.1 0x000022");
    assert_eq!(cuts["cnps"], 20);
    let per_s = cuts["per_s"].as_f64().expect("rate");
    assert!((per_s - 2500.0).abs() < 1e-6, "{per_s}");
    assert_eq!(t["directions"][0]["cnps"], 20);
}

/// An IPv4 packet A → B to UDP 4791 cut into two fragments (flags MF / offset 1480).
fn fragments() -> Vec<Vec<u8>> {
    let mut g = Generator::new(vec![Flow::new(0x11, 0x22, 0, 1)], 2000);
    let mut payload = Vec::new();
    g.next_of(0, &mut payload);
    let mut whole = Vec::new();
    traffic::frame(A, B, 49152, &payload, &mut whole);
    let ip = &whole[14..];
    let udp = &ip[20..];
    let mut out = Vec::new();
    for (offset, part) in [(0usize, &udp[..1480]), (1480, &udp[1480..])] {
        let mut f = whole[..14].to_vec();
        let mut h = ip[..20].to_vec();
        h[2..4].copy_from_slice(&((20 + part.len()) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&0x4242u16.to_be_bytes());
        let more = if offset == 0 { 0x2000 } else { 0 };
        h[6..8].copy_from_slice(&(more | (offset / 8) as u16).to_be_bytes());
        h[10..12].fill(0);
        f.extend_from_slice(&h);
        f.extend_from_slice(part);
        out.push(f);
    }
    out
}

#[test]
fn fragments_of_roce_and_an_mtu_mismatch_are_findings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("frag.pcap");
    // A → B segments at 4096, B → A at 1024, and one fragmented RoCE datagram.
    let mut frames = flow_frames(4096, 4, 200, 10_000, START, (A, B), |_| 0);
    frames.extend(flow_frames(
        1024,
        4,
        200,
        10_000,
        START + 5_000,
        (B, A),
        |_| 0,
    ));
    for (i, f) in fragments().into_iter().enumerate() {
        frames.push((START + 1_000_000 + i as i64 * 1_000, f));
    }
    write(&file, frames);
    let tshark = common::tshark_fields(
        &file,
        Some("ip.flags.mf == 1 || ip.frag_offset > 0"),
        &["ip.id"],
    );
    assert_eq!(tshark.lines().filter(|l| !l.is_empty()).count(), 2);
    let j = json_of(&file, None);
    let t = &j["throughput"];
    assert_eq!(t["fragments"]["packets"], 2);
    assert_eq!(t["fragments"]["first"], "10.0.0.1 > 10.0.0.2");
    assert_eq!(t["fragments"]["first_ns"], START + 1_000_000);
    let kinds: Vec<&str> = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"roce_fragment"), "{kinds:?}");
    assert!(kinds.contains(&"mtu_mismatch"), "{kinds:?}");
    let m = &t["mtu_mismatches"][0];
    assert_eq!(m["a"], "10.0.0.1");
    assert_eq!(m["a_to_b"], 4096);
    assert_eq!(m["b_to_a"], 1024);
    // Fragments are not RoCE packets: nothing else counted them.
    assert_eq!(j["frames"]["other"], 2);
    // The healthy flows alone: neither finding.
    let clean = dir.path().join("clean.pcap");
    write(
        &clean,
        flow_frames(4096, 4, 200, 10_000, START, (A, B), |_| 0),
    );
    let j = json_of(&clean, None);
    let kinds: Vec<&str> = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(
        !kinds.contains(&"roce_fragment") && !kinds.contains(&"mtu_mismatch"),
        "{kinds:?}"
    );
}

#[test]
fn a_bad_link_speed_is_refused_with_an_example() {
    let e = tripcap::analyze::parse_link_speed("100").expect_err("no unit");
    assert!(e.contains("40Gb/s"), "{e}");
    assert_eq!(tripcap::analyze::parse_link_speed("25Gb/s"), Ok(25_000));
    assert_eq!(tripcap::analyze::parse_link_speed("400Mb/s"), Ok(400));
}

#[test]
fn a_link_carrying_nearly_its_speed_is_saturated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("busy.pcap");
    write(
        &file,
        flow_frames(4096, 4, 1000, 10_000, START, (A, B), |_| 0),
    );
    // The wire rate A → B as tshark reads it: frame bytes of A's packets over
    // the time from A's first packet to its last.
    let rows = common::tshark_fields(
        &file,
        Some(&format!("ip.src == {A}")),
        &["frame.time_epoch", "frame.len"],
    );
    let (mut first, mut last, mut bytes) = (f64::MAX, f64::MIN, 0u64);
    for l in rows.lines().filter(|l| !l.is_empty()) {
        let mut c = l.split('\t');
        let ts: f64 = c.next().and_then(|x| x.parse().ok()).expect("time");
        let len: u64 = c.next().and_then(|x| x.parse().ok()).expect("len");
        first = first.min(ts);
        last = last.max(ts);
        bytes += len;
    }
    let wire_gbps = bytes as f64 * 8.0 / (last - first) / 1e9;
    // A link at most ~5 % faster than that is saturated (the threshold is 90 %);
    // one 25 % faster is not.
    let j = json_of(&file, Some(&format!("{:.4}Gb/s", wire_gbps / 0.95)));
    assert_eq!(limiter(&j), "link_saturated", "{}", j["throughput"]);
    let evidence = j["throughput"]["verdict"]["evidence"]
        .as_str()
        .expect("evidence");
    assert!(
        evidence.starts_with(&format!("{A} > {B} carries ")),
        "{evidence}"
    );
    let j = json_of(&file, Some(&format!("{:.4}Gb/s", wire_gbps / 0.75)));
    assert_eq!(limiter(&j), "none", "{}", j["throughput"]);
}

#[test]
fn pfc_pauses_of_a_priority_without_roce_are_not_the_limiter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pfc-other.pcap");
    // RoCE in DSCP 26 (priority 3); the pauses hit priority 5.
    let mut frames = with_dscp(flow_frames(4096, 4, 1000, 10_000, START, (A, B), |_| 0), 26);
    for i in 0..10 {
        frames.push((START + 50_000 + i * 1_000_000, pfc_frame(5, 65535)));
    }
    write(&file, frames);
    let j = json_of(&file, Some("100Gb/s"));
    assert_eq!(limiter(&j), "none", "{}", j["throughput"]);
    let p = &j["throughput"]["pauses"][0];
    assert_eq!(
        (p["priority"].as_u64(), p["carries_roce"].as_bool()),
        (Some(5), Some(false))
    );
    let also = j["throughput"]["verdict"]["also"].to_string();
    assert!(
        also.contains("PFC priority 5 paused")
            && also.contains("no RoCE packet travelled on it (RoCE: DSCP 26 → priority 3)"),
        "{also}"
    );
}
