//! One failure is printed several times (watchdog line, "Timeout at NCCL work",
//! "Some NCCL operations…", "To avoid data inconsistency…", the watchdog
//! thread's exception, `terminate called…`, `what():`), by more than one
//! built-in trigger: it must make one capture, every line recorded or counted.
//! Real corpus lines, real follower, a realtime replay.

mod common;

use std::io::Write;
use std::net::Ipv4Addr;
use std::time::Duration;

use common::*;

const S: i64 = 1_000_000_000;

#[test]
fn one_failure_printed_seven_times_is_one_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("in.pcap");
    write_generated(
        &pcap,
        1_796_000_000 * S,
        10_000_000,
        500,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x21,
    );
    // positives.tsv: vllm#6042 rows 2-6 (nccl_timeout), sglang#1693 row 107 (`what():`)
    // and row 108 (`terminate called`, nccl_system_error: another trigger).
    let lines: Vec<String> = [2, 3, 4, 5, 6, 107, 108]
        .iter()
        .map(|&n| corpus_line("positives.tsv", n))
        .collect();
    let log = dir.path().join("rank1.log");
    std::fs::write(&log, b"").expect("log");
    let out = dir.path().join("out");
    let cfg = dir.path().join("t.toml");
    std::fs::write(&cfg, format!("packs = [\"nccl\", \"pytorch\"]\n[output]\nreports = false\n[logs]\npaths = [{log:?}]\n")).expect("config");

    let child = tripcap()
        .args(["run", "--speed", "1x", "--from-pcap"])
        .arg(&pcap)
        .arg("-c")
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1500));
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("log");
        for l in &lines {
            writeln!(f, "{l}").expect("write");
        }
    }
    let o = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");

    let files = sidecars(&out);
    assert_eq!(
        files.len(),
        1,
        "one capture for one failure: {files:?}\n{stderr}"
    );
    let side = read_sidecar(&files[0]);
    let names: std::collections::BTreeSet<&str> =
        side.triggers.iter().map(|t| t.name.as_str()).collect();
    let classes: std::collections::BTreeSet<&str> =
        side.triggers.iter().map(|t| t.class.as_str()).collect();
    assert!(
        classes.contains("nccl_timeout") && classes.contains("nccl_system_error"),
        "{classes:?} from {names:?}"
    );
    assert_eq!(
        side.triggers.len() as u64 + side.suppressed_matches,
        lines.len() as u64,
        "every line recorded or counted: {names:?}, suppressed {}",
        side.suppressed_matches
    );
}
