//! The tshark oracle for `tripcap analyze --packets`: for every capture in
//! `tests/data/pcaps` that holds RoCE/InfiniBand, tshark (run live, with the decode-as options
//! from `NAME.tshark_cmd.txt`) and our table must agree row for row — same frames, same
//! fields. Frames tshark does not show as `infiniband` we must not print, and vice versa.
//!
//! The ERF file (native InfiniBand, no Ethernet/IP/UDP) is included: `wire` parses ERF
//! type 21 records (LRH, optional GRH, BTH) and uses the ERF timestamp as tshark does.
//!
//! Needs tshark (Debian package `tshark`). With `TRIPCAP_SHARED_DIR` set, the captures in
//! `$TRIPCAP_SHARED_DIR/pcaps` are compared as well (optional; see `common::sample_pcaps`).

mod common;

use std::path::Path;
use std::process::Command;

use tripcap::analyze::{run, AnalyzeArgs};

use common::{data_dir, sample_pcaps};

/// The `-d …` decode-as arguments recorded next to a capture.
fn decode_as(pcap: &Path) -> Vec<String> {
    let cmd = pcap.with_extension("tshark_cmd.txt");
    let text = std::fs::read_to_string(&cmd).unwrap_or_default();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut args = Vec::new();
    for w in words.windows(2) {
        if w[0] == "-d" {
            args.push("-d".to_owned());
            args.push(w[1].to_owned());
        }
    }
    args
}

const FIELDS: [&str; 16] = [
    "frame.number",
    "frame.time_epoch",
    "ip.src",
    "ipv6.src",
    "infiniband.grh.sgid",
    "infiniband.lrh.slid",
    "ip.dst",
    "ipv6.dst",
    "infiniband.grh.dgid",
    "infiniband.lrh.dlid",
    "infiniband.bth.opcode",
    "infiniband.bth.destqp",
    "infiniband.bth.psn",
    "infiniband.bth.a",
    "infiniband.aeth.syndrome",
    "udp.srcport",
];

/// tshark's rows, reduced to our nine columns.
fn tshark_rows(pcap: &Path) -> Vec<String> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(pcap).args(decode_as(pcap));
    cmd.args(["-Y", "infiniband", "-T", "fields", "-E", "occurrence=f"]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run tshark ({e}): apt-get install tshark"));
    assert!(out.status.success(), "tshark failed on {}", pcap.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let c: Vec<&str> = line.split('\t').collect();
            // No BTH (e.g. raw IB packets): not a transport packet, we don't print it.
            if c[10].is_empty() {
                return None;
            }
            // Address: native IB → GID if routed else LID; RoCE v1 → GID; RoCE v2 → IP.
            let addr = |ip: &str, ip6: &str, gid: &str, lid: &str| -> String {
                if !lid.is_empty() {
                    if gid.is_empty() { lid } else { gid }.to_owned()
                } else if !gid.is_empty() {
                    gid.to_owned()
                } else if !ip.is_empty() {
                    ip.to_owned()
                } else {
                    ip6.to_owned()
                }
            };
            let src = addr(c[2], c[3], c[4], c[5]);
            let dst = addr(c[6], c[7], c[8], c[9]);
            Some([c[0], c[1], &src, &dst, c[10], c[11], c[12], c[13], c[14]].join("\t"))
        })
        .collect()
}

fn our_rows(pcap: &Path) -> Vec<String> {
    let args = AnalyzeArgs {
        file: pcap.to_owned(),
        packets: true,
        json: false,
        svg: None,
        link_speed: None,
        baseline: None,
    };
    let mut out = Vec::new();
    run(&args, &mut out).unwrap_or_else(|e| panic!("analyze failed: {e}"));
    let text = String::from_utf8(out).expect("UTF-8 output");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("frame\ttime_epoch\tsrc\tdst\topcode\tdest_qp\tpsn\tackreq\taeth_syndrome")
    );
    lines.map(str::to_owned).collect()
}

#[test]
fn packets_table_equals_tshark_for_every_sample_capture() {
    let pcaps = sample_pcaps(&["pcap", "pcapng"]);
    assert!(
        pcaps.len() >= 8,
        "expected the 8 sample captures in {}",
        data_dir().join("pcaps").display()
    );
    let mut compared = 0;
    for pcap in &pcaps {
        let want = tshark_rows(pcap);
        if want.is_empty() {
            continue;
        }
        let got = our_rows(pcap);
        let name = pcap.file_name().unwrap_or_default().to_string_lossy();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{name}: row {} differs (ours, then tshark's)", i + 1);
        }
        assert_eq!(
            got.len(),
            want.len(),
            "{name}: we print {} rows, tshark {}",
            got.len(),
            want.len()
        );
        eprintln!("{name}: {} rows equal", got.len());
        compared += 1;
    }
    assert!(compared >= 8, "only {compared} captures held RoCE");
}

#[test]
fn decode_as_port_69_is_read_from_the_cmd_file() {
    let pcap = data_dir().join("pcaps/oferby-proxy_roce.pcap");
    assert_eq!(decode_as(&pcap), ["-d", "udp.port==69,infiniband"]);
}
