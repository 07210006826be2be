//! Triggering never waits on sysfs: the RDMA counters a window records "at the
//! trigger" are read on the window's own thread, not inside `Recorder::fire`
//! (which holds the recorder's lock and is called from the API's and the log
//! matcher's async tasks). A counter file that blocks on read (a FIFO nobody
//! writes) must not stall `POST /trigger`, a second trigger, or `/status`.
//! Live on `lo`, root needed.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn a_blocking_counter_file_does_not_stall_triggers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sys = dir.path().join("sys");
    let hw = sys.join("class/infiniband/mlx5_7/ports/1/hw_counters");
    std::fs::create_dir_all(&hw).expect("mkdir");
    std::fs::create_dir_all(sys.join("class/net/lo/device/infiniband/mlx5_7")).expect("mkdir");
    let fifo = hw.join("out_of_sequence");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(ok.success());
    let port = free_port();
    let cfg = dir.path().join("t.toml");
    std::fs::write(
        &cfg,
        format!(
            "[capture]\ninterfaces = [\"lo\"]\nfilter = \"udp port 4791 and host 127.91.0.2\"\n\
             [output]\ndir = {:?}\nsysfs_root = {:?}\nreports = false\n[api]\nlisten = \"127.0.0.1:{port}\"\n",
            dir.path().join("out"),
            sys
        ),
    )
    .expect("config");
    let (mut agent, agent_log) = spawn_ready(
        tripcap()
            .args(["run", "-c"])
            .arg(&cfg)
            .args(["--pre", "1s", "--post", "1s"]),
        "capturing",
        Duration::from_secs(20),
    );

    let quick = Duration::from_secs(3);
    let t = Instant::now();
    let first = http(port, "POST", "/trigger", "first", quick);
    let second = http(
        port,
        "POST",
        "/trigger",
        "second, while the first window reads its counters",
        quick,
    );
    let status = http(port, "GET", "/status", "", quick);
    let took = t.elapsed();

    // Let the window threads read: write the FIFO until the agent has stopped.
    let stop = Arc::new(AtomicBool::new(false));
    let feeder = {
        let (stop, fifo) = (Arc::clone(&stop), fifo.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // Opening for write blocks until a reader opens: use O_NONBLOCK
                // and retry, so this thread notices `stop`.
                use std::os::unix::fs::OpenOptionsExt;
                match std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo)
                {
                    Ok(mut f) => {
                        let _ = f.write_all(b"5\n");
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(2500)); // the windows' post passes
                                                     // SAFETY: signalling our own child.
    unsafe { libc::kill(agent.id() as i32, libc::SIGINT) };
    let exit = agent.wait().expect("wait");
    stop.store(true, Ordering::Relaxed);
    feeder.join().expect("feeder");
    let log = agent_log.lock().map(|l| l.clone()).unwrap_or_default();

    assert_eq!(
        first.as_ref().map(|r| r.0),
        Some(202),
        "first trigger: {first:?}\n{log}"
    );
    assert_eq!(
        second.as_ref().map(|r| r.0),
        Some(202),
        "second trigger: {second:?}\n{log}"
    );
    assert_eq!(
        status.as_ref().map(|r| r.0),
        Some(200),
        "status: {status:?}\n{log}"
    );
    assert!(
        took < Duration::from_secs(6),
        "the API answered within its timeouts ({took:?})"
    );
    assert!(exit.success(), "{log}");
    let captures = sidecars(&dir.path().join("out"));
    assert_eq!(
        captures.len(),
        1,
        "the second trigger merged into the first window: {log}"
    );
    let side = read_sidecar(&captures[0]);
    assert_eq!(side.triggers.len(), 2);
    let counters = side
        .rdma_counters
        .expect("counters read once the FIFO was written");
    assert!(!counters.at_trigger.devices.is_empty(), "{counters:?}");
}
