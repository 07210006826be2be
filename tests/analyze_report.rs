//! The whole-capture report: PFC per priority, implied MTU, stalls, ARP in silences,
//! times relative to the trigger from a sidecar, RDMA counter deltas, and the files
//! `write_capture_report` leaves beside a capture (summary JSON + SVG).

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
    };
    run(&args, &mut Vec::new()).unwrap_or_else(|e| panic!("analyze: {e}"));
    let svg = std::fs::read_to_string(&svg_path).expect("svg");
    let said = format!(
        "{} of {busy} queue pairs drawn, the worst first: all are in the JSON report",
        tripcap::analyze::svg::MAX_LANES
    );
    assert!(svg.contains(&said), "no `{said}` in the picture");
}
