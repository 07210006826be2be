//! Latency from a log line appended to its trigger firing, through the real
//! follower (default options: 250 ms stat-poll, inotify wake-up) and the
//! agent's matcher with every built-in pack (BENCHMARKS.md, "triggers").
//!
//!     cargo run --release --example trigger_latency [SAMPLES]
//!     TRIPCAP_POLL_MS=50 cargo run --release --example trigger_latency
//!
//! A writer appends one watchdog line at a time to a file in a temp directory,
//! at random intervals of 5–50 ms, noting the time of each `write(2)`; the
//! matching loop notes when the matcher returns the hit for that line.
//! Prints p50/p90/p99/max.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tripcap::follow::{FollowOptions, Follower};
use tripcap::matcher::Matcher;
use tripcap_triggers::TriggerSet;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let samples: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    // The follower's poll interval (default 250 ms, as the agent uses).
    let poll_ms: u64 = std::env::var("TRIPCAP_POLL_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(250);
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("rank0.log");
    std::fs::write(&log, b"")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let written: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; samples]));
    let latencies = rt.block_on(async {
        let follower = Follower::new(
            vec![dir.path().join("*.log").display().to_string()],
            FollowOptions {
                poll_interval: Duration::from_millis(poll_ms),
                ..FollowOptions::default()
            },
        )?;
        let stop = CancellationToken::new();
        let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
        let follow = tokio::spawn(follower.run(tx, stop.clone()));
        tokio::time::sleep(Duration::from_millis(500)).await; // first scan done

        let writer = {
            let written = Arc::clone(&written);
            let log = log.clone();
            std::thread::spawn(move || writer(&log, samples, &written))
        };
        let mut matcher = Matcher::new(TriggerSet::new(tripcap_triggers::all_packs())?, None);
        let mut firings = Vec::new();
        let mut lat = Vec::with_capacity(samples);
        while lat.len() < samples {
            let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await
            else {
                break;
            };
            if !matcher.line(&line.path, &line.bytes, 0, &mut firings) {
                continue;
            }
            let fired = Instant::now();
            let seq = firings[0]
                .groups
                .iter()
                .find(|(k, _)| k == "seq")
                .and_then(|(_, v)| v.parse::<usize>().ok());
            let at = seq.and_then(|s| written.lock().ok()?.get(s).copied().flatten());
            if let Some(at) = at {
                lat.push(fired.duration_since(at));
            }
        }
        stop.cancel();
        let _ = follow.await;
        let _ = writer.join();
        Ok::<_, Box<dyn std::error::Error>>(lat)
    })?;
    let mut l = latencies;
    l.sort();
    if l.is_empty() {
        return Err("no firing measured".into());
    }
    let q = |p: f64| l[((l.len() as f64 * p).ceil() as usize).clamp(1, l.len()) - 1];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{} lines: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        l.len(),
        ms(q(0.50)),
        ms(q(0.90)),
        ms(q(0.99)),
        ms(q(1.0))
    );
    Ok(())
}

fn writer(log: &Path, samples: usize, written: &Mutex<Vec<Option<Instant>>>) {
    let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) else {
        return;
    };
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for seq in 0..samples {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        std::thread::sleep(Duration::from_millis(5 + state % 46));
        let line = format!("[rank0]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n");
        let now = Instant::now();
        if let Ok(mut w) = written.lock() {
            w[seq] = Some(now);
        }
        if f.write_all(line.as_bytes()).is_err() {
            return;
        }
    }
}
