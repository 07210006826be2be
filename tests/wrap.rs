//! `tripcap wrap -- CMD…`: the job's output passes through byte for byte, its
//! exit status is kept, signals reach it, and a failure line in its output
//! fires a capture.

mod common;

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::Stdio;
use std::time::Duration;

use common::*;

const WATCHDOG: &str = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 500 milliseconds before timing out.";

/// A capture of one RoCE packet every 10 ms for `seconds`, from 2026-11-30T00:53:20Z.
fn paced_capture(dir: &std::path::Path, seconds: usize) -> std::path::PathBuf {
    let pcap = dir.join("in.pcap");
    write_generated(
        &pcap,
        1_796_000_000 * 1_000_000_000,
        10_000_000,
        seconds * 100,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x11,
    );
    pcap
}

/// `tripcap wrap` replaying `pcap` at capture pace into `out`, with `flags`,
/// around `sh -c SCRIPT`.
fn wrap_replaying(
    pcap: &std::path::Path,
    out: &std::path::Path,
    flags: &[&str],
    script: &str,
) -> std::process::Command {
    let mut cmd = tripcap();
    cmd.args(["wrap", "--speed", "1x", "--from-pcap"])
        .arg(pcap)
        .arg("-o")
        .arg(out)
        .args(flags)
        .args(["--", "sh", "-c", script]);
    cmd
}

#[test]
fn output_passes_through_unchanged_and_exit_code_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every byte value, long lines, a NUL, CRLF, and a last line without newline.
    let mut out_bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    out_bytes.extend_from_slice(b"\r\nlast line \xff\xfe without newline");
    let err_bytes = b"warning \xc3\x28 not utf-8\n\npartial".to_vec();
    let (o_path, e_path) = (dir.path().join("out.bin"), dir.path().join("err.bin"));
    std::fs::write(&o_path, &out_bytes).expect("write");
    std::fs::write(&e_path, &err_bytes).expect("write");
    let o = run(tripcap()
        .env("RUST_LOG", "error")
        .args(["wrap", "-o"])
        .arg(dir.path().join("caps"))
        .args(["--", "sh", "-c", "cat \"$1\"; cat \"$2\" >&2; exit 7", "sh"])
        .arg(&o_path)
        .arg(&e_path));
    assert_eq!(
        o.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stdout == out_bytes,
        "stdout differs ({} vs {} bytes)",
        o.stdout.len(),
        out_bytes.len()
    );
    assert_eq!(o.stderr, err_bytes);
}

#[test]
fn without_capture_the_job_runs_and_wrap_says_so_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(tripcap()
        .args(["wrap", "-o"])
        .arg(dir.path().join("caps"))
        .args(["--", "sh", "-c"])
        .arg(format!("echo hello; echo '{WATCHDOG}'; echo '{WATCHDOG}'")));
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("hello\n{WATCHDOG}\n{WATCHDOG}\n")
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("capture is off").count(), 1, "{err}");
    assert!(err.contains("nothing to capture"), "{err}");
    assert!(
        err.contains("trigger fired, not captured"),
        "matches are still logged: {err}"
    );
}

#[test]
fn killed_job_exits_128_plus_signal_and_missing_command_127() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(tripcap()
        .env("RUST_LOG", "error")
        .args(["wrap", "-o"])
        .arg(dir.path())
        .args(["--", "sh", "-c", "kill -KILL $$"]));
    assert_eq!(o.status.code(), Some(128 + 9));
    let o = run(tripcap()
        .args(["wrap", "-o"])
        .arg(dir.path())
        .args(["--", "/nonexistent/train.py"]));
    assert_eq!(o.status.code(), Some(127));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot run `/nonexistent/train.py`") && err.contains("PATH"),
        "{err}"
    );
}

#[test]
fn sigterm_is_forwarded_to_the_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = tripcap()
        .env("RUST_LOG", "error")
        .args(["wrap", "-o"])
        .arg(dir.path())
        .args([
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 5' TERM; echo ready; while :; do sleep 0.05; done",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("read");
    assert_eq!(line, "ready\n");
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on our child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    line.clear();
    out.read_line(&mut line).expect("read");
    assert_eq!(line, "got-term\n");
    assert_eq!(status.code(), Some(5));
}

#[test]
fn a_failure_line_in_the_jobs_output_fires_a_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = paced_capture(dir.path(), 10);
    let out = dir.path().join("caps");
    let script = format!("sleep 1.5; echo '{WATCHDOG}'; sleep 1.5; exit 1");
    let o = run(&mut wrap_replaying(&pcap, &out, &[], &script));
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("{WATCHDOG}\n"));
    let files = sidecars(&out);
    assert_eq!(files.len(), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let side = read_sidecar(&files[0]);
    let t = &side.triggers[0];
    assert_eq!(t.name, "pytorch-nccl-timeout");
    assert_eq!(t.class, "nccl_timeout");
    assert_eq!(t.source.as_deref(), Some("wrap:stdout"));
    assert_eq!(t.line_no, Some(1));
    assert_eq!(t.onset_ns, Some(t.at_ns - 500_000_000), "ran for 500 ms");
    assert!(side.packets > 0);
    assert_eq!(
        tshark_rows_any(&out.join(&side.file)),
        side.packets as usize
    );
}

/// wrap over a 10 s replay at capture pace whose job prints the watchdog line
/// after 2 s and exits 7 at once; returns the capture's sidecar, its packets'
/// times (tshark) and wrap's stderr.
fn job_dies_right_after_its_failure_line(
    extra: &[&str],
) -> (tripcap::sidecar::Sidecar, Vec<i64>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = paced_capture(dir.path(), 10);
    let out = dir.path().join("caps");
    let flags = [&["--pre", "1s", "--post", "2s"], extra].concat();
    let script = format!("sleep 2; echo '{WATCHDOG}'; exit 7");
    let o = run(&mut wrap_replaying(&pcap, &out, &flags, &script));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(7), "{stderr}");
    let files = sidecars(&out);
    assert_eq!(files.len(), 1, "{stderr}");
    let side = read_sidecar(&files[0]);
    let times = tshark_rows(&out.join(&side.file))
        .iter()
        .map(|r| r.ts)
        .collect();
    (side, times, stderr)
}

#[test]
fn a_job_that_dies_right_after_its_failure_line_still_gets_the_post_window() {
    let (side, times, stderr) = job_dies_right_after_its_failure_line(&[]);
    assert!(
        stderr.contains("still capturing until it closes"),
        "{stderr}"
    );
    assert!(side.window.complete, "{:?}", side.window);
    let at = side.triggers[0].at_ns;
    let last = *times.last().expect("packets");
    // Packets are 10 ms apart: the last one is within 10 ms of T + 2 s.
    assert!(
        last > at + 2_000_000_000 - 10_000_000 && last <= side.window.asked_end_ns,
        "last packet {last}, trigger {at}"
    );
}

#[test]
fn no_linger_stops_when_the_job_does_and_says_the_capture_is_short() {
    let (side, times, stderr) = job_dies_right_after_its_failure_line(&["--no-linger"]);
    assert!(
        !stderr.contains("still capturing until it closes"),
        "{stderr}"
    );
    assert!(!side.window.complete, "{:?}", side.window);
    assert!(!side.window.shortfall.is_empty());
    // Packets are 10 ms apart: stopping with the job left at least one of the
    // window's last packets out.
    let last = *times.last().expect("packets");
    assert!(
        last + 10_000_000 < side.window.asked_end_ns,
        "last packet {last}, window end {}",
        side.window.asked_end_ns
    );
}

#[test]
fn a_signal_while_lingering_stops_at_once_and_keeps_the_jobs_exit_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = paced_capture(dir.path(), 30);
    let out = dir.path().join("caps");
    let script = format!("sleep 2; echo '{WATCHDOG}'; exit 7");
    let mut cmd = wrap_replaying(&pcap, &out, &["--pre", "1s", "--post", "20s"], &script);
    let (mut child, log) = spawn_ready(
        &mut cmd,
        "still capturing until it closes",
        Duration::from_secs(30),
    );
    let status = interrupt(&mut child);
    let stderr = log.lock().expect("log").clone();
    assert_eq!(status.code(), Some(7), "{stderr}");
    let files = sidecars(&out);
    assert_eq!(files.len(), 1, "{stderr}");
    let side = read_sidecar(&files[0]);
    assert!(!side.window.complete, "{:?}", side.window);
    let at = side.triggers[0].at_ns;
    let last = tshark_rows(&out.join(&side.file))
        .last()
        .map(|r| r.ts)
        .expect("packets");
    assert!(
        last < at + 5_000_000_000,
        "stopped soon after the signal, not at T + 20 s: last packet {last}, trigger {at}"
    );
}
