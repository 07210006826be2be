//! `tripcap selftest`: is this node ready to record? One command for a
//! Kubernetes startup or readiness probe, a Slurm prolog health check, or a
//! person on the node. Every check runs (none stops the others), prints a line
//! that names the fix when it fails, and the exit code is 0 only when all pass.
//!
//! The checks: the config is valid; each configured interface opens with its
//! filter; each RDMA device is capturable by this build; a burst of RoCE v2
//! packets on loopback goes through the whole path (ring, window, pcapng, the
//! analysis parser) and every packet is found, in under 3 s; the output
//! directory is writable with room for a ring's worth of capture; the log globs
//! resolve to readable files; the upload endpoint answers, with TLS and
//! credentials accepted (nothing is uploaded); the ring and kernel buffers fit
//! in the memory available.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, RunOptions};
use crate::capture::live::{self, LiveSpec};
use crate::config::Config;
use crate::window::CaptureOutcome;

/// How long the loopback burst may take, end to end.
pub const BURST_LIMIT: Duration = Duration::from_secs(3);
/// Packets in the loopback burst.
pub const BURST_PACKETS: u32 = 200;
/// The burst's addresses: 127.94/16 and 127.95/16, picked by process id so two
/// selftests at once (a probe and a person) do not count each other's packets.
fn burst_addresses() -> (Ipv4Addr, Ipv4Addr) {
    let [_, _, a, b] = std::process::id().to_be_bytes();
    (
        Ipv4Addr::new(127, 95, a, b.max(1)),
        Ipv4Addr::new(127, 94, a, b.max(1)),
    )
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked.
    pub check: String,
    /// Whether it passed.
    pub ok: bool,
    /// Passed, with something worth a look that does not make the node unready
    /// (a log glob with no file yet: no job runs here now).
    pub warn: bool,
    /// What was found; on failure or warning, what to do.
    pub detail: String,
}

fn check(name: impl Into<String>, result: Result<String, String>) -> Check {
    let (ok, detail) = match result {
        Ok(d) => (true, d),
        Err(d) => (false, d),
    };
    Check {
        check: name.into(),
        ok,
        warn: false,
        detail,
    }
}

/// How the log check ended: fine, worth a warning, or failed.
enum LogsFound {
    Fine(String),
    Warn(String),
}

/// Run every check on `config` (`Err`: the config itself did not load).
pub async fn run(config: Result<Config, String>) -> Vec<Check> {
    let config = match config {
        Ok(c) => c,
        Err(e) => return vec![check("config", Err(e))],
    };
    let mut out = vec![check(
        "config",
        config
            .check()
            .map(|notes| format!("valid ({} note(s))", notes.len()))
            .map_err(|e| e.to_string()),
    )];
    out.extend(interfaces(&config));
    out.push(check("loopback path", burst(&config).await));
    out.push(check("output directory", output_dir(&config)));
    out.push(match logs(&config) {
        Ok(LogsFound::Fine(d)) => check("log files", Ok(d)),
        Ok(LogsFound::Warn(d)) => Check {
            warn: true,
            ..check("log files", Ok(d))
        },
        Err(e) => check("log files", Err(e)),
    });
    out.push(check("upload endpoint", upload(&config).await));
    out.push(check("memory", memory(&config)));
    out
}

/// Each configured interface opens with its filter; an RDMA device needs a
/// build that can sniff it.
fn interfaces(config: &Config) -> Vec<Check> {
    let sniffing = crate::interfaces::rdma_sniffing();
    config
        .capture
        .interfaces
        .iter()
        .map(|iface| {
            let rdma = crate::interfaces::is_rdma_device(&config.output.sysfs_root, iface);
            let name = format!("interface {iface}");
            if rdma && !sniffing {
                return check(
                    name,
                    Err(format!(
                        "an RDMA device, and this build cannot capture RDMA devices: build with {}",
                        crate::interfaces::RDMA_BUILD_SCRIPT
                    )),
                );
            }
            let spec = LiveSpec {
                iface: iface.clone(),
                filter: config.capture.filter.clone(),
                snaplen: config.capture.snaplen,
                headers_only: config.capture.headers_only,
                buffer_size: config.capture.buffer_size,
                promiscuous: config.capture.promiscuous,
                rdma_sniffer: rdma,
            };
            check(
                name,
                live::open(&spec)
                    .map(|c| {
                        format!(
                            "opens with filter `{}` ({})",
                            config.capture.filter,
                            c.info().precision
                        )
                    })
                    .map_err(|e| e.to_string()),
            )
        })
        .collect()
}

/// A burst of RoCE v2 packets on loopback through an agent of its own.
async fn burst(config: &Config) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    let mut probe = Config::default();
    probe.capture.interfaces = vec!["lo".into()];
    let (src, dst) = burst_addresses();
    probe.capture.filter = format!("udp port {} and host {dst}", crate::traffic::ROCE_PORT);
    probe.capture.buffer_size = 4 << 20;
    probe.ring.memory_limit = 16 << 20;
    probe.output.dir = dir.path().to_path_buf();
    probe.output.reports = false;
    probe.baseline.enabled = false; // a probe's burst is not this host's traffic
    probe.output.sysfs_root = config.output.sysfs_root.clone();
    let start = Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = RunOptions {
        manual_window: Some((BURST_LIMIT, Duration::from_millis(50))),
        ..RunOptions::default()
    };
    let stop = CancellationToken::new();
    let agent = Agent::builder(probe)
        .options(opts)
        .outcomes(tx)
        .start(stop.clone())
        .await
        .map_err(|e| format!("cannot capture on loopback: {e}"))?;
    let sent = send_burst(src, dst).map_err(|e| format!("cannot send on loopback: {e}"));
    let fired = sent.and_then(|n| {
        agent
            .fire_manual("selftest", "tripcap selftest")
            .map(|_| n)
            .map_err(|e| format!("cannot write a capture: {e}"))
    });
    let outcome =
        tokio::time::timeout(BURST_LIMIT.saturating_sub(start.elapsed()), rx.recv()).await;
    stop.cancel();
    agent.run().await;
    let sent = fired?;
    let pcapng = match outcome {
        Ok(Some(CaptureOutcome::Written { pcapng, .. })) => pcapng,
        Ok(Some(CaptureOutcome::Failed { error, .. })) => return Err(error),
        Ok(None) | Err(_) => {
            return Err(format!(
            "no capture within {} s: the machine is overloaded, or loopback capture is filtered",
            BURST_LIMIT.as_secs()
        ))
        }
    };
    let found = count_roce(&pcapng)?;
    let took = start.elapsed();
    if found != sent {
        return Err(format!("{found} of {sent} packets came back through ring, window and pcapng: look at kernel drops (`capture.buffer_size`)"));
    }
    if took > BURST_LIMIT {
        return Err(format!("all {sent} packets came back, but in {took:.1?} (limit {BURST_LIMIT:?}): the machine is overloaded"));
    }
    Ok(format!(
        "{sent} of {sent} RoCE v2 packets through ring, window, pcapng and parser in {:.0} ms",
        took.as_secs_f64() * 1e3
    ))
}

fn send_burst(src: Ipv4Addr, dst: Ipv4Addr) -> std::io::Result<u32> {
    let sock = UdpSocket::bind(SocketAddr::from((src, 0)))?;
    let mut g =
        crate::traffic::Generator::new(vec![crate::traffic::Flow::new(0x5e1f, 0x5e2f, 1, 4)], 64);
    let mut buf = Vec::new();
    for _ in 0..BURST_PACKETS {
        g.next_packet(&mut buf)
            .ok_or_else(|| std::io::Error::other("generator ended"))?;
        sock.send_to(&buf, SocketAddr::from((dst, crate::traffic::ROCE_PORT)))?;
    }
    // Past the live watermark's lag, so the window holds every packet.
    std::thread::sleep(Duration::from_millis(20));
    Ok(BURST_PACKETS)
}

fn count_roce(pcapng: &Path) -> Result<u32, String> {
    let file = std::fs::File::open(pcapng).map_err(|e| format!("cannot read the capture: {e}"))?;
    let mut reader = crate::capture_file::reader::Reader::new(std::io::BufReader::new(file))
        .map_err(|e| e.to_string())?;
    let mut n = 0;
    while let Some(p) = reader.next_packet().map_err(|e| e.to_string())? {
        if matches!(
            crate::wire::parse_frame(p.link_type, p.data),
            crate::wire::Frame::Roce(_)
        ) {
            n += 1;
        }
    }
    Ok(n)
}

/// The output directory: writable, with room for a ring's worth of capture.
fn output_dir(config: &Config) -> Result<String, String> {
    let dir = &config.output.dir;
    crate::agent::prepare_output(dir).map_err(|e| e.to_string())?;
    let need = config.ring.memory_limit;
    match crate::private_file::free_bytes(dir) {
        Some(free) if free < need => Err(format!(
            "{} has {} MiB free, less than one window can take (ring.memory_limit, {} MiB): free space there or point output.dir elsewhere",
            dir.display(),
            free >> 20,
            need >> 20
        )),
        Some(free) => Ok(format!("{} writable, {} MiB free", dir.display(), free >> 20)),
        None => Ok(format!("{} writable", dir.display())),
    }
}

/// Every log glob resolves to files this process can read. A glob that matches
/// nothing yet is a warning, not a failure: on a node where no job runs now there
/// is no log to follow, and the agent is ready for the next one.
fn logs(config: &Config) -> Result<LogsFound, String> {
    let mut files = 0;
    let mut empty = Vec::new();
    for pattern in config.logs.paths.iter().filter(|p| *p != "-") {
        let paths =
            glob::glob(pattern).map_err(|e| format!("`{pattern}` is not a valid glob: {e}"))?;
        let mut matched = 0;
        for path in paths.flatten() {
            std::fs::File::open(&path).map_err(|e| {
                format!(
                    "{} cannot be read ({e}): run as a user who can read the job's logs",
                    path.display()
                )
            })?;
            matched += 1;
        }
        if matched == 0 {
            empty.push(format!("`{pattern}`"));
        }
        files += matched;
    }
    if !empty.is_empty() {
        return Ok(LogsFound::Warn(format!(
            "{} match(es) no file yet ({files} file(s) readable): fine while no job runs here; otherwise check the path (tripcap waits for it, but a typo waits forever)",
            empty.join(", ")
        )));
    }
    Ok(LogsFound::Fine(if config.logs.paths.is_empty() {
        "none configured".to_string()
    } else {
        format!("{files} file(s) readable")
    }))
}

async fn upload(config: &Config) -> Result<String, String> {
    let Some(upload) = &config.upload else {
        return Ok("none configured".to_string());
    };
    crate::deliver::probe_upload(upload, &crate::agent::host_name())
        .await
        .map(|status| format!("reachable, credentials accepted (HTTP {status})"))
}

fn memory(config: &Config) -> Result<String, String> {
    let available = crate::config::available_memory();
    match available {
        Some(a) => match config.memory_note(a) {
            Some(note) => Err(note),
            None => Ok(format!("ring and buffers fit in {} MiB available", a >> 20)),
        },
        None => Ok("MemAvailable unknown".to_string()),
    }
}

/// The table `tripcap selftest` prints.
pub fn table(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.check.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!(
            "{}  {:<width$}  {}\n",
            match (c.ok, c.warn) {
                (false, _) => "FAIL",
                (true, true) => "WARN",
                (true, false) => "ok  ",
            },
            c.check,
            c.detail
        ));
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    out.push_str(&if failed == 0 {
        "ready\n".to_string()
    } else {
        format!("not ready: {failed} check(s) failed\n")
    });
    out
}
