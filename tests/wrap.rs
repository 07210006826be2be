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
    let pcap = dir.path().join("in.pcap");
    let t0 = 1_796_000_000 * 1_000_000_000i64;
    write_generated(
        &pcap,
        t0,
        10_000_000,
        1000,
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 0, 0, 2),
        0x11,
    );
    let out = dir.path().join("caps");
    let o = run(tripcap()
        .args(["wrap", "--speed", "1x", "--from-pcap"])
        .arg(&pcap)
        .arg("-o")
        .arg(&out)
        .args(["--", "sh", "-c"])
        .arg(format!("sleep 1.5; echo '{WATCHDOG}'; sleep 1.5; exit 1")));
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
