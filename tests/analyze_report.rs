//! The whole-capture report: PFC per priority, implied MTU, stalls, ARP in silences,
//! times relative to the trigger from a sidecar, RDMA counter deltas, and the files
//! `write_capture_report` leaves beside a capture (summary JSON + SVG); a silence open at
//! the end of the capture as the longest silence, and instants in ISO 8601 in the summary.

mod common;

use std::path::{Path, PathBuf};

use tripcap::analyze::{run, write_capture_report, AnalyzeArgs};

fn pcaps_dir() -> PathBuf {
    common::data_dir().join("pcaps")
}

fn json_of(file: &Path) -> serde_json::Value {
    let mut out = Vec::new();
    let args = AnalyzeArgs {
        file: file.to_owned(),
        packets: false,
        json: true,
        svg: None,
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut out).unwrap_or_else(|e| panic!("analyze: {e}"));
    serde_json::from_slice(&out).expect("JSON")
}

/// Frame 455 of synthetic_roce_default.pcap: the last packet before the 3 s stall.
const STALL_START: i64 = 1_700_000_000_019_393_000;

#[test]
fn synthetic_capture_whole_figures() {
    let j = json_of(&pcaps_dir().join("synthetic_roce_default.pcap"));
    // synthetic_roce_default.pcap.truth.tsv: 10 XOFF (65535 quanta) and 1 XON on priority 3.
    let p3 = &j["pauses"]["pfc"][3];
    assert_eq!(p3["xoff"], 10);
    assert_eq!(p3["xon"], 1);
    assert_eq!(p3["quanta"], 655_350);
    assert_eq!(j["pauses"]["pfc"][0]["xoff"], 0);
    assert_eq!(
        j["sizes"]["implied_mtu"], 1024,
        "WRITE Middle payloads are 1024 B"
    );
    assert_eq!(j["sizes"]["mtu_basis"], "segments");
    assert_eq!(j["timeline"]["bin_ms"], 1, "3.2 s capture: 1 ms bins");
    let bins = j["timeline"]["packets"].as_array().expect("bins");
    let total: u64 = bins.iter().filter_map(|b| b.as_u64()).sum();
    assert_eq!(total, 601);
    // The worst connection comes first and is the stalled one.
    let c0 = &j["connections"][0];
    assert_eq!(c0["dest_qp"], "0x000203");
    let s = &c0["silences"][0];
    assert_eq!(s["start_ns"], STALL_START);
    assert_eq!(s["outstanding"], true, "stalled mid-message");
    assert!(c0["stalls"].as_u64().unwrap_or(0) >= 1);
    // ACKs answered the AckReq requests.
    let acked = c0["ackreq_answered"].as_u64().unwrap_or(0);
    assert!(
        acked > 0 && acked <= c0["ackreq"].as_u64().unwrap_or(0),
        "{c0}"
    );
    let kinds: Vec<&str> = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    for k in ["stall", "go_back_n", "nak_seq", "nak_rnr", "cnp", "pfc"] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
}

#[test]
fn arp_during_the_long_silence_is_flagged() {
    // montybeatnik test.pcap: ARP during the 12 s silence before the disconnect.
    let j = json_of(&pcaps_dir().join("montybeatnik-rdma-roce-lab_test.pcap"));
    assert!(j["arp"]["packets"].as_u64().unwrap_or(0) > 0);
    assert!(
        j["arp"]["in_silence"].as_u64().unwrap_or(0) >= 1,
        "{}",
        j["arp"]
    );
}

#[test]
fn report_files_beside_a_capture_use_the_sidecar() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("incident.pcap");
    std::fs::copy(pcaps_dir().join("synthetic_roce_default.pcap"), &pcap).expect("copy");
    let trigger_at = STALL_START + 1_000_000_000;
    let sidecar = serde_json::json!({
        "schema": "tripcap.capture/1",
        "triggers": [{"name": "nccl_watchdog", "class": "nccl_timeout", "at_ns": trigger_at,
                      "onset_ns": STALL_START, "at": "", "asked": [0, 0]}],
        "window": {"complete": false, "shortfall": ["the ring reached back only to T-1 s"]},
        "interfaces": [{"name": "eth0", "kernel_drops": 7, "if_drops": 0}],
        "ring_evictions": 2,
        "ring_full_drops": 0,
        "rdma_counters": {"delta": {"devices": {"mlx5_0": {"1": {"out_of_sequence": 12, "np_cnp_sent": 0}}}}},
        "some_future_field": true
    });
    std::fs::write(
        dir.path().join("incident.json"),
        serde_json::to_vec(&sidecar).expect("json"),
    )
    .expect("sidecar");
    let files = write_capture_report(&pcap).expect("report");
    assert_eq!(files.summary, dir.path().join("incident.summary.json"));
    assert_eq!(files.svg, dir.path().join("incident.svg"));
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files.summary).expect("summary")).expect("JSON");
    assert_eq!(j["reference"]["kind"], "trigger");
    assert_eq!(j["capture"]["kernel_drops"], 7);
    assert_eq!(j["capture"]["ring_evictions"], 2);
    assert_eq!(
        j["capture"]["rdma_counters"]["delta"]["devices"]["mlx5_0"]["1"]["out_of_sequence"],
        12
    );
    let findings = j["findings"].as_array().expect("findings");
    let stall = findings
        .iter()
        .find(|f| f["kind"] == "stall" && f["at_ns"] == STALL_START)
        .expect("stall finding");
    assert!((stall["rel_s"].as_f64().unwrap_or(0.0) + 1.0).abs() < 1e-9);
    let untimed: Vec<&str> = findings
        .iter()
        .take_while(|f| f["at_ns"].is_null())
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert_eq!(untimed, vec!["incomplete", "drops", "rdma_counters"]);
    let svg = std::fs::read_to_string(&files.svg).expect("svg");
    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    assert!(svg.contains("trigger") && svg.contains("onset") && svg.contains("0x000203"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&files.svg)
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // The readable summary says it relative to the trigger.
    let mut out = Vec::new();
    let args = AnalyzeArgs {
        file: pcap.clone(),
        packets: false,
        json: false,
        svg: Some(dir.path().join("cli.svg")),
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut out).expect("analyze");
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(text.contains("trigger `nccl_watchdog`"), "{text}");
    assert!(text.contains("T-1.000000 s"), "{text}");
    assert!(text.contains("mlx5_0/1/out_of_sequence +12"), "{text}");
    assert!(dir.path().join("cli.svg").exists());

    // A broken sidecar is an error that names it.
    std::fs::write(dir.path().join("incident.json"), b"{not json").expect("write");
    let err = write_capture_report(&pcap).expect_err("bad sidecar");
    assert!(err.to_string().contains("incident.json"), "{err}");
}

#[test]
fn the_picture_says_how_many_queue_pairs_it_leaves_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("many-qps.pcap");
    let f = std::fs::File::create(&pcap).expect("create");
    tripcap::traffic::write_synthetic(f, 4000, 128, 100_000, 20, 1_796_000_000_000_000_000)
        .expect("write");
    let j = json_of(&pcap);
    let busy = j["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .filter(|c| c["packets"].as_u64().unwrap_or(0) >= 2)
        .count();
    assert!(
        busy > tripcap::analyze::svg::MAX_LANES,
        "{busy} queue pairs"
    );
    let svg_path = dir.path().join("many.svg");
    let args = AnalyzeArgs {
        file: pcap,
        packets: false,
        json: false,
        svg: Some(svg_path.clone()),
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut Vec::new()).unwrap_or_else(|e| panic!("analyze: {e}"));
    let svg = std::fs::read_to_string(&svg_path).expect("svg");
    let said = format!(
        "{} of {busy} queue pairs drawn, the worst first: all are in the JSON report",
        tripcap::analyze::svg::MAX_LANES
    );
    assert!(svg.contains(&said), "no `{said}` in the picture");
}

/// 2023-11-14T22:13:20Z: the first packet of [`write_open_stall`].
const OPEN_STALL_START: i64 = 1_700_000_000_000_000_000;

/// A capture of two RC queue pairs, a packet every millisecond: QP 0x0000c2 stops for
/// good at its first WRITE First after 1 s (a message left half sent), QP 0x0000c1 runs
/// on to 3 s. Returns (c2's last packet, the last packet).
fn write_open_stall(path: &Path) -> (i64, i64) {
    use tripcap::traffic::{self, Flow, Generator};
    let (a, b) = (
        std::net::Ipv4Addr::new(10, 0, 0, 1),
        std::net::Ipv4Addr::new(10, 0, 0, 2),
    );
    let mut g = Generator::new(
        vec![
            Flow::new(0xc1, 0xd1, 1000, 4),
            Flow::new(0xc2, 0xd2, 5000, 4),
        ],
        256,
    );
    let (mut payload, mut frame, mut frames) = (Vec::new(), Vec::new(), Vec::new());
    let (mut c2_stopped, mut c2_last) = (false, 0);
    for i in 0..3000i64 {
        let ts = OPEN_STALL_START + i * 1_000_000;
        let flow = if c2_stopped { 0 } else { (i % 2) as usize };
        let p = g.next_of(flow, &mut payload).expect("packet");
        let (src, dst) = if p.reply { (b, a) } else { (a, b) };
        traffic::frame(src, dst, 49152, &payload, &mut frame);
        frames.push((ts, frame.clone()));
        if flow == 1 {
            c2_last = ts;
            c2_stopped = ts >= OPEN_STALL_START + 1_000_000_000 && p.opcode == 0x06;
        }
    }
    let last = frames.last().map_or(0, |f| f.0);
    let mut f = std::fs::File::create(path).expect("create pcap");
    traffic::write_pcap(&mut f, 128, frames).expect("write pcap");
    (c2_last, last)
}

fn summary_of(file: &Path) -> String {
    let mut out = Vec::new();
    let args = AnalyzeArgs {
        file: file.to_owned(),
        packets: false,
        json: false,
        svg: None,
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut out).unwrap_or_else(|e| panic!("analyze: {e}"));
    String::from_utf8(out).expect("UTF-8")
}

/// The summary line of the connection `src > dst qp`.
fn line_of<'a>(text: &'a str, conn: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(&format!("{conn}: ")) && l.contains(" packets, "))
        .unwrap_or_else(|| panic!("no line for {conn} in\n{text}"))
}

#[test]
fn a_silence_open_at_the_end_of_the_capture_is_the_longest_silence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("open-stall.pcap");
    let (c2_last, last) = write_open_stall(&pcap);
    let open_ms = (last - c2_last) as f64 / 1e6;
    assert!(open_ms > 1900.0, "{open_ms}");
    let j = json_of(&pcap);
    let c2 = j["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .find(|c| c["dest_qp"] == "0x0000c2" && c["src"] == "10.0.0.1")
        .expect("QP c2");
    // The stall finding and the longest silence tell the same story.
    let stall = j["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["kind"] == "stall" && f["conn"] == "10.0.0.1 > 10.0.0.2 0x0000c2")
        .expect("stall finding");
    assert_eq!(stall["at_ns"], c2_last);
    let text = stall["text"].as_str().unwrap_or("");
    assert!(
        text.contains(&format!(
            "silent {open_ms:.1} ms until the end of the capture"
        )),
        "{text}"
    );
    let ms = c2["max_silence_ms"].as_f64().unwrap_or(0.0);
    assert!(
        (ms - open_ms).abs() < 1e-6,
        "max_silence_ms {ms}, open {open_ms}"
    );
    assert_eq!(c2["max_silence_at"], tripcap::clock::rfc3339(c2_last));
    assert_eq!(c2["max_silence_open"], true);
    // QP c1 ran to the end: its longest silence is between two of its packets.
    let c1 = j["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .find(|c| c["dest_qp"] == "0x0000c1" && c["src"] == "10.0.0.1")
        .expect("QP c1");
    assert_eq!(c1["max_silence_open"], false, "{c1}");
    assert!(c1["max_silence_ms"].as_f64().unwrap_or(0.0) < 10.0, "{c1}");

    let summary = summary_of(&pcap);
    let line = line_of(&summary, "10.0.0.1 > 10.0.0.2 0x0000c2");
    assert!(
        line.contains(&format!(
            "longest silence {open_ms:.3} ms from +{:.6} s to the end of the capture",
            (c2_last - OPEN_STALL_START) as f64 / 1e9
        )),
        "{line}"
    );
}

#[test]
fn the_summary_gives_instants_in_iso_8601_or_relative_to_the_trigger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("incident.pcap");
    let (c2_last, _) = write_open_stall(&pcap);
    let text = summary_of(&pcap);
    assert!(
        text.contains("time: 2023-11-14T22:13:20.000Z .. 2023-11-14T22:13:22.999Z (2.999 s)"),
        "{text}"
    );
    assert!(!text.contains("1700000000"), "raw epoch seconds in\n{text}");

    // With a trigger: its instant in ISO 8601, every other time relative to it.
    let trigger_at = c2_last + 1_500_000_000;
    let sidecar = serde_json::json!({
        "triggers": [{"name": "nccl_watchdog", "at_ns": trigger_at}],
    });
    std::fs::write(
        dir.path().join("incident.json"),
        serde_json::to_vec(&sidecar).expect("json"),
    )
    .expect("sidecar");
    let text = summary_of(&pcap);
    assert!(
        text.contains(&format!(
            "trigger `nccl_watchdog` at {} (T)",
            tripcap::clock::rfc3339_millis(trigger_at)
        )),
        "{text}"
    );
    assert!(
        text.contains("trigger `nccl_watchdog` at 2023-11-14T22:13:22.50"),
        "{text}"
    );
    let line = line_of(&text, "10.0.0.1 > 10.0.0.2 0x0000c2");
    assert!(
        line.contains("from T-1.500000 s to the end of the capture"),
        "{line}"
    );
    assert!(!text.contains("1700000002"), "raw epoch seconds in\n{text}");
}
