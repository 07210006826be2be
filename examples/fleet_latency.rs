//! Announcement-to-window-opened latency of a fleet agent (BENCHMARKS.md, "fleet").
//!
//!     scripts/bench-fleet.sh [SAMPLES]
//!
//! which starts `nats-server -js` and one agent (`tripcap run -i lo --nats … --job bench`),
//! then runs this with the server's URL:
//!
//!     cargo run --release --example fleet_latency -- nats://127.0.0.1:PORT bench [SAMPLES]
//!
//! Playing another node of the job, it publishes one announcement at a time to the
//! job's stream, each a new incident 50 ms long, and waits for the agent's answer on
//! `tripcap.job.<job>.answer`. The agent answers right after `Recorder::join` has
//! opened the window (the writer thread started, the ring subscribed), so the time
//! from the publish call to the answer's arrival bounds announcement-to-window-opened
//! from above (it adds the answer's trip back through the server). Prints p50/p90/p99/max.

use std::time::{Duration, Instant};

use futures_util::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: fleet_latency NATS_URL JOB [SAMPLES]")?;
    let job = args
        .next()
        .ok_or("usage: fleet_latency NATS_URL JOB [SAMPLES]")?;
    let samples: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let client = async_nats::connect(&url).await?;
    let js = async_nats::jetstream::new(client.clone());
    let mut answers = client
        .subscribe(format!("tripcap.job.{job}.answer"))
        .await?;
    let mut took = Vec::with_capacity(samples);
    for n in 0..samples {
        let now = tripcap::clock::now_ns();
        let id = format!("bench-{now}-{n}");
        let a = serde_json::json!({
            "v": 1, "job": job, "host": "bench-peer", "incident": id,
            "trigger": "bench", "class": "custom", "at_ns": now,
            "pre_ns": 25_000_000, "post_ns": 25_000_000,
            "asked": [now - 25_000_000, now + 25_000_000], "max_window_ns": 50_000_000,
        });
        let start = Instant::now();
        js.publish(
            format!("tripcap.job.{job}.announce"),
            serde_json::to_vec(&a)?.into(),
        )
        .await?;
        loop {
            let m = tokio::time::timeout(Duration::from_secs(10), answers.next())
                .await?
                .ok_or("the answer subscription ended")?;
            let v: serde_json::Value = serde_json::from_slice(&m.payload)?;
            if v.get("incident").and_then(|i| i.as_str()) == Some(id.as_str()) {
                break;
            }
        }
        took.push(start.elapsed());
        // Let the 50 ms window close before the next, so each opens a new one.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    took.sort();
    let q = |p: f64| took[((took.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "announcement -> window opened (+ answer back), {} samples: p50 {:?}  p90 {:?}  p99 {:?}  max {:?}",
        took.len(),
        q(0.50),
        q(0.90),
        q(0.99),
        took[took.len() - 1]
    );
    Ok(())
}
