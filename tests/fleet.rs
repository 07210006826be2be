//! Fleet: agents of one job share an incident over a real `nats-server -js` on
//! 127.0.0.1. Each agent runs as its own process with its own `--host`, output
//! directory and log, and captures on `lo` with its own filter (its own
//! destination address), while this test sends real RoCE v2 datagrams to all of
//! them. tshark checks each file against its window.
//! Needs root (or CAP_NET_RAW), as CI has, and `nats-server` (`.ci/run` installs it).

mod common;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::nats::NatsServer;
use common::*;
use tripcap::sidecar::Sidecar;
use tripcap::traffic::{Flow, Generator, ROCE_PORT};

const TOKEN: &str = "fleet-test-token-5d1c";
const TOKEN_ENV: &str = "TRIPCAP_TEST_FLEET_TOKEN";
const S: i64 = 1_000_000_000;

/// One agent under test.
struct Agent {
    child: Child,
    log: Arc<Mutex<String>>,
    out: PathBuf,
    job_log: PathBuf,
    dst: Ipv4Addr,
}

impl Agent {
    fn stderr(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn say(&self, line: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.job_log)
            .expect("append");
        writeln!(f, "{line}").expect("write");
    }

    fn sidecars(&self) -> Vec<Sidecar> {
        sidecars(&self.out)
            .iter()
            .map(|p| read_sidecar(p))
            .collect()
    }

    fn stop(mut self) -> String {
        let status = interrupt(&mut self.child);
        let log = self.stderr();
        assert!(status.success(), "agent exit {status}: {log}");
        log
    }
}

/// Start agent `host` (index `n`: its destination is 127.90.n.2) with `extra`
/// config lines in `[fleet]`; waits until it follows the job's stream.
fn agent(dir: &Path, nats: &NatsServer, job: &str, n: u8, fleet_extra: &str) -> Agent {
    let host = format!("host{n}");
    let base = dir.join(&host);
    std::fs::create_dir_all(&base).expect("mkdir");
    let job_log = base.join("job.log");
    std::fs::write(&job_log, "NCCL INFO starting\n").expect("log");
    let dst = Ipv4Addr::new(127, 90, n, 2);
    let cfg = base.join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "host = \"{host}\"\npacks = [\"nccl\"]\n[output]\nreports = false\n\
             [fleet]\nnats = \"{}\"\njob = \"{job}\"\ntoken = \"${{{TOKEN_ENV}}}\"\n{fleet_extra}\n",
            nats.url()
        ),
    )
    .expect("config");
    let out = base.join("out");
    let (child, log) = spawn_ready(
        tripcap()
            .arg("run")
            .arg("-c")
            .arg(&cfg)
            .args(["-i", "lo", "-f"])
            .arg(format!("udp port {ROCE_PORT} and dst host {dst}"))
            .args(["--pattern", "TRIPCAP-FLEET-TEST-FAILURE"])
            .args(["--pre", "1s", "--post", "1s", "-o"])
            .arg(&out)
            .arg("--log")
            .arg(&job_log)
            .env(TOKEN_ENV, nats.token.as_deref().unwrap_or("")),
        "fleet: following the job's announcements",
        Duration::from_secs(30),
    );
    Agent {
        child,
        log,
        out,
        job_log,
        dst,
    }
}

/// Send RoCE packets to every agent's destination for `n` ms (one per agent
/// per ms), calling `at(i)` at each step first.
fn traffic(agents: &[&Agent], n: usize, mut at: impl FnMut(usize)) {
    let sock = UdpSocket::bind(SocketAddr::from((Ipv4Addr::new(127, 90, 0, 1), 0))).expect("bind");
    let mut g = Generator::new(vec![Flow::new(0x1a, 0x2a, 7, 4)], 64);
    let mut buf = Vec::new();
    paced(n, Duration::from_millis(1), |i| {
        at(i);
        g.next_packet(&mut buf).expect("packet");
        for a in agents {
            sock.send_to(&buf, SocketAddr::from((a.dst, ROCE_PORT)))
                .expect("send");
        }
    });
}

/// The capture's packets as tshark reads them: (time ns, destination).
fn packets(out: &Path, side: &Sidecar) -> Vec<(i64, String)> {
    let file = out.join(&side.file);
    tshark_fields(&file, Some("infiniband"), &["frame.time_epoch", "ip.dst"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (t, d) = l.split_once('\t').expect("two fields");
            (epoch_ns(t), d.to_string())
        })
        .collect()
}

/// Every packet of the capture in `out` went to `dst` (the agent's own) and
/// lies inside the window asked.
fn check_file(out: &Path, dst: Ipv4Addr, side: &Sidecar) {
    let rows = packets(out, side);
    assert!(
        rows.len() > 300,
        "{}: {} packets in a 2 s window at 1000/s",
        side.host,
        rows.len()
    );
    let want = dst;
    for (t, dst) in &rows {
        assert_eq!(
            dst,
            &want.to_string(),
            "{}: another agent's packet",
            side.host
        );
        assert!(
            *t >= side.window.asked_start_ns && *t <= side.window.asked_end_ns,
            "{}: packet at {t} outside {:?}",
            side.host,
            [side.window.asked_start_ns, side.window.asked_end_ns]
        );
    }
}

#[test]
fn a_failure_on_one_node_is_captured_by_the_whole_job_under_one_incident() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nats = NatsServer::start(dir.path(), Some(TOKEN));
    let job = "job-three";
    let agents: Vec<Agent> = (1..=3)
        .map(|n| agent(dir.path(), &nats, job, n, ""))
        .collect();
    let refs: Vec<&Agent> = agents.iter().collect();
    traffic(&refs, 3000, |i| {
        if i == 1500 {
            agents[0].say("rank 0: TRIPCAP-FLEET-TEST-FAILURE on the first node");
        }
    });
    wait_until(Duration::from_secs(30), "a capture on every agent", || {
        agents.iter().all(|a| a.sidecars().len() == 1)
    });
    let sides: Vec<Sidecar> = agents.iter().map(|a| a.sidecars().remove(0)).collect();
    let files: Vec<(PathBuf, Ipv4Addr)> = agents.iter().map(|a| (a.out.clone(), a.dst)).collect();
    let logs: Vec<String> = agents.into_iter().map(Agent::stop).collect();
    let incident = &sides[0].incident;
    for (s, log) in sides.iter().zip(&logs) {
        assert_eq!(
            &s.incident, incident,
            "one incident id across the job\n{log}"
        );
        assert!(!log.contains(TOKEN), "the token is never logged");
    }
    // The first node's own trigger; the others record the fleet's, with the line.
    assert_eq!(sides[0].triggers[0].name, "pattern");
    for s in &sides[1..] {
        let t = &s.triggers[0];
        assert_eq!(t.name, "fleet");
        assert!(
            t.source.as_deref().is_some_and(|s| s.contains("on host1")),
            "{t:?}"
        );
        assert!(t
            .line
            .as_deref()
            .is_some_and(|l| l.contains("TRIPCAP-FLEET-TEST-FAILURE")));
        // Back-dated from the announcement's times, not from when it arrived.
        assert_eq!(s.window.asked_start_ns, sides[0].window.asked_start_ns);
        assert_eq!(s.window.asked_end_ns, sides[0].window.asked_end_ns);
    }
    // Who took part: all three captured; nobody was silent.
    for s in &sides {
        let f = s.fleet.as_ref().expect("fleet section");
        assert_eq!(f.job, job);
        assert_eq!(f.announced_by, "host1");
        let hosts: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts, ["host1", "host2", "host3"], "{f:?}");
        assert!(f.hosts.iter().all(|h| h.window.is_some()), "{f:?}");
        assert!(f.silent.is_empty(), "{f:?}");
    }
    assert_eq!(
        sides[0].window.asked_end_ns - sides[0].window.asked_start_ns,
        2 * S
    );
    // tshark: each file holds its own agent's packets, inside the window.
    for ((out, dst), s) in files.iter().zip(&sides) {
        check_file(out, *dst, s);
    }
}
