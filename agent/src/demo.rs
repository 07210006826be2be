//! `tripcap demo`: the whole path on an embedded default, no RDMA NIC needed.
//!
//! Two RoCE v2 RC queue pairs write to each other over loopback (real UDP
//! datagrams to 127.77.0.2:4791, captured by libpcap on `lo`). 1.9 s in, QP
//! 0x0000c1 loses 5 packets before the capture point (a PSN gap); at 2 s QP
//! 0x0000c2 falls silent (a stall). At 3.5 s an NCCL watchdog line saying the
//! collective "ran for 1500 milliseconds" is written to a log file the agent
//! follows: the trigger fires, the window is placed from the stall's onset
//! (2 s before it, 1 s after the line), written and described.
//!
//! Where it may not capture (not root, no CAP_NET_RAW) it says so and runs the
//! same agent on a replay of the same traffic instead.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::agent::{self, AgentError, RunOptions};
use crate::capture::live::{self, LiveSpec};
use crate::capture::replay::Speed;
use crate::capture::CaptureError;
use crate::clock::now_ns;
use crate::config::Config;
use crate::traffic::{self, Flow, Generator};
use crate::window::CaptureOutcome;

/// Requester address of the demo traffic.
pub const REQUESTER: Ipv4Addr = Ipv4Addr::new(127, 77, 0, 1);
/// Responder address of the demo traffic.
pub const RESPONDER: Ipv4Addr = Ipv4Addr::new(127, 77, 0, 2);
/// The line the demo "job" prints.
pub const WATCHDOG_LINE: &str = "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=1500) ran for 1500 milliseconds before timing out.";

const PRE: Duration = Duration::from_secs(2);
const POST: Duration = Duration::from_secs(1);
/// When the line is written, from the start of the traffic.
const LINE_AT: Duration = Duration::from_millis(3500);
/// When the traffic stops.
const TRAFFIC_FOR: Duration = Duration::from_millis(5500);
const GAP_AT: Duration = Duration::from_millis(1900);
const STALL_AT: Duration = Duration::from_millis(2000);
const PACKETS_PER_SECOND: u64 = 2000;

/// How the demo ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoMode {
    /// Captured live on loopback.
    Live,
    /// Replayed generated traffic (no capture permission, or asked for).
    Replay,
}

/// What the demo produced.
#[derive(Debug)]
pub struct DemoReport {
    /// Live or replay.
    pub mode: DemoMode,
    /// Why it fell back to a replay, if it did.
    pub fallback_reason: Option<String>,
    /// The capture.
    pub capture: CaptureOutcome,
    /// The log file the agent followed.
    pub log: PathBuf,
}

/// Errors of the demo.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// The agent could not start.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// Files or sockets.
    #[error("demo: {0}")]
    Io(#[from] std::io::Error),
    /// No capture came out.
    #[error("demo: the agent wrote no capture within {0:?} (see the log above)")]
    NoCapture(Duration),
}

fn demo_config(out: &Path, log: &Path, iface: Option<&str>) -> Config {
    let mut c = Config::default();
    c.capture.interfaces = iface.map(|i| vec![i.to_string()]).unwrap_or_default();
    c.capture.filter = format!("udp port {} and host {RESPONDER}", traffic::ROCE_PORT);
    c.ring.memory_limit = 64 << 20;
    c.output.dir = out.to_path_buf();
    c.logs.paths = vec![log.display().to_string()];
    let mut t = tripcap_triggers::TriggerDef::new(
        "nccl-watchdog",
        vec!["Watchdog caught collective operation timeout".into()],
    );
    t.class = "nccl_timeout".into();
    t.pre = PRE;
    t.post = POST;
    c.triggers = vec![t];
    c
}

/// The demo's traffic schedule: (offset from start, payload, to responder?).
fn schedule() -> (Generator, Vec<(Duration, Vec<u8>, bool)>) {
    let mut g = Generator::new(
        vec![
            Flow::new(0xc1, 0xd1, 1000, 4),
            Flow::new(0xc2, 0xd2, 0xff_fff0, 4),
        ],
        256,
    );
    let mut out = Vec::new();
    let step = Duration::from_nanos(1_000_000_000 / PACKETS_PER_SECOND);
    let mut t = Duration::ZERO;
    let mut gapped = false;
    // QP c2 stops for good at the first WRITE First it sends after STALL_AT:
    // a message left half sent, the requester waiting for an ACK that never comes.
    let mut c2_stalled = false;
    let mut buf = Vec::new();
    while t < TRAFFIC_FOR {
        if !gapped && t >= GAP_AT {
            g.skip(0, 5);
            gapped = true;
        }
        let flow = if c2_stalled { 0 } else { out.len() % 2 };
        if let Some(p) = g.next_of(flow, &mut buf) {
            out.push((t, buf.clone(), !p.reply));
            if flow == 1 && t >= STALL_AT && p.opcode == 0x06 {
                c2_stalled = true;
            }
        }
        t += step;
    }
    (g, out)
}

/// Run the demo, writing into `out`. `force_replay` skips the live attempt.
pub async fn run(out: &Path, force_replay: bool) -> Result<DemoReport, DemoError> {
    agent::prepare_output(out)?;
    let log_dir = out.join("demo-logs");
    std::fs::create_dir_all(&log_dir)?;
    let log = log_dir.join("rank0.log");
    std::fs::write(&log, b"node1:4242:4242 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\nnode1:4242:4242 [0] NCCL INFO NET/IB : No device found.\n")?;

    let fallback_reason = if force_replay {
        Some("replay asked for (--replay)".to_string())
    } else {
        match live::open(&LiveSpec {
            iface: "lo".into(),
            filter: "udp port 4791".into(),
            snaplen: 128,
            headers_only: false,
            buffer_size: 4 << 20,
            promiscuous: false,
            rdma_sniffer: false,
        }) {
            Ok(_) => None,
            Err(
                e @ (CaptureError::Permission(_)
                | CaptureError::NoSuchDevice(_)
                | CaptureError::Other { .. }),
            ) => Some(e.to_string()),
            Err(e) => return Err(DemoError::Agent(e.into())),
        }
    };
    match fallback_reason {
        None => run_live(out, &log).await,
        Some(reason) => {
            eprintln!("tripcap demo: cannot capture live ({reason}); running the same agent on a replay of the demo traffic instead");
            run_replay(out, &log, reason).await
        }
    }
}

async fn run_live(out: &Path, log: &Path) -> Result<DemoReport, DemoError> {
    let config = demo_config(out, log, Some("lo"));
    let shutdown = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let agent = tokio::spawn(agent::run(
        config,
        RunOptions::default(),
        shutdown.clone(),
        Some(tx),
    ));
    // Give the capture and the follower a moment to start.
    tokio::time::sleep(Duration::from_millis(700)).await;
    if agent.is_finished() {
        return match agent.await {
            Ok(Err(e)) => Err(e.into()),
            _ => Err(DemoError::NoCapture(Duration::ZERO)),
        };
    }
    let log2 = log.to_path_buf();
    let sender = tokio::task::spawn_blocking(move || send_traffic(&log2));
    let wait = Duration::from_secs(20);
    let capture = tokio::time::timeout(wait, rx.recv()).await.ok().flatten();
    let _ = sender.await;
    shutdown.cancel();
    match agent.await {
        Ok(Err(e)) => return Err(e.into()),
        Err(e) => return Err(DemoError::Io(std::io::Error::other(e))),
        Ok(Ok(_)) => {}
    }
    let capture = capture.ok_or(DemoError::NoCapture(wait))?;
    Ok(DemoReport {
        mode: DemoMode::Live,
        fallback_reason: None,
        capture,
        log: log.to_path_buf(),
    })
}

/// Send the schedule as real datagrams, and write the watchdog line on time.
fn send_traffic(log: &Path) -> std::io::Result<()> {
    let (_, packets) = schedule();
    let requester = UdpSocket::bind(SocketAddr::from((REQUESTER, 0)))?;
    let responder = UdpSocket::bind(SocketAddr::from((RESPONDER, 0)))?;
    let to_responder = SocketAddr::from((RESPONDER, traffic::ROCE_PORT));
    let to_requester = SocketAddr::from((REQUESTER, traffic::ROCE_PORT));
    let start = Instant::now();
    let mut line_written = false;
    for (at, payload, forward) in packets {
        if !line_written && at >= LINE_AT {
            append_line(log, WATCHDOG_LINE)?;
            line_written = true;
        }
        if let Some(wait) = at.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let _ = if forward {
            requester.send_to(&payload, to_responder)
        } else {
            responder.send_to(&payload, to_requester)
        };
    }
    Ok(())
}

fn append_line(log: &Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(log)?;
    writeln!(f)?; // NCCL puts a blank line before a WARN
    writeln!(f, "{line}")
}

async fn run_replay(out: &Path, log: &Path, reason: String) -> Result<DemoReport, DemoError> {
    let (_, packets) = schedule();
    let start = now_ns();
    let pcap_path = out.join("demo-traffic.pcap");
    {
        let mut f = std::io::BufWriter::new(crate::private_file::create_private(&pcap_path)?);
        let mut frame = Vec::new();
        let frames = packets.into_iter().map(|(at, payload, forward)| {
            let (src, dst) = if forward {
                (REQUESTER, RESPONDER)
            } else {
                (RESPONDER, REQUESTER)
            };
            traffic::frame(src, dst, 49152, &payload, &mut frame);
            (start + at.as_nanos() as i64, frame.clone())
        });
        traffic::write_pcap(&mut f, 128, frames)?;
        f.flush()?;
    }
    // The same agent as live: the replay runs at capture pace and the job's
    // line is written when the replay reaches it, so the log trigger fires.
    let config = demo_config(out, log, None);
    let opts = RunOptions {
        replay: vec![pcap_path],
        speed: Speed::Realtime,
        ..RunOptions::default()
    };
    let log2 = log.to_path_buf();
    let writer = tokio::spawn(async move {
        tokio::time::sleep(LINE_AT + Duration::from_millis(300)).await;
        append_line(&log2, WATCHDOG_LINE)
    });
    let (tx, mut captures) = tokio::sync::mpsc::unbounded_channel();
    agent::run(config, opts, CancellationToken::new(), Some(tx)).await?;
    writer.await.map_err(std::io::Error::other)??;
    let capture = captures
        .try_recv()
        .map_err(|_| DemoError::NoCapture(Duration::ZERO))?;
    Ok(DemoReport {
        mode: DemoMode::Replay,
        fallback_reason: Some(reason),
        capture,
        log: log.to_path_buf(),
    })
}

/// What `tripcap demo` prints about the capture.
pub fn describe(report: &DemoReport) -> String {
    let mut s = String::new();
    match &report.capture {
        CaptureOutcome::Written {
            pcapng,
            sidecar,
            report: r,
        } => {
            let mode = match report.mode {
                DemoMode::Live => "captured live on lo",
                DemoMode::Replay => "replayed (no live capture)",
            };
            s.push_str(&format!("tripcap demo: {mode}\n"));
            s.push_str(&format!(
                "  capture  {}\n  sidecar  {}\n",
                pcapng.display(),
                sidecar.display()
            ));
            for t in &r.triggers {
                s.push_str(&format!("  trigger  {} at {}\n", t.name, t.at));
                if let Some(onset) = t.onset_ns {
                    s.push_str(&format!(
                        "  onset    {} ({:.3} s before: the line says how long the collective was stuck)\n",
                        crate::clock::rfc3339(onset),
                        (t.at_ns - onset) as f64 / 1e9
                    ));
                }
                if let Some(line) = &t.line {
                    s.push_str(&format!("           {line}\n"));
                }
            }
            s.push_str(&format!(
                "  window   asked {} .. {}\n           covered {} .. {} ({})\n",
                r.window.asked[0],
                r.window.asked[1],
                r.window.covered[0],
                r.window.covered[1],
                if r.window.complete {
                    "complete"
                } else {
                    "INCOMPLETE"
                }
            ));
            for why in &r.window.shortfall {
                s.push_str(&format!("           {why}\n"));
            }
            s.push_str(&format!(
                "  holds    {} RoCE packets, {} bytes captured ({} on the wire)\n",
                r.packets, r.bytes, r.wire_bytes
            ));
            // What the capture shows: the same analysis `tripcap analyze` prints.
            let args = crate::analyze::AnalyzeArgs {
                file: pcapng.clone(),
                packets: false,
                json: false,
                svg: None,
                link_speed: None,
                baseline: None,
            };
            let mut text = Vec::new();
            if crate::analyze::run(&args, &mut text).is_ok() {
                s.push_str("  analysis\n");
                for line in String::from_utf8_lossy(&text).lines() {
                    s.push_str(&format!("           {line}\n"));
                }
            }
            s.push_str(&format!(
                "  look     tshark -r {}   or   tripcap analyze {}\n",
                pcapng.display(),
                pcapng.display()
            ));
        }
        CaptureOutcome::Failed { path, error } => s.push_str(&format!(
            "tripcap demo: writing {} failed: {error}\n",
            path.display()
        )),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::connections::analyze;
    use crate::capture_file::reader::Reader;

    /// The live demo's window opens wherever the log line puts it, so on any packet of
    /// the schedule: from every one of the first few, the analysis still answers each
    /// queue pair's AckReq requests with its own ACKs and finds c2's stall.
    #[test]
    fn the_analysis_finds_the_stall_wherever_the_window_opens() {
        let (_, packets) = schedule();
        let mut frame = Vec::new();
        for start in 0..24 {
            let mut pcap = Vec::new();
            let frames = packets[start..].iter().map(|(at, payload, forward)| {
                let (src, dst) = if *forward {
                    (REQUESTER, RESPONDER)
                } else {
                    (RESPONDER, REQUESTER)
                };
                traffic::frame(src, dst, 49152, payload, &mut frame);
                (at.as_nanos() as i64, frame.clone())
            });
            traffic::write_pcap(&mut pcap, 128, frames).expect("pcap");
            let mut reader = Reader::new(pcap.as_slice()).expect("reader");
            let report = analyze(&mut reader, &mut |_| ()).expect("analysis");
            let conn = |qp: &str| {
                report
                    .connections
                    .iter()
                    .find(|c| c.dest_qp == qp)
                    .unwrap_or_else(|| panic!("start {start}: no {qp}"))
            };
            let (c1, c2) = (conn("0x0000c1"), conn("0x0000c2"));
            assert_eq!(c1.ackreq_unanswered, 0, "start {start}: {c1:?}");
            assert!(c1.ackreq_answered > 1000, "start {start}: {c1:?}");
            assert_eq!(c2.stalls, 1, "start {start}: {c2:?}");
            assert!(c2.max_silence_open, "start {start}: {c2:?}");
        }
    }
}
