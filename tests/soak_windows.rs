//! A long run stays bounded: 2,000 separate windows in one live run (a log
//! line every 25 ms, `cooldown = "0s"`, windows of 4 ms) leave the agent with
//! as many threads, tracked tasks and as much address space as it had after
//! the first 200. Before, the recorder kept every window thread's handle and
//! the agent every capture's outcome until shutdown; now finished windows are
//! forgotten as they finish (`tripcap_tasks_running` counts what is tracked).

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;

const WINDOWS: usize = 2_000;
const EVERY: Duration = Duration::from_millis(25);

/// (threads, VmSize in KiB) of process `pid`.
fn footprint(pid: u32) -> (usize, u64) {
    let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0);
    let vm = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0);
    (threads, vm)
}

/// `tasks_running` from the agent's `/status`.
fn tasks_running(port: u16) -> u64 {
    let (status, body) =
        http(port, "GET", "/status", "", Duration::from_secs(5)).expect("the API answers");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("status JSON");
    v["tasks_running"].as_u64().expect("tasks_running")
}

#[test]
fn two_thousand_windows_leave_threads_and_memory_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let log = dir.path().join("job.log");
    std::fs::write(&log, b"").expect("log");
    let out = dir.path().join("out");
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        format!(
            "[capture]\ninterfaces = [\"lo\"]\n\n[[trigger]]\nname = \"soak\"\npattern = \"soak-line\"\n\
             pre = \"2ms\"\npost = \"2ms\"\ncooldown = \"0s\"\n\n[output]\nreports = false\n\n\
             [api]\nlisten = \"127.0.0.1:{port}\"\n\n[logs]\npaths = [{log:?}]\n"
        ),
    )
    .expect("config");
    let mut child = tripcap()
        .env("RUST_LOG", "warn")
        .args(["run", "-c"])
        .arg(&cfg)
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(700));

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("open log");
    let start = Instant::now();
    let mut early = None;
    let mut peak_threads = 0;
    for i in 0..WINDOWS {
        writeln!(f, "soak-line {i}").expect("append");
        if i == WINDOWS / 10 {
            early = Some((footprint(pid), tasks_running(port)));
        }
        if i > WINDOWS / 10 {
            peak_threads = peak_threads.max(footprint(pid).0);
        }
        let due = EVERY * (i as u32 + 1);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    std::thread::sleep(Duration::from_millis(800)); // the last windows close
    let end = footprint(pid);
    let end_tasks = tasks_running(port);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut stderr).expect("stderr");
    }
    assert!(status.success(), "{stderr}");

    let ((early_threads, early_vm), early_tasks) = early.expect("measured after the first 200");
    assert!(
        end_tasks <= early_tasks + 4,
        "tracked tasks: {early_tasks} after {} windows, {end_tasks} at the end",
        WINDOWS / 10
    );
    let windows = sidecars(&out).len();
    assert!(
        windows >= WINDOWS * 95 / 100,
        "{windows} captures for {WINDOWS} separate lines: {stderr}"
    );
    assert!(
        end.0 <= early_threads + 4 && peak_threads <= early_threads + 16,
        "threads: {early_threads} after {} windows, peak {peak_threads}, {} at the end",
        WINDOWS / 10,
        end.0
    );
    // Each window's thread stack is 2 MiB of address space: 1,800 kept would
    // be 3.6 GiB. Allow 64 MiB for allocator arenas and the like.
    assert!(
        end.1 <= early_vm + 64 * 1024,
        "VmSize grew from {early_vm} KiB to {} KiB over {} windows",
        end.1,
        WINDOWS - WINDOWS / 10
    );
}
