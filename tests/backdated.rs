//! Windows placed by evidence: a watchdog line that says when it was written
//! and how long the collective ran produces a capture that starts at
//! onset − pre, not at read time − pre. Real follower, real replay at 1x,
//! checked with tshark.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;

const S: i64 = 1_000_000_000;
const MS: i64 = 1_000_000;
/// 2026-11-30T00:53:20Z.
const T0: i64 = 1_796_000_000 * S;

#[test]
fn watchdog_ran_for_moves_the_window_back_to_the_onset() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 7 s of traffic, one packet every 10 ms.
    let RealtimeReplay { child, log, out, sent } = start_realtime_replay(
        dir.path(),
        T0,
        10 * MS,
        700,
        0x21,
        "[[trigger]]\nname = \"wd\"\nclass = \"nccl_timeout\"\npattern = \"Watchdog caught collective operation timeout\"\npre = \"1s\"\npost = \"1s\"",
    );
    std::thread::sleep(Duration::from_millis(800));
    // Written at T0+4 s (its own timestamp), stuck for 2 s: onset T0+2 s,
    // window [T0+1 s, T0+5 s]. Read-time placement would start ~3 s later.
    let t = T0 + 4 * S;
    let line = format!(
        "{} [rank0]: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=2000) ran for 2000 milliseconds before timing out.\n",
        tripcap::clock::rfc3339(t)
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .expect("append");
    let o = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");

    let files = sidecars(&out);
    assert_eq!(files.len(), 1, "{stderr}");
    let side = read_sidecar(&files[0]);
    let rec = &side.triggers[0];
    assert_eq!(rec.at_ns, t, "T is the line's own time");
    assert_eq!(rec.onset_ns, Some(t - 2 * S), "onset = T - ran for");
    assert_eq!(rec.asked, [T0 + S, T0 + 5 * S]);
    assert!(side.window.complete, "{:?}", side.window.shortfall);

    let rows = tshark_rows(&out.join(&side.file));
    let expected: Vec<i64> = sent
        .iter()
        .map(|(ts, _)| *ts)
        .filter(|ts| (T0 + S..=T0 + 5 * S).contains(ts))
        .collect();
    assert_eq!(
        rows.first().map(|r| r.ts),
        Some(T0 + S),
        "starts at onset - pre"
    );
    assert_eq!(
        rows.last().map(|r| r.ts),
        Some(T0 + 5 * S),
        "ends at T + post"
    );
    assert_eq!(rows.len(), expected.len());
}

#[test]
fn onset_before_the_ring_is_covered_as_far_as_it_reaches_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let RealtimeReplay { child, log, out, .. } = start_realtime_replay(
        dir.path(),
        T0,
        10 * MS,
        400,
        0x22,
        "[[trigger]]\nname = \"wd\"\npattern = \"Watchdog caught collective operation timeout\"\npre = \"1s\"\npost = \"500ms\"",
    );
    std::thread::sleep(Duration::from_millis(800));
    // No timestamp: T is the read time; stuck for 10 minutes: far before the ring.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(b"[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.\n"))
        .expect("append");
    let o = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let files = sidecars(&out);
    assert_eq!(files.len(), 1, "{stderr}");
    let side = read_sidecar(&files[0]);
    let rec = &side.triggers[0];
    assert_eq!(rec.onset_ns, Some(rec.at_ns - 600 * S));
    assert_eq!(side.window.asked_start_ns, rec.at_ns - 601 * S);
    assert!(!side.window.complete);
    assert!(!side.window.shortfall.is_empty());
    let rows = tshark_rows(&out.join(&side.file));
    assert_eq!(
        rows.first().map(|r| r.ts),
        Some(T0),
        "from the first packet the ring holds"
    );
    assert_eq!(side.window.covered_start_ns, T0);
}
