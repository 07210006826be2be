//! The baseline live on `lo` (root needed): the agent summarises generated
//! RoCE traffic into its history every second, a `deviation` trigger fires
//! when the CNP rate jumps far above what the baseline saw, not before the
//! baseline's minimum age (an earlier, smaller jump fires nothing), and a
//! trigger whose minimum age is not reached never fires. `tripcap baseline
//! show` and `export` then read the history the agent left; the capture's
//! report holds it against the host's profile, and `tripcap analyze
//! --baseline` reads the exported profile.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::*;
use tripcap::traffic::{Flow, Generator, ROCE_PORT};

const SRC: Ipv4Addr = Ipv4Addr::new(127, 91, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(127, 91, 0, 2);

/// A CNP as a NIC sends it: BTH with opcode 0x81 to `qp`, 16 reserved bytes, ICRC.
fn cnp(qp: u32) -> Vec<u8> {
    let mut p = vec![0u8; 12 + 16 + 4];
    p[0] = 0x81;
    p[2] = 0xff;
    p[3] = 0xff;
    p[5..8].copy_from_slice(&qp.to_be_bytes()[1..]);
    p
}

#[test]
fn a_cnp_jump_fires_deviation_once_the_baseline_is_old_enough() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let cfg = dir.path().join("t.toml");
    let port = free_port();
    std::fs::write(
        &cfg,
        format!(
            r#"[capture]
interfaces = ["lo"]
filter = "udp port 4791 and host {DST}"
[output]
dir = "{}"
[api]
listen = "127.0.0.1:{port}"
[baseline]
interval = "1s"
[[packet_trigger]]
name = "cnp-jump"
kind = "deviation"
metric = "cnp_per_s"
for = "2s"
min_age = "8s"
pre = "1s"
post = "1s"
cooldown = "1m"
[[packet_trigger]]
name = "cnp-jump-after-an-hour"
kind = "deviation"
metric = "cnp_per_s"
for = "2s"
min_age = "1h"
pre = "1s"
post = "1s"
"#,
            out.display()
        ),
    )
    .expect("config");
    let (mut agent, agent_log) = spawn_ready(
        tripcap().args(["run", "--config"]).arg(&cfg),
        "capturing",
        Duration::from_secs(20),
    );
    let log = || agent_log.lock().map(|l| l.clone()).unwrap_or_default();

    // 0–2 s quiet; 2–5 s 20 CNP/s (before the minimum age of 8 s: nothing may
    // fire); 5–10 s quiet; 10–14 s 400 CNP/s (20× the baseline's worst second).
    let sock = UdpSocket::bind(SocketAddr::from((SRC, 0))).expect("bind");
    let to = SocketAddr::from((DST, ROCE_PORT));
    let mut g = Generator::new(vec![Flow::new(0x71, 0x72, 1, 4)], 256);
    let mut buf = Vec::new();
    let cnp = cnp(0x72);
    let start = Instant::now();
    let tick = Duration::from_micros(2500); // 400 ticks a second
    let mut storm_started_ns = 0i64;
    for i in 0..(14 * 400u32) {
        if let Some(w) = (tick * i).checked_sub(start.elapsed()) {
            std::thread::sleep(w);
        }
        let second = i / 400;
        if i % 2 == 0 {
            g.next_packet(&mut buf).expect("packet");
            sock.send_to(&buf, to).expect("send");
        }
        let cnp_now = match second {
            2..=4 => i % 20 == 0,
            10..=13 => true,
            _ => false,
        };
        if cnp_now {
            if storm_started_ns == 0 && second >= 10 {
                storm_started_ns = tripcap::clock::now_ns();
            }
            sock.send_to(&cnp, to).expect("send");
        }
    }
    let waited = std::panic::catch_unwind(|| {
        wait_until(Duration::from_secs(20), "the deviation capture", || {
            !sidecars(&out).is_empty()
        })
    });
    // Let a second firing, if there were one, show up too.
    std::thread::sleep(Duration::from_secs(2));
    let status_json = http(port, "GET", "/status", "", Duration::from_secs(5));
    let metrics = http(port, "GET", "/metrics", "", Duration::from_secs(5));
    let status = interrupt(&mut agent);
    assert!(waited.is_ok(), "no capture; agent log:\n{}", log());
    assert!(status.success(), "{}", log());

    // What the API says of the baseline: summaries kept and written, none skipped.
    let (code, body) = status_json.expect("/status answers");
    assert_eq!(code, 200, "{body}");
    let st: serde_json::Value = serde_json::from_str(&body).expect("status json");
    let b = &st["baseline"];
    let summaries = b["summaries"].as_u64().expect("summaries");
    assert!(summaries >= 12, "a summary a second for about 15 s: {b}");
    assert!(b["written"].as_u64() >= Some(summaries), "{b}");
    assert_eq!(b["skipped_blocks"], 0, "{b}");
    assert!(
        b["oldest"].as_str().is_some_and(|o| o.ends_with('Z')),
        "{b}"
    );
    let (_, text) = metrics.expect("/metrics answers");
    let line = text
        .lines()
        .find(|l| l.starts_with("tripcap_baseline_summaries "))
        .unwrap_or_else(|| panic!("no baseline gauge:\n{text}"));
    assert_eq!(line, format!("tripcap_baseline_summaries {summaries}.0"));

    let found = sidecars(&out);
    assert_eq!(found.len(), 1, "one capture only: {found:?}\n{}", log());
    let side = read_sidecar(&found[0]);
    assert_eq!(side.triggers.len(), 1, "{:?}", side.triggers);
    let trig = &side.triggers[0];
    assert_eq!(trig.name, "cnp-jump", "{trig:?}");
    assert_eq!(trig.class, "deviation");
    let line = trig.line.as_deref().unwrap_or_default();
    assert!(
        line.starts_with("deviation: cnp_per_s ") && line.contains(" on lo class dscp 0 for 2 s"),
        "{line}"
    );
    // Back-dated to the jump's first second (the capture clock's whole second).
    let onset = trig.onset_ns.expect("onset");
    assert!(
        (onset - (storm_started_ns - storm_started_ns.rem_euclid(1_000_000_000))).abs()
            <= 1_000_000_000,
        "onset {onset}, storm from {storm_started_ns}"
    );

    // The history the agent kept: one file an hour, private.
    let base = out.join("baseline");
    let segments: Vec<_> = std::fs::read_dir(&base)
        .expect("baseline dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(!segments.is_empty());
    for s in &segments {
        let name = s.file_name().expect("name").to_string_lossy().into_owned();
        assert!(
            name.starts_with("hour-") && name.ends_with(".jsonl"),
            "{name}"
        );
        let mode = std::fs::metadata(s).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
    let shown = run(tripcap().args(["baseline", "show", "--config"]).arg(&cfg));
    assert!(shown.status.success(), "{shown:?}");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("lo, class dscp 0"), "{text}");
    let cnp_row: Vec<&str> = text
        .lines()
        .find(|l| l.trim_start().starts_with("cnp_per_s"))
        .expect("cnp row")
        .split_whitespace()
        .collect();
    // Seconds: about 7 quiet, 3 at 20/s, 4 at 400/s (and partial ones at
    // the edges): the median at most 20/s, the p99 the storm's 400/s.
    let median: f64 = cnp_row[1].parse().expect("median");
    assert!(median <= 25.0, "{cnp_row:?}");
    let p99: f64 = cnp_row[2].parse().expect("p99");
    assert!((300.0..=500.0).contains(&p99), "{cnp_row:?}");
    let exported = dir.path().join("profile.json");
    let ex = run(tripcap()
        .args(["baseline", "export"])
        .arg(&exported)
        .arg("--dir")
        .arg(&base));
    assert!(ex.status.success(), "{ex:?}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&exported).expect("read")).expect("json");
    let bands = json["bands"].as_array().expect("bands");
    assert!(
        bands.iter().any(|b| b["interface"] == "lo"
            && b["metric"] == "packets_per_s"
            && b["median"]
                .as_f64()
                .is_some_and(|m| (150.0..=250.0).contains(&m))),
        "200 data packets a second: {bands:?}"
    );
    // The window's report holds the capture against the host's profile, found by the
    // ring's interface name; the exported profile is what `analyze --baseline` reads.
    let stem = found[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(found[0].with_file_name(format!("{stem}.summary.json"))).expect("summary"),
    )
    .expect("summary json");
    let b = &summary["baseline"];
    assert_eq!(b["source"]["kind"], "host", "{b}");
    assert_eq!(b["matched_by"], "interface", "{b}");
    assert_eq!(b["window"]["basis"], "sidecar", "{b}");
    assert!(
        b["metrics"].as_array().is_some_and(|m| m
            .iter()
            .any(|r| r["interface"] == "lo" && r["metric"] == "cnp_per_s")),
        "{b}"
    );
    let analyzed = run(tripcap()
        .arg("analyze")
        .arg(found[0].with_file_name(format!("{stem}.pcapng")))
        .arg("--baseline")
        .arg(&exported)
        .arg("--json"));
    assert!(analyzed.status.success(), "{analyzed:?}");
    let j: serde_json::Value = serde_json::from_slice(&analyzed.stdout).expect("analyze json");
    assert_eq!(j["baseline"]["source"]["kind"], "profile");
    assert_eq!(j["baseline"]["matched_by"], "interface");
    assert_eq!(j["baseline"]["unmatched_interfaces"], serde_json::json!([]));
    let missing = run(tripcap()
        .args(["baseline", "show", "--dir"])
        .arg(dir.path().join("nowhere")));
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no baseline at"), "{err}");
}

/// The history survives a restart: a second agent on the same directory
/// starts with the profile of what the first one wrote, oldest interval and all.
#[test]
fn the_baseline_survives_a_restart() {
    const DST2: Ipv4Addr = Ipv4Addr::new(127, 91, 1, 2);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let cfg = dir.path().join("t.toml");
    let port = free_port();
    std::fs::write(
        &cfg,
        format!(
            "[capture]\ninterfaces = [\"lo\"]\nfilter = \"udp port 4791 and host {DST2}\"\n[output]\ndir = \"{}\"\n[api]\nlisten = \"127.0.0.1:{port}\"\n[baseline]\ninterval = \"1s\"\n",
            out.display()
        ),
    )
    .expect("config");
    let status = || -> Option<serde_json::Value> {
        let (code, body) = http(port, "GET", "/status", "", Duration::from_secs(5))?;
        (code == 200).then(|| serde_json::from_str(&body).ok())?
    };
    let (mut first, first_log) = spawn_ready(
        tripcap().args(["run", "--config"]).arg(&cfg),
        "capturing",
        Duration::from_secs(20),
    );
    let sock = UdpSocket::bind(SocketAddr::from((SRC, 0))).expect("bind");
    let mut g = Generator::new(vec![Flow::new(0x81, 0x82, 1, 4)], 256);
    let mut buf = Vec::new();
    paced(800, Duration::from_millis(5), |_| {
        g.next_packet(&mut buf).expect("packet");
        sock.send_to(&buf, SocketAddr::from((DST2, ROCE_PORT)))
            .expect("send");
    });
    // The last second with traffic closes once the clock passes its end.
    let mut written = 0;
    wait_until(Duration::from_secs(10), "three intervals written", || {
        written = status()
            .and_then(|s| s["baseline"]["written"].as_u64())
            .unwrap_or(0);
        written >= 3
    });
    std::thread::sleep(Duration::from_millis(1500));
    let before = status().expect("status");
    let written = before["baseline"]["written"].as_u64().expect("written");
    assert!(
        interrupt(&mut first).success(),
        "{}",
        first_log.lock().map(|l| l.clone()).unwrap_or_default()
    );

    let (mut second, second_log) = spawn_ready(
        tripcap().args(["run", "--config"]).arg(&cfg),
        "capturing",
        Duration::from_secs(20),
    );
    let mut after = serde_json::Value::Null;
    wait_until(Duration::from_secs(10), "the history loaded", || {
        after = status().unwrap_or_default();
        after["baseline"]["summaries"].as_u64() == Some(written)
    });
    assert_eq!(after["baseline"]["oldest"], before["baseline"]["oldest"]);
    assert_eq!(after["baseline"]["written"], 0, "nothing new yet");
    assert!(
        interrupt(&mut second).success(),
        "{}",
        second_log.lock().map(|l| l.clone()).unwrap_or_default()
    );
}
