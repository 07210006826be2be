//! Replay: saved captures fed through the same ring with manual triggers
//! (`--from-pcap`, `--trigger-at`), checked with tshark.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;

use common::*;

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const C: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);
/// 2026-11-30T00:00:00Z
const T0: i64 = 1_796_000_000 * 1_000_000_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

fn secs(ns: i64) -> String {
    format!("{}.{:09}", ns / S, ns % S)
}

fn replay(out: &Path, files: &[&Path], extra: &[&str]) -> std::process::Output {
    let mut cmd = tripcap();
    cmd.arg("run").arg("-o").arg(out);
    for f in files {
        cmd.arg("--from-pcap").arg(f);
    }
    cmd.args(extra);
    let o = run(&mut cmd);
    assert!(
        o.status.success(),
        "tripcap run failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Both interfaces' packets with a timestamp `keep` accepts, in the order a
/// capture file must hold them: by time, the lower interface first on ties.
fn merged(
    s1: &[(i64, u32)],
    s2: &[(i64, u32)],
    keep: impl Fn(i64) -> bool,
) -> Vec<(i64, String, u32)> {
    let mut v: Vec<(i64, String, u32)> = s1
        .iter()
        .map(|(ts, p)| (*ts, "replay:if1.pcap".to_string(), *p))
        .chain(
            s2.iter()
                .map(|(ts, p)| (*ts, "replay:if2.pcap".to_string(), *p)),
        )
        .filter(|(ts, _, _)| keep(*ts))
        .collect();
    v.sort();
    v
}

/// (time, interface, PSN) of every packet in the capture `side` describes, by tshark.
fn file_rows(out: &Path, side: &tripcap::sidecar::Sidecar) -> Vec<(i64, String, u32)> {
    tshark_rows(&out.join(&side.file))
        .iter()
        .map(|r| (r.ts, r.iface.clone(), r.psn))
        .collect()
}

#[test]
fn overlapping_triggers_merge_into_one_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    let sent = write_generated(&pcap, T0, MS, 10_000, A, B, 0x11);
    let out = dir.path().join("out");
    let (t1, t2) = (T0 + 4 * S, T0 + 5 * S + 500 * MS);
    replay(
        &out,
        &[&pcap],
        &[
            "--pre",
            "2s",
            "--post",
            "2s",
            "--trigger-at",
            &secs(t1),
            "--trigger-at",
            &secs(t2),
        ],
    );

    let files = sidecars(&out);
    assert_eq!(files.len(), 1, "one file for two overlapping triggers");
    let side = read_sidecar(&files[0]);
    assert_eq!(
        side.triggers.iter().map(|t| t.at_ns).collect::<Vec<_>>(),
        vec![t1, t2]
    );
    assert_eq!(
        (side.window.asked_start_ns, side.window.asked_end_ns),
        (t1 - 2 * S, t2 + 2 * S)
    );
    assert!(side.window.complete, "{:?}", side.window.shortfall);
    let expected: Vec<u32> = sent
        .iter()
        .filter(|(ts, _)| *ts >= t1 - 2 * S && *ts <= t2 + 2 * S)
        .map(|(_, psn)| *psn)
        .collect();
    let got: Vec<u32> = tshark_rows(&out.join(&side.file))
        .iter()
        .map(|r| r.psn)
        .collect();
    assert_eq!(got, expected);
    assert_eq!(
        capture_comments(&out.join(&side.file))
            .iter()
            .filter(|c| c.starts_with("trigger manual"))
            .count(),
        2
    );
}

#[test]
fn separate_triggers_make_separate_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    write_generated(&pcap, T0, MS, 10_000, A, B, 0x11);
    let out = dir.path().join("out");
    replay(
        &out,
        &[&pcap],
        &[
            "--pre",
            "1s",
            "--post",
            "1s",
            "--trigger-at",
            &secs(T0 + 2 * S),
            "--trigger-at",
            &secs(T0 + 7 * S),
        ],
    );
    let files = sidecars(&out);
    assert_eq!(files.len(), 2);
    for f in files {
        let side = read_sidecar(&f);
        assert_eq!(
            side.packets, 2001,
            "[T-1s, T+1s] at 1 packet/ms, both ends included"
        );
        assert_eq!(tshark_rows(&out.join(&side.file)).len(), 2001);
    }
}

/// Packets the ring held before `t` when `memory_limit` ran out, with the
/// ring compressing or not; the window's packets checked against what was sent.
fn held_before_trigger(dir: &Path, compress: bool) -> usize {
    let pcap = dir.join("in.pcap");
    let sent = write_generated(&pcap, T0, MS / 4, 40_000, A, B, 0x11);
    let cfg = dir.join(format!("compress-{compress}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[ring]\nmemory_limit = \"512KiB\"\nblock_size = \"16KiB\"\ncompress = {compress}\n"
        ),
    )
    .expect("config");
    let out = dir.join(format!("out-{compress}"));
    let t = T0 + 9 * S + 900 * MS;
    replay(
        &out,
        &[&pcap],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--pre",
            "10s",
            "--post",
            "0s",
            "--trigger-at",
            &secs(t),
        ],
    );
    let side = read_sidecar(&sidecars(&out)[0]);
    let covered = side.window.covered_start_ns;
    let rows = tshark_rows(&out.join(&side.file));
    let expected: Vec<u32> = sent
        .iter()
        .filter(|(ts, _)| *ts >= covered && *ts <= t)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(
        rows.iter().map(|r| r.psn).collect::<Vec<_>>(),
        expected,
        "compress = {compress}"
    );
    expected.len()
}

#[test]
fn a_compressing_ring_reaches_further_back_with_the_same_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = held_before_trigger(dir.path(), false);
    let packed = held_before_trigger(dir.path(), true);
    println!("held: {plain} packets raw, {packed} compressing");
    assert!(plain < 5_000, "the raw ring evicts: {plain}");
    assert!(packed >= 10 * plain, "{packed} vs {plain}");
}

#[test]
fn ring_eviction_at_the_byte_bound_is_reported_as_coverage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    let sent = write_generated(&pcap, T0, MS, 10_000, A, B, 0x11);
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        "[ring]\nmemory_limit = \"256KiB\"\nblock_size = \"16KiB\"\ncompress = false\n",
    )
    .expect("config");
    let out = dir.path().join("out");
    let t = T0 + 9 * S;
    replay(
        &out,
        &[&pcap],
        &[
            "--config",
            cfg.to_str().expect("utf8"),
            "--pre",
            "5s",
            "--post",
            "500ms",
            "--trigger-at",
            &secs(t),
        ],
    );

    let side = read_sidecar(&sidecars(&out)[0]);
    assert!(!side.window.complete);
    let covered = side.window.covered_start_ns;
    assert!(covered > t - 5 * S && covered < t, "covered from {covered}");
    assert!(
        side.window
            .shortfall
            .iter()
            .any(|s| s.contains("the ring reached back only to")),
        "{:?}",
        side.window.shortfall
    );
    assert!(capture_comments(&out.join(&side.file))
        .iter()
        .any(|c| c.contains("INCOMPLETE")));
    // Everything from the covered start to the end is there, nothing before.
    let rows = tshark_rows(&out.join(&side.file));
    let expected: Vec<u32> = sent
        .iter()
        .filter(|(ts, _)| *ts >= covered && *ts <= t + 500 * MS)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(rows.iter().map(|r| r.psn).collect::<Vec<_>>(), expected);
    // The ring holds 256 KiB of 144-byte records (128 captured + 16): about
    // 1.8 s of this traffic before the trigger, not the 5 s asked.
    let before = sent
        .iter()
        .filter(|(ts, _)| *ts >= covered && *ts < t)
        .count();
    assert!(
        (1500..1900).contains(&before),
        "{before} packets kept before the trigger"
    );
}

#[test]
fn two_interfaces_go_into_one_file_in_time_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (p1, p2) = (dir.path().join("if1.pcap"), dir.path().join("if2.pcap"));
    // Interleaved: if1 on even ms, if2 on odd ms.
    let s1 = write_generated(&p1, T0, 2 * MS, 3000, A, B, 0x21);
    let s2 = write_generated(&p2, T0 + MS, 2 * MS, 3000, A, C, 0x22);
    let out = dir.path().join("out");
    let t = T0 + 3 * S;
    replay(
        &out,
        &[&p1, &p2],
        &["--pre", "1s", "--post", "1s", "--trigger-at", &secs(t)],
    );
    let side = read_sidecar(&sidecars(&out)[0]);
    assert_eq!(side.interfaces.len(), 2);
    let expected = merged(&s1, &s2, |ts| ts >= t - S && ts <= t + S);
    assert_eq!(file_rows(&out, &side), expected);
    assert_eq!(
        side.interfaces.iter().map(|i| i.packets).sum::<u64>(),
        expected.len() as u64
    );
}

/// Replay `files` with 8 KiB ring blocks, so a window spans many: most go out
/// whole, those cut by the window's edges or interleaved with another interface
/// record by record. One manual trigger at `t` with the given `pre`/`post`.
fn replay_small_blocks(
    dir: &Path,
    files: &[&Path],
    pre: &str,
    post: &str,
    t: i64,
) -> std::path::PathBuf {
    let config = dir.join("small-blocks.toml");
    std::fs::write(
        &config,
        "[ring]\nblock_size = \"8KiB\"\n[output]\nreports = false\n",
    )
    .expect("write config");
    let out = dir.join("out");
    let config = config.to_str().expect("utf-8 path");
    replay(
        &out,
        files,
        &[
            "--config",
            config,
            "--pre",
            pre,
            "--post",
            post,
            "--trigger-at",
            &secs(t),
        ],
    );
    out
}

#[test]
fn whole_blocks_and_single_records_merge_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (p1, p2) = (dir.path().join("if1.pcap"), dir.path().join("if2.pcap"));
    // if1 for 1.5 s, then if2 starting at if1's last timestamp (a tie, which
    // goes to the lower interface first), the two overlapping for 10 packets.
    let s1 = write_generated(&p1, T0, MS / 2, 3000, A, B, 0x21);
    let last1 = s1.last().expect("packets").0;
    let s2 = write_generated(&p2, last1 - 9 * MS / 2, MS / 2, 3000, A, C, 0x22);
    let t = T0 + 3 * S / 2;
    let out = replay_small_blocks(dir.path(), &[&p1, &p2], "1s", "1s", t);
    let side = read_sidecar(&sidecars(&out)[0]);
    let expected = merged(&s1, &s2, |ts| ts >= t - S && ts <= t + S);
    assert_eq!(file_rows(&out, &side), expected);
    assert_eq!(side.packets, expected.len() as u64);
}

#[test]
fn a_whole_block_ending_on_a_tie_waits_for_the_lower_interface() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (p1, p2) = (dir.path().join("if1.pcap"), dir.path().join("if2.pcap"));
    // 8 KiB blocks of 160-byte records (32 bytes of framing + 128 captured):
    // 51 packets of if2 per block. if1 has one packet at the time of each of
    // those blocks' last packets, so each if2 block could go out whole only by
    // jumping the tie, which belongs to if1 (the lower interface index).
    const PER_BLOCK: i64 = 8192 / (32 + 128);
    let t2: Vec<i64> = (0..PER_BLOCK * 20).map(|k| T0 + k * MS / 2).collect();
    let t1: Vec<i64> = (0..20)
        .map(|n| T0 + (PER_BLOCK * n + PER_BLOCK - 1) * MS / 2)
        .collect();
    let s1 = write_generated_at(&p1, &t1, A, B, 0x41);
    let s2 = write_generated_at(&p2, &t2, A, C, 0x42);
    let out = replay_small_blocks(dir.path(), &[&p1, &p2], "10s", "0s", T0 + S);
    let side = read_sidecar(&sidecars(&out)[0]);
    let got = file_rows(&out, &side);
    let expected = merged(&s1, &s2, |_| true);
    let first_difference = got.iter().zip(&expected).position(|(g, e)| g != e);
    assert_eq!(first_difference, None, "file order differs there");
    assert_eq!(got.len(), expected.len());
}

#[test]
fn a_packet_stamped_before_the_window_is_left_out_of_a_block_it_shares() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("clock-step.pcap");
    // 1 ms apart, but packet 500's clock stepped back 5 s: before the window.
    let times: Vec<i64> = (0..1000i64)
        .map(|i| if i == 500 { T0 - 5 * S } else { T0 + i * MS })
        .collect();
    let sent = write_generated_at(&p, &times, A, B, 0x31);
    let t = T0 + S / 2;
    let out = replay_small_blocks(dir.path(), &[&p], "500ms", "2s", t);
    let side = read_sidecar(&sidecars(&out)[0]);
    // File order is capture order; only the stepped-back packet is outside.
    let expected: Vec<(i64, u32)> = sent.iter().copied().filter(|&(ts, _)| ts >= T0).collect();
    assert_eq!(expected.len(), 999);
    let got: Vec<(i64, u32)> = file_rows(&out, &side)
        .into_iter()
        .map(|(ts, _, psn)| (ts, psn))
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn empty_window_holds_only_the_trigger_instant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    write_generated(&pcap, T0, MS, 3000, A, B, 0x11);
    let out = dir.path().join("out");
    // One trigger exactly on a packet, one between packets.
    replay(
        &out,
        &[&pcap],
        &[
            "--pre",
            "0s",
            "--post",
            "0s",
            "--trigger-at",
            &secs(T0 + S),
            "--trigger-at",
            &secs(T0 + 2 * S + MS / 2),
        ],
    );
    let mut counts: Vec<u64> = sidecars(&out)
        .iter()
        .map(|f| read_sidecar(f).packets)
        .collect();
    counts.sort();
    assert_eq!(counts, vec![0, 1]);
    for f in sidecars(&out) {
        let side = read_sidecar(&f);
        assert!(side.window.complete);
        assert_eq!(
            tshark_rows(&out.join(&side.file)).len() as u64,
            side.packets,
            "tshark reads the file"
        );
    }
}

#[test]
fn replay_of_a_real_capture_keeps_every_packet_and_its_timestamp() {
    let real = data_dir().join("pcaps/synthetic_roce_rxvantage_vlan_nsec.pcap");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let all = tshark_rows(&real);
    let (first, last) = (all[0].ts, all[all.len() - 1].ts);
    let mid = first + (last - first) / 2;
    replay(
        &out,
        &[&real],
        &["--pre", "1h", "--post", "1h", "--trigger-at", &secs(mid)],
    );
    let side = read_sidecar(&sidecars(&out)[0]);
    let ours: Vec<(i64, String, u32)> = tshark_rows(&out.join(&side.file))
        .into_iter()
        .map(|r| (r.ts, r.qp, r.psn))
        .collect();
    let theirs: Vec<(i64, String, u32)> = all.into_iter().map(|r| (r.ts, r.qp, r.psn)).collect();
    assert_eq!(ours, theirs);
    assert!(
        !side.window.complete,
        "a 2 h window over a short file must say it stops early"
    );
}

#[test]
fn a_truncated_file_keeps_what_was_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    write_generated(&pcap, T0, MS, 1000, A, B, 0x11);
    let len = std::fs::metadata(&pcap).expect("stat").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&pcap)
        .expect("open");
    f.set_len(len - 100).expect("truncate mid-packet");
    let out = dir.path().join("out");
    let o = replay(
        &out,
        &[&pcap],
        &[
            "--pre",
            "10s",
            "--post",
            "10s",
            "--trigger-at",
            &secs(T0 + 500 * MS),
        ],
    );
    let side = read_sidecar(&sidecars(&out)[0]);
    assert_eq!(side.packets, 999);
    assert!(String::from_utf8_lossy(&o.stderr).contains("file ends early"));
}
