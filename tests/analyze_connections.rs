//! Per-connection analysis (`tripcap analyze FILE --json`) against the generator's ground
//! truth (`NAME.pcap.truth.tsv`) of the synthetic captures: packets, CNPs, ECN-CE, NAKs by
//! syndrome, go-back-N regressions, duplicates (retries of a captured packet), PSN gaps
//! (packets lost before the capture point and not simply re-sent next) and the stall.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tripcap::analyze::{run, AnalyzeArgs};

fn pcaps_dir() -> PathBuf {
    common::data_dir().join("pcaps")
}

struct Truth {
    captured: bool,
    dir_ab: bool,
    dqpn: String,
    opname: String,
    psn: u32,
    request: bool,
    ecn: String,
    syndrome: Option<u8>,
    labels: String,
    note: String,
}

fn read_truth(path: &Path) -> Vec<Truth> {
    let text = std::fs::read_to_string(path).expect("read truth");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("frame\t"))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|c| c[3] == "roce")
        .map(|c| Truth {
            captured: c[2] == "yes",
            dir_ab: c[5] == "A>B",
            dqpn: c[8].to_owned(),
            opname: c[6].to_owned(),
            psn: c[9].parse().expect("psn"),
            request: !(c[6] == "ACK" || c[6] == "CNP" || c[6].starts_with("READ_RESP")),
            ecn: c[11].to_owned(),
            syndrome: c[12]
                .strip_prefix("0x")
                .map(|h| u8::from_str_radix(h, 16).expect("syndrome")),
            labels: c[16].to_owned(),
            note: c.get(17).copied().unwrap_or("").to_owned(),
        })
        .collect()
}

#[derive(Debug, Default, PartialEq)]
struct Expect {
    packets: u64,
    cnps: u64,
    ecn_ce: u64,
    naks_seq: u64,
    naks_rnr: u64,
    psn_regressions: u64,
    duplicates: u64,
    psn_gaps: u64,
}

fn expectations(truth: &[Truth], v1: bool) -> (BTreeMap<String, Expect>, Option<(String, f64)>) {
    let (a, b) = if v1 {
        ("::ffff:10.0.0.1", "::ffff:10.0.0.2")
    } else {
        ("10.0.0.1", "10.0.0.2")
    };
    let key = |t: &Truth| {
        let (s, d) = if t.dir_ab { (a, b) } else { (b, a) };
        format!("{s} {d} {}", t.dqpn)
    };
    let mut m: BTreeMap<String, Expect> = BTreeMap::new();
    let mut stall = None;
    for (i, t) in truth.iter().enumerate() {
        let e = m.entry(key(t)).or_default();
        if !t.captured {
            // A loss shows as a gap unless the next captured request is its re-send.
            let next = truth[i + 1..]
                .iter()
                .find(|n| n.captured && n.request && key(n) == key(t));
            if t.request && next.is_some_and(|n| n.psn != t.psn) {
                e.psn_gaps += 1;
            }
            continue;
        }
        e.packets += 1;
        e.cnps += u64::from(t.opname == "CNP");
        e.ecn_ce += u64::from(t.ecn == "3");
        match t.syndrome {
            Some(s) if s & 0x60 == 0x60 && s & 0x1f == 0 => e.naks_seq += 1,
            Some(s) if s & 0x60 == 0x20 => e.naks_rnr += 1,
            _ => {}
        }
        e.psn_regressions += u64::from(t.labels.contains("psn_regression"));
        if t.labels.contains("_retry") {
            let seen = truth[..i]
                .iter()
                .any(|p| p.captured && key(p) == key(t) && p.psn == t.psn);
            e.duplicates += u64::from(seen);
        }
        if let Some(gap) = t
            .note
            .strip_prefix("gap ")
            .and_then(|g| g.strip_suffix(" s"))
        {
            stall = Some((key(t), gap.parse::<f64>().expect("gap seconds") * 1000.0));
        }
    }
    (m, stall)
}

fn analyze_json(pcap: &Path) -> serde_json::Value {
    let mut out = Vec::new();
    let args = AnalyzeArgs {
        file: pcap.to_owned(),
        packets: false,
        json: true,
        svg: None,
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut out).unwrap_or_else(|e| panic!("analyze: {e}"));
    serde_json::from_slice(&out).expect("valid JSON")
}

#[test]
fn connections_match_generator_truth() {
    for name in [
        "synthetic_roce_default",
        "synthetic_roce_rxvantage_vlan_nsec",
        "synthetic_rocev1",
    ] {
        let dir = pcaps_dir();
        let pcap = dir.join(format!("{name}.pcap"));
        let truth = read_truth(&dir.join(format!("{name}.pcap.truth.tsv")));
        let (want, stall) = expectations(&truth, name.contains("v1"));
        let json = analyze_json(&pcap);
        assert_eq!(json["version"], 5, "{name}: schema version");
        let conns = json["connections"].as_array().expect("connections");
        let mut got = BTreeMap::new();
        let n = |c: &serde_json::Value, f: &str| c[f].as_u64().unwrap_or(u64::MAX);
        for c in conns {
            let key = format!(
                "{} {} {}",
                c["src"].as_str().unwrap_or(""),
                c["dst"].as_str().unwrap_or(""),
                c["dest_qp"].as_str().unwrap_or("")
            );
            assert_eq!(n(c, "naks_other"), 0, "{name} {key}");
            got.insert(
                key,
                Expect {
                    packets: n(c, "packets"),
                    cnps: n(c, "cnps"),
                    ecn_ce: n(c, "ecn_ce"),
                    naks_seq: n(c, "naks_seq"),
                    naks_rnr: n(c, "naks_rnr"),
                    psn_regressions: n(c, "psn_regressions"),
                    duplicates: n(c, "duplicates"),
                    psn_gaps: n(c, "psn_gaps"),
                },
            );
        }
        let want: BTreeMap<_, _> = want.into_iter().filter(|(_, e)| e.packets > 0).collect();
        assert_eq!(got, want, "{name}");
        let total = |f: fn(&Expect) -> u64| got.values().map(f).sum::<u64>();
        assert!(
            total(|e| e.psn_regressions) >= 1 && total(|e| e.naks_seq) >= 1,
            "{name}"
        );
        let (stall_key, stall_ms) = stall.expect("truth has a stall");
        let c = conns
            .iter()
            .find(|c| {
                format!(
                    "{} {} {}",
                    c["src"].as_str().unwrap_or(""),
                    c["dst"].as_str().unwrap_or(""),
                    c["dest_qp"].as_str().unwrap_or("")
                ) == stall_key
            })
            .expect("stalled connection");
        let silence = c["max_silence_ms"].as_f64().unwrap_or(0.0);
        assert!(
            (silence - stall_ms).abs() < 1.0,
            "{name}: silence {silence} ms, truth {stall_ms} ms"
        );
    }
}

#[test]
fn summary_is_readable() {
    let pcap = pcaps_dir().join("synthetic_roce_default.pcap");
    let mut out = Vec::new();
    let args = AnalyzeArgs {
        file: pcap,
        packets: false,
        json: false,
        svg: None,
        link_speed: None,
        baseline: None,
    };
    run(&args, &mut out).expect("analyze");
    let text = String::from_utf8(out).expect("UTF-8");
    assert!(text.starts_with("601 frames: 590 RoCE v2"), "{text}");
    assert!(
        text.contains("go-back-N") && text.contains("RNR NAK") && text.contains("CNP"),
        "{text}"
    );
}

#[test]
fn missing_file_error_names_the_path() {
    let args = AnalyzeArgs {
        file: PathBuf::from("/nonexistent/x.pcap"),
        packets: true,
        json: false,
        svg: None,
        link_speed: None,
        baseline: None,
    };
    let err = run(&args, &mut Vec::new()).expect_err("must fail");
    assert!(
        err.to_string()
            .starts_with("cannot open capture file /nonexistent/x.pcap"),
        "{err}"
    );
}
