//! `tripcap analyze FILE --baseline BASE` (issue 14, part 1), run as the real binary:
//! a baseline of generated healthy RoCE traffic (a long capture summarised per second
//! and exported as a profile, and the same capture given directly), then generated
//! windows with a CNP storm, a PFC storm, a go-back-N storm and collapsed traffic, each
//! flagged with the right metric first, while healthy traffic of other timing is within
//! every band; two shared real captures compared with each other, their rates checked
//! against tshark's frame counts, and each shared capture against itself flags nothing;
//! the agent's report against a host profile; a bad BASE is a one-line error.

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tripcap::analyze::against::profile_of_capture;
use tripcap::capture_file::pcapng;
use tripcap::capture_file::reader::Reader;
use tripcap::traffic::{self, Flow, Generator};

/// A whole second (a minute after 2026-12-01 …), where the baseline starts.
const T0: i64 = 1_796_000_040_000_000_000;
const SEC: i64 = 1_000_000_000;
const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// The DSCP of the RoCE traffic.
const DSCP: u8 = 26;

/// What to generate: two RC flows A → B of 1 KiB WRITEs (4 packets a message, an ACK
/// back for each), `data_per_s` data packets a second with jittered timing, an ARP
/// request a second, a stray CNP every 7 s; and what to plant.
#[derive(Debug, Clone, Copy)]
struct Plan {
    seed: u64,
    start: i64,
    seconds: i64,
    data_per_s: i64,
    /// CNPs B → A per second (0: only the stray ones).
    cnp_per_s: i64,
    /// PFC XOFF frames (priority 3) per second.
    pfc_per_s: i64,
    /// Go back 8 PSNs after every this many data packets (0: never).
    rewind_every: usize,
}

impl Plan {
    fn healthy(seed: u64, start: i64, seconds: i64) -> Plan {
        Plan {
            seed,
            start,
            seconds,
            data_per_s: 1000,
            cnp_per_s: 0,
            pfc_per_s: 0,
            rewind_every: 0,
        }
    }
}

/// xorshift64*: reproducible jitter without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: i64) -> i64 {
        (self.next() % n.max(1) as u64) as i64
    }
}

/// `frame` with the IPv4 DSCP set (ECT(0) kept) and the header checksum redone.
fn with_dscp(frame: &mut [u8], dscp: u8) {
    traffic::set_dscp(frame, dscp);
}

/// A RoCE frame `src` → `dst` in our class.
fn roce(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    traffic::frame(src, dst, 49152, udp, &mut f);
    with_dscp(&mut f, DSCP);
    f
}

/// A CNP (BTH opcode 0x81, BECN, 16 reserved bytes, ICRC) to QP `qp`.
fn cnp(qp: u32) -> Vec<u8> {
    let mut udp = vec![0u8; 12 + 16 + 4];
    udp[0] = 0x81;
    udp[2] = 0xff;
    udp[3] = 0xff;
    udp[4] = 0x40; // BECN
    udp[5..8].copy_from_slice(&qp.to_be_bytes()[1..]);
    roce(B, A, &udp)
}

/// A PFC frame pausing priority 3 for 65535 quanta.
fn pfc() -> Vec<u8> {
    let mut f = vec![
        0x01, 0x80, 0xc2, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x09, 0x88, 0x08,
    ];
    f.extend_from_slice(&0x0101u16.to_be_bytes());
    f.extend_from_slice(&(1u16 << 3).to_be_bytes());
    for p in 0..8u16 {
        f.extend_from_slice(&(if p == 3 { 65535u16 } else { 0 }).to_be_bytes());
    }
    f.resize(60, 0);
    f
}

/// An ARP request A asks for B.
fn arp() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x08, 0x06]);
    f.extend_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&A.octets());
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&B.octets());
    f.resize(60, 0);
    f
}

/// The frames of `plan`, in time order.
fn frames(plan: &Plan) -> Vec<(i64, Vec<u8>)> {
    let mut rng = Rng(plan.seed | 1);
    let flows = vec![
        Flow::new(0x11, 0x12, 100, 4),
        Flow::new(0x21, 0x22, 5000, 4),
    ];
    let mut g = Generator::new(flows, 1024);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let step = SEC / plan.data_per_s;
    let total = plan.seconds * plan.data_per_s;
    let mut sent = [0usize; 2];
    for i in 0..total {
        let ts = plan.start + i * step + rng.below(step * 2 / 3) - step / 3;
        let flow = (i % 2) as usize;
        let Some(p) = g.next_of(flow, &mut buf) else {
            break;
        };
        assert!(!p.reply);
        out.push((ts, roce(A, B, &buf)));
        sent[flow] += 1;
        if plan.rewind_every > 0 && sent[flow] % plan.rewind_every == 0 {
            let f = &mut g.flows[flow];
            f.psn = (f.psn + (1 << 24) - 8) & 0xff_ffff;
        }
        // The ACK a message's last packet asked for, 6 to 10 µs later.
        if matches!(p.opcode, 0x08 | 0x0a) {
            let r = g.next_of(flow, &mut buf).expect("the ACK owed");
            assert!(r.reply);
            out.push((ts + 6_000 + rng.below(4_000), roce(B, A, &buf)));
        }
    }
    for s in 0..plan.seconds {
        let sec = plan.start + s * SEC;
        out.push((sec + 500_000_000 + rng.below(1_000_000), arp()));
        if plan.cnp_per_s == 0 && (sec / SEC) % 7 == 3 {
            out.push((sec + 250_000_000, cnp(0x12)));
        }
        for k in 0..plan.cnp_per_s {
            out.push((sec + k * (SEC / plan.cnp_per_s) + 1_000, cnp(0x12)));
        }
        for k in 0..plan.pfc_per_s {
            out.push((sec + k * (SEC / plan.pfc_per_s) + 2_000, pfc()));
        }
    }
    out.sort_by_key(|f| f.0);
    out
}

fn write_pcap(path: &Path, frames: Vec<(i64, Vec<u8>)>) {
    let mut f = std::fs::File::create(path).expect("create pcap");
    // 128 bytes hold every header; the wire length stays whole.
    traffic::write_pcap(&mut f, 128, frames).expect("write pcap");
}

/// `tripcap analyze FILE --baseline BASE --json` (plus `extra`), as JSON.
fn analyze_json(file: &Path, base: &Path, extra: &[&str]) -> Value {
    let out = common::run(
        common::tripcap()
            .arg("analyze")
            .arg(file)
            .arg("--baseline")
            .arg(base)
            .arg("--json")
            .args(extra),
    );
    assert!(
        out.status.success(),
        "analyze failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The same, as the readable summary.
fn analyze_text(file: &Path, base: &Path, extra: &[&str]) -> String {
    let out = common::run(
        common::tripcap()
            .arg("analyze")
            .arg(file)
            .arg("--baseline")
            .arg(base)
            .args(extra),
    );
    assert!(
        out.status.success(),
        "analyze failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn deviations(j: &Value) -> Vec<(String, u64, String)> {
    j["baseline"]["deviations"]
        .as_array()
        .expect("deviations")
        .iter()
        .map(|d| {
            (
                d["metric"].as_str().unwrap_or("").to_string(),
                d["class"].as_u64().unwrap_or(0),
                d["side"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The metric row of `metric` in `class`.
fn metric<'a>(j: &'a Value, class: u64, metric: &str) -> &'a Value {
    j["baseline"]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["class"] == class && m["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in class {class}: {}", j["baseline"]))
}

/// A 30-second healthy baseline capture, and its profile exported as JSON (what
/// `tripcap baseline export` writes: `serde_json` of the profile).
fn baseline(dir: &Path) -> (PathBuf, PathBuf) {
    let capture = dir.join("healthy-baseline.pcap");
    write_pcap(&capture, frames(&Plan::healthy(7, T0, 30)));
    let profile = profile_of_capture(&capture).expect("profile");
    let json = dir.join("profile.json");
    std::fs::write(&json, serde_json::to_vec_pretty(&profile).expect("JSON")).expect("write");
    (capture, json)
}

/// A 10-second window 100.37 s after the baseline started.
fn window(seed: u64) -> Plan {
    Plan::healthy(seed, T0 + 100 * SEC + 370_000_000, 10)
}

#[test]
fn storms_leave_their_band_with_the_right_metric_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, profile) = baseline(dir.path());
    let cases = [
        (
            "cnp",
            Plan {
                cnp_per_s: 200,
                ..window(11)
            },
            "cnp_per_s",
            u64::from(DSCP),
        ),
        (
            "pfc",
            Plan {
                pfc_per_s: 500,
                ..window(12)
            },
            "pfc_frames_per_s",
            255,
        ),
        (
            "gbn",
            Plan {
                rewind_every: 40,
                ..window(13)
            },
            "go_back_n_per_s",
            u64::from(DSCP),
        ),
    ];
    for (name, plan, first, class) in cases {
        let file = dir.path().join(format!("{name}.pcap"));
        write_pcap(&file, frames(&plan));
        let j = analyze_json(&file, &profile, &[]);
        assert_eq!(j["version"], 5);
        let d = deviations(&j);
        assert_eq!(
            d.first().map(|(m, c, s)| (m.as_str(), *c, s.as_str())),
            Some((first, class, "above")),
            "{name}: {}",
            j["baseline"]
        );
        // The window's rate is what was planted (over first to last packet).
        let value = j["baseline"]["deviations"][0]["value"]
            .as_f64()
            .expect("value");
        let expected = match name {
            "cnp" => 200.0,
            "pfc" => 500.0,
            _ => 2.0 * 1000.0 / 2.0 / 40.0, // a rewind every 40 packets of each flow
        };
        assert!(
            (value - expected).abs() / expected < 0.05,
            "{name}: {value} vs {expected}"
        );
        assert_eq!(j["baseline"]["source"]["kind"], "profile");
        assert_eq!(j["baseline"]["matched_by"], "interface");
        assert_eq!(j["baseline"]["window"]["basis"], "packets");
        let row = metric(&j, class, first);
        assert_eq!(row["left_band"], true);
        // The readable summary says it in words, worst first.
        let text = analyze_text(&file, &profile, &[]);
        let section = text
            .split("Against the baseline")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no baseline section: {text}"));
        let first_line = section.lines().nth(1).unwrap_or("");
        assert!(
            first_line.trim_start().starts_with(first),
            "{name}: {first_line}\n{text}"
        );
        assert_eq!(
            first_line.trim(),
            j["baseline"]["deviations"][0]["text"]
                .as_str()
                .unwrap_or("")
        );
    }
    // The PFC storm's picture carries the worst deviation as text.
    let svg = dir.path().join("pfc.svg");
    let out = common::run(
        common::tripcap()
            .arg("analyze")
            .arg(dir.path().join("pfc.pcap"))
            .arg("--baseline")
            .arg(&profile)
            .arg("--svg")
            .arg(&svg),
    );
    assert!(out.status.success());
    let svg = std::fs::read_to_string(&svg).expect("svg");
    assert!(
        svg.contains("Against the baseline")
            && svg.contains("pfc_frames_per_s 500/s on capture (no DSCP)"),
        "{svg}"
    );
}

#[test]
fn healthy_traffic_of_other_timing_is_within_every_band() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (capture, profile) = baseline(dir.path());
    let file = dir.path().join("healthy.pcap");
    let plan = window(99);
    write_pcap(&file, frames(&plan));
    for base in [&profile, &capture] {
        let j = analyze_json(&file, base, &[]);
        assert!(
            deviations(&j).is_empty(),
            "against {}: {}",
            base.display(),
            j["baseline"]
        );
        let rows = j["baseline"]["metrics"].as_array().expect("metrics");
        assert!(rows.len() >= 10, "{rows:?}");
        assert!(rows.iter().all(|r| r["left_band"] == false));
        // Data, ACKs and stray CNPs in our class; ARP in none.
        let pps = metric(&j, u64::from(DSCP), "packets_per_s");
        let v = pps["value"].as_f64().expect("value");
        let median = pps["median"].as_f64().expect("median");
        assert!((v - 1250.0).abs() < 15.0, "{pps}");
        assert!((median - 1250.0).abs() < 15.0, "{pps}");
        assert!(pps["samples"].as_u64().is_some_and(|n| n >= 27), "{pps}");
        assert_eq!(metric(&j, 255, "arp_per_s")["left_band"], false);
    }
    assert_eq!(
        analyze_json(&file, &capture, &[])["baseline"]["source"]["kind"],
        "capture"
    );
    let text = analyze_text(&file, &profile, &[]);
    assert!(text.contains("  every metric within its band ("), "{text}");
    // A sidecar's covered span sets the window the rates are over.
    let covered = [plan.start - SEC, plan.start + 11 * SEC];
    std::fs::write(
        dir.path().join("healthy.json"),
        serde_json::json!({"window": {"covered_start_ns": covered[0], "covered_end_ns": covered[1]}})
            .to_string(),
    )
    .expect("sidecar");
    let j = analyze_json(&file, &profile, &[]);
    let w = &j["baseline"]["window"];
    assert_eq!(w["basis"], "sidecar");
    assert_eq!(w["seconds"].as_f64(), Some(12.0));
    let v = metric(&j, u64::from(DSCP), "packets_per_s")["value"]
        .as_f64()
        .expect("value");
    let frames_in_class = frames(&plan)
        .iter()
        .filter(|(_, f)| f.len() > 15 && f[12..14] == [0x08, 0x00])
        .count() as f64;
    assert!((v - frames_in_class / 12.0).abs() < 1e-6, "{v}");
}

#[test]
fn traffic_that_collapsed_is_below_its_band() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, profile) = baseline(dir.path());
    let file = dir.path().join("collapsed.pcap");
    write_pcap(
        &file,
        frames(&Plan {
            data_per_s: 100,
            ..window(5)
        }),
    );
    let j = analyze_json(&file, &profile, &[]);
    let d = deviations(&j);
    let ours: Vec<(&str, &str)> = d
        .iter()
        .filter(|(_, c, _)| *c == u64::from(DSCP))
        .map(|(m, _, s)| (m.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        ours,
        [("bits_per_s", "below"), ("packets_per_s", "below")],
        "{}",
        j["baseline"]
    );
    let text = j["baseline"]["deviations"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("below its p1 of"), "{text}");
}

/// Frames per DSCP (255: no IPv4) and the span, per tshark.
fn tshark_classes(file: &Path) -> (std::collections::BTreeMap<u64, u64>, f64) {
    let mut per = std::collections::BTreeMap::new();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for line in common::tshark_fields(
        file,
        None,
        &["frame.time_epoch", "infiniband", "ip.dsfield.dscp"],
    )
    .lines()
    .filter(|l| !l.is_empty())
    {
        let mut cols = line.split('\t');
        let ts = common::epoch_ns(cols.next().unwrap_or(""));
        first = first.min(ts);
        last = last.max(ts);
        let ib = cols.next().is_some_and(|x| !x.is_empty());
        let dscp = cols.next().and_then(|x| x.parse::<u64>().ok());
        let class = match (ib, dscp) {
            (true, Some(d)) => d,
            _ => 255,
        };
        *per.entry(class).or_insert(0) += 1;
    }
    (per, (last - first) as f64 / 1e9)
}

/// `src` rewritten as pcapng with one interface called `name` (same packets and times).
fn as_pcapng(src: &Path, dst: &Path, name: &str) {
    let file = std::fs::File::open(src).expect("open");
    let mut r = Reader::new(std::io::BufReader::new(file)).expect("reader");
    let mut out = pcapng::section_header(&[]);
    let mut first = true;
    while let Some(p) = r.next_packet().expect("packet") {
        if first {
            out.extend(pcapng::interface_blocks(&[pcapng::InterfaceDesc {
                name: name.to_string(),
                description: String::new(),
                linktype: p.link_type as u16,
                snaplen: 65535,
                filter: String::new(),
            }]));
            first = false;
        }
        let mut epb = vec![0u8; pcapng::epb_len(p.data.len())];
        pcapng::put_epb(&mut epb, 0, p.ts_ns, p.orig_len, p.data);
        out.extend(epb);
    }
    std::fs::write(dst, out).expect("write pcapng");
}

#[test]
fn two_shared_captures_compare_with_rates_as_tshark_counts() {
    let pcaps = common::data_dir().join("pcaps");
    let base = pcaps.join("montybeatnik-rdma-roce-lab_test.pcap");
    let file = pcaps.join("montybeatnik-rdma-roce-lab_roce_capture_read-write-ecn.pcap");
    let j = analyze_json(&file, &base, &[]);
    let b = &j["baseline"];
    assert_eq!(b["source"]["kind"], "capture");
    assert_eq!(b["matched_by"], "interface");
    let (per_class, span) = tshark_classes(&file);
    assert!((b["window"]["seconds"].as_f64().expect("seconds") - span).abs() < 1e-6);
    let rows = b["metrics"].as_array().expect("metrics");
    for (class, n) in &per_class {
        let row = rows
            .iter()
            .find(|r| r["class"] == *class && r["metric"] == "packets_per_s")
            .unwrap_or_else(|| panic!("no class {class}: {b}"));
        let v = row["value"].as_f64().expect("value");
        assert!(
            (v - *n as f64 / span).abs() < 1e-6,
            "class {class}: {v} vs tshark {n} frames / {span} s"
        );
        assert_eq!(row["interface"], "capture");
    }
    // Every metric of every class is listed with its band.
    for class in per_class.keys() {
        for m in [
            "bits_per_s",
            "cnp_per_s",
            "go_back_n_per_s",
            "pfc_frames_per_s",
        ] {
            let row = metric(&j, *class, m);
            assert!(
                row["p99"].is_number() && row["left_band"].is_boolean(),
                "{row}"
            );
        }
    }
    // Deviations are exactly the rows that left their band.
    let left = rows.iter().filter(|r| r["left_band"] == true).count();
    assert_eq!(b["deviations"].as_array().map(Vec::len), Some(left));

    // The same capture as pcapng from another host, interface `ens1f0np0`: one
    // interface each, names differ, compared by class all the same.
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other-host.pcapng");
    as_pcapng(&file, &other, "ens1f0np0");
    let k = analyze_json(&other, &base, &[]);
    assert_eq!(k["baseline"]["matched_by"], "class");
    let note = k["baseline"]["note"].as_str().unwrap_or("");
    assert!(
        note.contains("capture") && note.contains("ens1f0np0"),
        "{note}"
    );
    assert_eq!(
        k["baseline"]["metrics"].as_array().map(Vec::len),
        Some(rows.len())
    );
    assert!(k["baseline"]["metrics"]
        .as_array()
        .is_some_and(|m| m.iter().all(|r| r["interface"] == "ens1f0np0")));
    let text = analyze_text(&other, &base, &[]);
    assert!(text.contains("compared by traffic class"), "{text}");
}

#[test]
fn every_shared_capture_against_itself_is_within_every_band() {
    for file in common::sample_pcaps(&["pcap", "pcapng"]) {
        let j = analyze_json(&file, &file, &[]);
        let b = &j["baseline"];
        assert_eq!(
            b["deviations"].as_array().map(Vec::len),
            Some(0),
            "{}: {b}",
            file.display()
        );
        assert!(
            b["metrics"].as_array().is_some_and(|m| !m.is_empty()),
            "{}: {b}",
            file.display()
        );
        assert_eq!(b["unmatched_interfaces"].as_array().map(Vec::len), Some(0));
    }
}

#[test]
fn a_bad_baseline_is_one_line_naming_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = common::data_dir().join("pcaps/montybeatnik-rdma-roce-lab_test.pcap");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a baseline\n").expect("write");
    let report = dir.path().join("x.summary.json");
    std::fs::write(
        &report,
        r#"{"schema": "tripcap.analyze.connections", "version": 5}"#,
    )
    .expect("write");
    let truncated = dir.path().join("cut.pcap");
    let whole = std::fs::read(&file).expect("read");
    std::fs::write(&truncated, &whole[..100]).expect("write");
    let cases = [
        (dir.path().join("missing.json"), "cannot read the baseline"),
        (text, "neither a profile (JSON) nor a pcap/pcapng capture"),
        (report, "is JSON but not a baseline profile"),
        (truncated, "the baseline capture"),
    ];
    for (base, says) in cases {
        let out = common::run(
            common::tripcap()
                .arg("analyze")
                .arg(&file)
                .arg("--baseline")
                .arg(&base),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {err}", base.display());
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains("give ") && !err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// `frames` as the window writer writes them: pcapng, one interface named `name`.
fn write_pcapng(path: &Path, name: &str, frames: &[(i64, Vec<u8>)]) {
    let mut out = pcapng::section_header(&[]);
    out.extend(pcapng::interface_blocks(&[pcapng::InterfaceDesc {
        name: name.to_string(),
        description: String::new(),
        linktype: 1,
        snaplen: 128,
        filter: String::new(),
    }]));
    for (ts, f) in frames {
        let data = &f[..f.len().min(128)];
        let mut epb = vec![0u8; pcapng::epb_len(data.len())];
        pcapng::put_epb(&mut epb, 0, *ts, f.len() as u32, data);
        out.extend(epb);
    }
    std::fs::write(path, out).expect("write pcapng");
}

#[test]
fn the_agents_report_compares_the_window_with_the_host_profile() {
    use std::os::unix::fs::PermissionsExt;
    use tripcap::analyze::baseline::{Profile, Summarizer};

    // The host's profile as the agent's baseline thread makes it: 1-second summaries of
    // what the ring saw on `eth0`.
    let mut s = Summarizer::new(SEC);
    let mut history = Vec::new();
    for (ts, f) in frames(&Plan::healthy(3, T0, 30)) {
        history.extend(s.packet("eth0", 1, ts, &f[..f.len().min(128)], f.len() as u32));
    }
    history.extend(s.tick(i64::MAX));
    let profile = Profile::of(&history);

    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("incident-1.pcapng");
    let plan = Plan {
        cnp_per_s: 100,
        ..window(21)
    };
    write_pcapng(&pcap, "eth0", &frames(&plan));
    let (start, end) = (plan.start - SEC, plan.start + 10 * SEC);
    let sidecar: tripcap::sidecar::Sidecar = serde_json::from_value(serde_json::json!({
        "schema": "tripcap.sidecar", "tripcap_version": "test", "incident": "incident-1",
        "host": "h", "file": "incident-1.pcapng", "triggers": [], "suppressed_matches": 0,
        "window": {"asked_start_ns": start, "asked_end_ns": end, "covered_start_ns": start,
            "covered_end_ns": end, "asked": ["", ""], "covered": ["", ""], "complete": true,
            "shortfall": []},
        "packets": 0, "bytes": 0, "wire_bytes": 0, "interfaces": [],
        "ring_evictions": 0, "ring_full_drops": 0
    }))
    .expect("a sidecar");
    let files = tripcap::analyze::write_capture_report_with(&pcap, &sidecar, Some(&profile))
        .expect("report");
    let mode = std::fs::metadata(&files.summary)
        .expect("summary")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let j: Value =
        serde_json::from_slice(&std::fs::read(&files.summary).expect("read")).expect("JSON");
    let b = &j["baseline"];
    assert_eq!(b["source"]["kind"], "host");
    assert!(b["source"].get("file").is_none(), "{b}");
    assert_eq!(b["matched_by"], "interface");
    assert_eq!(b["window"]["basis"], "sidecar");
    assert_eq!(b["window"]["seconds"].as_f64(), Some(11.0));
    let d = &b["deviations"][0];
    assert_eq!(d["metric"], "cnp_per_s");
    assert_eq!(d["interface"], "eth0");
    // 1000 CNPs over the sidecar's 11 s.
    assert!(
        (d["value"].as_f64().unwrap_or(0.0) - 1000.0 / 11.0).abs() < 1e-6,
        "{d}"
    );
    assert!(
        d["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("cnp_per_s 90.9/s on eth0 class 26: ")),
        "{d}"
    );
    let svg = std::fs::read_to_string(&files.svg).expect("svg");
    assert!(
        svg.contains("Against the baseline (this host&apos;s baseline: ")
            && svg.contains("cnp_per_s 90.9/s on eth0 class 26: "),
        "{svg}"
    );
    // A window in which eth0 carried nothing at all: traffic below its band.
    let quiet = dir.path().join("incident-2.pcapng");
    write_pcapng(&quiet, "eth0", &[]);
    let mut side = serde_json::to_value(&sidecar).expect("sidecar json");
    side["interfaces"] = serde_json::json!([{"name": "eth0", "linktype": 1, "snaplen": 128,
        "filter": "", "tstamp_precision": "nano", "packets": 0, "kernel_drops": 0, "if_drops": 0}]);
    let side: tripcap::sidecar::Sidecar = serde_json::from_value(side).expect("a sidecar");
    let files =
        tripcap::analyze::write_capture_report_with(&quiet, &side, Some(&profile)).expect("report");
    let j: Value =
        serde_json::from_slice(&std::fs::read(&files.summary).expect("read")).expect("JSON");
    let d = deviations(&j);
    assert!(
        d.contains(&(
            "packets_per_s".to_string(),
            u64::from(DSCP),
            "below".to_string()
        )),
        "{}",
        j["baseline"]
    );
    // Without a profile, no section.
    let files = tripcap::analyze::write_capture_report_with(&pcap, &sidecar, None).expect("report");
    let j: Value =
        serde_json::from_slice(&std::fs::read(&files.summary).expect("read")).expect("JSON");
    assert!(j.get("baseline").is_none());
}
