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
const COLLECT_TOKEN: &str = "collector-token-77aa";
const COLLECT_TOKEN_ENV: &str = "TRIPCAP_TEST_COLLECT_TOKEN";

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
    // The server's credential, as a deployment would write it: the secret from the environment.
    let mut credential = String::new();
    if nats.token.is_some() {
        credential.push_str(&format!("token = \"${{{TOKEN_ENV}}}\"\n"));
    }
    if let Some((user, _)) = &nats.user {
        credential.push_str(&format!(
            "user = \"{user}\"\npassword = \"${{{TOKEN_ENV}}}\"\n"
        ));
    }
    if nats.nkey_seed.is_some() {
        credential.push_str(&format!("nkey = \"${{{TOKEN_ENV}}}\"\n"));
    }
    if let Some(pki) = &nats.tls {
        credential.push_str(&format!("ca_file = \"{}\"\n", pki.join("ca.pem").display()));
    }
    std::fs::write(
        &cfg,
        format!(
            "host = \"{host}\"\npacks = [\"nccl\"]\n[output]\nreports = false\n\
             [fleet]\nnats = \"{}\"\njob = \"{job}\"\n{credential}{fleet_extra}\n",
            nats.url()
        ),
    )
    .expect("config");
    let secret = nats
        .token
        .clone()
        .or_else(|| nats.user.as_ref().map(|(_, p)| p.clone()))
        .or_else(|| nats.nkey_seed.clone())
        .unwrap_or_default();
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
            .env(TOKEN_ENV, &secret),
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
    // Every agent uploads to one collector: its page shows the incident's hosts side by side.
    let c = start_collector(
        &dir.path().join("collected"),
        COLLECT_TOKEN_ENV,
        COLLECT_TOKEN,
        &[],
    );
    let upload = format!(
        "[upload]\nurl = \"{}/upload/{{host}}/{{incident}}/{{file}}\"\nheaders = {{ Authorization = \"Bearer {COLLECT_TOKEN}\" }}\nmin_backoff = \"50ms\"",
        c.url
    );
    let agents: Vec<Agent> = (1..=3)
        .map(|n| agent(dir.path(), &nats, job, n, &upload))
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
    // The collector's page: one section for the incident, the three hosts in one grid.
    // (Three agents write, analyse and upload at once: on 2 busy cores that took over 30 s.)
    wait_until(Duration::from_secs(90), "three uploads", || {
        (1..=3).all(|n| {
            c.dir
                .join(incident)
                .join(format!("host{n}"))
                .join(format!("{incident}.json"))
                .is_file()
        })
    });
    let port: u16 = c
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let (status, page) = http(port, "GET", "/", "", Duration::from_secs(5)).expect("page");
    assert_eq!(status, 200);
    assert_eq!(
        page.matches("<section class=\"incident\"").count(),
        1,
        "{page}"
    );
    let section = &page[page.find("<div class=\"hosts\">").expect("hosts grid")..];
    for n in 1..=3 {
        assert!(
            section.contains(&format!("Host <code>host{n}</code>")),
            "{page}"
        );
    }
    assert!(
        page.contains("announced by <code>host1</code>: captured by 3 host(s)"),
        "{page}"
    );
}

const ERROR_12: &str = "host1:123:456 [0] transport/net_ib.cc:1234 NCCL WARN NET/IB : Got completion from peer 10.0.3.7<52311> with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid ::ffff:10.0.3.6 remoteGids::ffff:10.0.3.7";

/// Traffic to the three agents for 3 s, `a` logging an error-12 line that names
/// 10.0.3.7 halfway; the sidecars of `a` and `named` once both have captured.
fn error_12(a: &Agent, named: &Agent, bystander: &Agent) -> (Sidecar, Sidecar) {
    traffic(&[a, named, bystander], 3000, |i| {
        if i == 1500 {
            a.say(ERROR_12);
        }
    });
    wait_until(
        Duration::from_secs(30),
        "captures on host1 and host2",
        || a.sidecars().len() == 1 && named.sidecars().len() == 1,
    );
    (a.sidecars().remove(0), named.sidecars().remove(0))
}

#[test]
fn with_peers_named_only_the_node_the_line_names_captures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nats = NatsServer::start(dir.path(), Some(TOKEN));
    let job = "job-named";
    let a = agent(dir.path(), &nats, job, 1, "");
    let named = agent(
        dir.path(),
        &nats,
        job,
        2,
        "peers = \"named\"\naddresses = [\"10.0.3.7\"]",
    );
    let other = agent(
        dir.path(),
        &nats,
        job,
        3,
        "peers = \"named\"\naddresses = [\"10.0.3.9\"]",
    );
    let (sa, sn) = error_12(&a, &named, &other);
    assert_eq!(sa.triggers[0].name, "nccl-ib-retry-exceeded");
    assert_eq!(sn.incident, sa.incident);
    check_file(&named.out, named.dst, &sn);
    // host3 is in the job but not named: it captured nothing, and it is not
    // counted as silent (it was not asked).
    std::thread::sleep(Duration::from_secs(2));
    assert!(other.sidecars().is_empty(), "{}", other.stderr());
    let f = sa.fleet.as_ref().expect("fleet section");
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(hosts, ["host1", "host2"], "{f:?}");
    assert!(f.silent.is_empty(), "{f:?}");
    for x in [a, named, other] {
        x.stop();
    }
}

/// GET `/metrics` of an agent whose API listens on `port`.
fn metrics(port: u16) -> String {
    let (status, body) =
        http(port, "GET", "/metrics", "", Duration::from_secs(5)).expect("the API answers");
    assert_eq!(status, 200, "{body}");
    body
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[test]
fn with_nats_down_local_capture_goes_on_and_the_announcement_is_delivered_on_reconnect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut nats = NatsServer::start(dir.path(), Some(TOKEN));
    let job = "job-outage";
    let port = free_port();
    let a = agent(
        dir.path(),
        &nats,
        job,
        1,
        &format!("[api]\nlisten = \"127.0.0.1:{port}\""),
    );
    let b = agent(dir.path(), &nats, job, 2, "");
    assert_eq!(metric(&metrics(port), "tripcap_fleet_connected"), 1.0);
    traffic(&[&a, &b], 6000, |i| match i {
        500 => nats.kill(),
        1500 => a.say("rank 0: TRIPCAP-FLEET-TEST-FAILURE while NATS is down"),
        3500 => {
            // host1 captured alone: NATS is not in the capture path.
            assert_eq!(a.sidecars().len(), 1, "{}", a.stderr());
            let m = metrics(port);
            assert_eq!(metric(&m, "tripcap_fleet_connected"), 0.0, "{m}");
            assert_eq!(metric(&m, "tripcap_fleet_outbox"), 1.0, "{m}");
            nats.restart();
        }
        _ => {}
    });
    wait_until(
        Duration::from_secs(30),
        "host2's capture after the outage",
        || b.sidecars().len() == 1,
    );
    let (sa, sb) = (a.sidecars().remove(0), b.sidecars().remove(0));
    assert_eq!(sb.incident, sa.incident);
    // Published on reconnect with its original times: host2's window is the one
    // asked 2 s before NATS came back, out of its ring.
    assert_eq!(sb.window.asked_start_ns, sa.window.asked_start_ns);
    assert!(sb.window.complete, "{:?}", sb.window);
    check_file(&b.out, b.dst, &sb);
    let m = metrics(port);
    assert_eq!(metric(&m, "tripcap_fleet_connected"), 1.0, "{m}");
    assert!(metric(&m, "tripcap_fleet_disconnects_total") >= 1.0, "{m}");
    assert_eq!(
        metric(&m, "tripcap_fleet_announcements_sent_total"),
        1.0,
        "{m}"
    );
    let log = a.stop();
    assert!(log.contains("disconnected from NATS"), "{log}");
    b.stop();
}

#[test]
fn two_hundred_nodes_announcing_at_once_make_one_incident() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nats = NatsServer::start(dir.path(), Some(TOKEN));
    let job = "job-storm";
    let agents: Vec<Agent> = (1..=3)
        .map(|n| agent(dir.path(), &nats, job, n, ""))
        .collect();
    let refs: Vec<&Agent> = agents.iter().collect();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let client = rt.block_on(nats.client());
    let mut storm = None;
    traffic(&refs, 3000, |i| {
        if i != 1500 {
            return;
        }
        // The three agents and 197 other nodes (this test, speaking the agents'
        // protocol on the real server) announce the same failure at once.
        for a in &agents {
            a.say("rank 0: TRIPCAP-FLEET-TEST-FAILURE everywhere");
        }
        let js = async_nats::jetstream::new(client.clone());
        let now = tripcap::clock::now_ns();
        let subject = format!("tripcap.job.{job}.announce");
        storm = Some(rt.spawn(async move {
            let sends = (3..200).map(|n| {
                let a = serde_json::json!({
                    "v": 1, "job": job, "host": format!("node{n}"),
                    "incident": format!("storm-node{n}"), "trigger": "pattern",
                    "class": "custom", "line": "TRIPCAP-FLEET-TEST-FAILURE",
                    "at_ns": now, "pre_ns": S, "post_ns": S,
                    "asked": [now - S, now + S], "max_window_ns": 600 * S,
                });
                let (js, subject) = (js.clone(), subject.clone());
                async move {
                    let ack = js
                        .publish(subject, serde_json::to_vec(&a).expect("json").into())
                        .await
                        .expect("publish");
                    ack.await.expect("ack");
                }
            });
            futures_util::future::join_all(sends).await;
            // A malformed one, and an answer with a wrong shape: counted, logged once.
            for kind in ["announce", "answer"] {
                let ack = js
                    .publish(
                        format!("tripcap.job.{job}.{kind}"),
                        "{\"v\":1,\"oops\":true}".into(),
                    )
                    .await
                    .expect("publish");
                ack.await.expect("ack");
            }
        }));
    });
    rt.block_on(storm.expect("storm sent")).expect("storm task");
    wait_until(Duration::from_secs(30), "a capture on every agent", || {
        agents.iter().all(|a| !a.sidecars().is_empty())
    });
    std::thread::sleep(Duration::from_secs(2));
    let sides: Vec<Sidecar> = agents
        .iter()
        .map(|a| {
            let mut s = a.sidecars();
            assert_eq!(s.len(), 1, "one window per agent: {}", a.stderr());
            s.remove(0)
        })
        .collect();
    let incident = &sides[0].incident;
    assert!(sides.iter().all(|s| &s.incident == incident), "{sides:?}");
    // Bounded traffic: 200 announcements, one answer and one hello per agent, the 2 bad ones.
    let info = rt.block_on(async {
        let js = async_nats::jetstream::new(client.clone());
        let mut stream = js.get_stream("TRIPCAP_FLEET").await.expect("stream");
        stream.info().await.expect("info").state.messages
    });
    assert!((202..=208).contains(&info), "{info} messages in the stream");
    for a in agents {
        let log = a.stop();
        assert_eq!(log.matches("fleet: ignored a message").count(), 1, "{log}");
    }
}

/// `tripcap run` with `[fleet]` body `fleet` (the secret in the environment):
/// it must refuse to start; its stderr, which must not hold the secret.
fn start_fails(dir: &Path, fleet: &str, secret: &str) -> String {
    let cfg = dir.join("refused.toml");
    std::fs::write(&cfg, format!("[fleet]\n{fleet}\n")).expect("config");
    let out = run(tripcap()
        .arg("run")
        .arg("-c")
        .arg(&cfg)
        .args(["-i", "lo", "-o"])
        .arg(dir.join("out-refused"))
        .env(TOKEN_ENV, secret));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    assert!(
        !stderr.contains(secret),
        "the credential is never printed: {stderr}"
    );
    stderr
}

#[test]
fn a_wrong_token_is_a_clear_start_up_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nats = NatsServer::start(dir.path(), Some(TOKEN));
    let stderr = start_fails(
        dir.path(),
        &format!(
            "nats = \"{}\"\njob = \"j1\"\ntoken = \"${{{TOKEN_ENV}}}\"",
            nats.url()
        ),
        "not-the-token-9f2e",
    );
    assert!(
        stderr.contains("refused the credentials") && stderr.contains("check `token`"),
        "{stderr}"
    );
}

#[test]
fn an_nkey_user_connects_and_a_wrong_seed_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let user = nkeys::KeyPair::new_user();
    let seed = user.seed().expect("seed");
    let nats = NatsServer::start_nkey(dir.path(), &seed, &user.public_key());
    // Following the job's stream needs an authorized connection.
    let a = agent(dir.path(), &nats, "job-nkey", 1, "");
    assert!(!a.stop().contains(&seed), "the seed is never logged");
    let other = nkeys::KeyPair::new_user().seed().expect("seed");
    let stderr = start_fails(
        dir.path(),
        &format!(
            "nats = \"{}\"\njob = \"j1\"\nnkey = \"${{{TOKEN_ENV}}}\"",
            nats.url()
        ),
        &other,
    );
    assert!(stderr.contains("refused the credentials"), "{stderr}");
}

#[test]
fn a_named_node_of_another_job_captures_and_a_dead_member_is_listed_silent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nats = NatsServer::start(dir.path(), Some(TOKEN));
    let a = agent(dir.path(), &nats, "job-a", 1, "");
    // Another job's node that owns the named address, and one that does not read
    // named announcements (`peers = "job"`).
    let named = agent(
        dir.path(),
        &nats,
        "job-b",
        2,
        "peers = \"both\"\naddresses = [\"10.0.3.7\"]",
    );
    let job_only = agent(dir.path(), &nats, "job-b", 3, "addresses = [\"10.0.3.7\"]");
    // A member of job-a that dies without a goodbye.
    let mut dead = agent(dir.path(), &nats, "job-a", 4, "");
    dead.child.kill().expect("kill");
    dead.child.wait().expect("wait");
    let (sa, sn) = error_12(&a, &named, &job_only);
    assert_eq!(sn.incident, sa.incident);
    assert_eq!(sn.triggers[0].name, "fleet");
    check_file(&named.out, named.dst, &sn);
    std::thread::sleep(Duration::from_secs(2));
    assert!(job_only.sidecars().is_empty(), "{}", job_only.stderr());
    let f = sa.fleet.as_ref().expect("fleet section");
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(hosts, ["host1", "host2"], "{f:?}");
    assert_eq!(f.silent, ["host4"], "{f:?}");
    for x in [a, named, job_only] {
        x.stop();
    }
}

#[test]
fn over_tls_with_a_user_and_password_and_a_wrong_ca_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = dir.path().join("pki");
    std::fs::create_dir_all(&pki).expect("mkdir");
    common::pki::make_pki(&pki);
    let nats = NatsServer::start_with(dir.path(), None, Some(("tripcap", TOKEN)), Some(&pki));
    let job = "job-tls";
    let a = agent(dir.path(), &nats, job, 1, "");
    let b = agent(dir.path(), &nats, job, 2, "");
    traffic(&[&a, &b], 3000, |i| {
        if i == 1500 {
            a.say("rank 0: TRIPCAP-FLEET-TEST-FAILURE over TLS");
        }
    });
    wait_until(Duration::from_secs(30), "both captures", || {
        a.sidecars().len() == 1 && b.sidecars().len() == 1
    });
    assert_eq!(b.sidecars()[0].incident, a.sidecars()[0].incident);
    for x in [a, b] {
        let log = x.stop();
        assert!(!log.contains(TOKEN), "the password is never logged: {log}");
    }
    // A CA that did not sign the server's certificate: refused at start, saying what to check.
    let other = dir.path().join("other-pki");
    std::fs::create_dir_all(&other).expect("mkdir");
    common::pki::make_pki(&other);
    let stderr = start_fails(
        dir.path(),
        &format!(
            "nats = \"{}\"\njob = \"j\"\nuser = \"tripcap\"\npassword = \"${{{TOKEN_ENV}}}\"\nca_file = \"{}\"",
            nats.url(),
            other.join("ca.pem").display()
        ),
        TOKEN,
    );
    assert!(
        stderr.contains("[fleet] TLS to") && stderr.contains("check `ca_file`"),
        "{stderr}"
    );
}
