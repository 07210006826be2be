//! The recorder on a real ring and real files, through the agent: a named
//! trigger fired at chosen replay times (`--trigger-at NAME=TIME`), where
//! cooldown and merging decide how many captures a burst of firings makes.

mod common;

use std::net::Ipv4Addr;

use tripcap::sidecar::Sidecar;

const S: i64 = 1_000_000_000;
const T0: i64 = 1_796_000_000 * S;

/// `packets` generated packets, one every 10 ms from `T0`.
fn generated(dir: &std::path::Path, packets: usize) -> std::path::PathBuf {
    let pcap = dir.join("in.pcap");
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    common::write_generated(&pcap, T0, S / 100, packets, a, b, 0x11);
    pcap
}

#[test]
fn cooldown_suppresses_and_merges_without_extending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = generated(dir.path(), 6000);
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        "[[trigger]]\nname = \"wd\"\nclass = \"nccl_timeout\"\npattern = \"never matches 7f3a\"\n\
         pre = \"2s\"\npost = \"2s\"\ncooldown = \"30s\"\n\n[output]\nreports = false\n",
    )
    .expect("config");
    let out = dir.path().join("out");
    let at = |s: i64| format!("wd={}.000000000", (T0 + s * S) / S);
    let run = common::tripcap()
        .args(["run", "--from-pcap"])
        .arg(&pcap)
        .arg("-c")
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .args(["--trigger-at", &at(10), "--trigger-at", &at(11)])
        .args(["--trigger-at", &at(20), "--trigger-at", &at(45)])
        .output()
        .expect("run");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let mut reports: Vec<(Sidecar, std::path::PathBuf)> = std::fs::read_dir(&out)
        .expect("out dir")
        .filter_map(|e| {
            let p = e.expect("entry").path();
            let name = p.file_name()?.to_str()?.to_string();
            (name.ends_with(".json") && !name.starts_with('.')).then_some(p)
        })
        .map(|p| {
            let s: Sidecar =
                serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("sidecar");
            (s, p.with_extension("pcapng"))
        })
        .collect();
    reports.sort_by_key(|(r, _)| r.window.asked_start_ns);
    assert_eq!(
        reports.len(),
        2,
        "the firing at +20 s is suppressed (cooling, no window open)"
    );
    let (first, pcapng) = &reports[0];
    assert_eq!(first.triggers.len(), 1);
    assert_eq!(
        first.suppressed_matches, 1,
        "+11 s merged into the open window, only counted"
    );
    assert_eq!(
        first.window.asked_end_ns,
        T0 + 12 * S,
        "a cooling trigger does not extend the window"
    );
    assert_eq!(first.packets, 401, "[8 s, 12 s] at 100 packets/s");
    assert_eq!(common::tshark_rows_any(pcapng), 401);
    let (second, _) = &reports[1];
    assert_eq!(second.window.asked_start_ns, T0 + 43 * S);
    assert_eq!(
        second.suppressed_matches, 1,
        "the match suppressed at +20 s is carried into the trigger's next capture"
    );
}

#[test]
fn trigger_at_an_unknown_name_is_refused_before_capturing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = generated(dir.path(), 10);
    let run = common::tripcap()
        .args(["run", "--from-pcap"])
        .arg(&pcap)
        .arg("-o")
        .arg(dir.path().join("out"))
        .args(["--trigger-at", "nosuch=1796000000"])
        .output()
        .expect("run");
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("--trigger-at: no trigger is named `nosuch`"),
        "{err}"
    );
}
