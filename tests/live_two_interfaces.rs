//! Live capture on two interfaces into one file: `lo` and one end of a veth
//! pair whose other end sits in a network namespace this test creates. Both
//! carry RoCE v2 datagrams; the capture must hold every packet of both in the
//! window (checked against tcpdump on each interface), interleaved in time
//! order, each tagged with its interface. Needs root, as CI has.

mod common;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::Duration;

use common::*;
use tripcap::traffic::{Flow, Generator, ROCE_PORT};

const NS: &str = "tripcap-test-2if";
const VETH: &str = "tcap2if0";
const PEER: &str = "tcap2if1";
const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 1);
const NS_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 2);
const LO_DST: Ipv4Addr = Ipv4Addr::new(127, 89, 0, 2);

fn ip(args: &[&str]) {
    let o = Command::new("ip")
        .args(args)
        .output()
        .expect("ip runs (apt-get install iproute2)");
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The namespace and veth pair, removed on drop.
struct Net;

impl Net {
    fn new() -> Net {
        let _ = Command::new("ip").args(["netns", "del", NS]).output();
        let _ = Command::new("ip").args(["link", "del", VETH]).output();
        ip(&["netns", "add", NS]);
        ip(&["link", "add", VETH, "type", "veth", "peer", "name", PEER]);
        ip(&["link", "set", PEER, "netns", NS]);
        ip(&["addr", "add", &format!("{HOST_IP}/24"), "dev", VETH]);
        // An MTU no default gives, for the sidecar to report (a RoCE MTU of 4096 plus headers).
        ip(&["link", "set", VETH, "mtu", "4200"]);
        ip(&["link", "set", VETH, "up"]);
        ip(&["-n", NS, "addr", "add", &format!("{NS_IP}/24"), "dev", PEER]);
        ip(&["-n", NS, "link", "set", PEER, "up"]);
        // Static neighbour: no ARP wait before the first datagram.
        let out = Command::new("ip")
            .args(["-n", NS, "link", "show", PEER])
            .output()
            .expect("ip");
        let text = String::from_utf8_lossy(&out.stdout);
        let mac = text
            .split("link/ether ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("peer mac");
        ip(&[
            "neigh",
            "replace",
            &NS_IP.to_string(),
            "lladdr",
            mac,
            "dev",
            VETH,
        ]);
        Net
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", VETH]).output();
        let _ = Command::new("ip").args(["netns", "del", NS]).output();
    }
}

/// The oracle: tcpdump writing `file`, and its stderr.
type Oracle = (
    std::process::Child,
    std::sync::Arc<std::sync::Mutex<String>>,
);

fn tcpdump(iface: &str, file: &std::path::Path, filter: &str) -> Oracle {
    spawn_ready(
        Command::new("tcpdump")
            .args(["-i", iface, "-n", "--time-stamp-precision=nano", "-U", "-w"])
            .arg(file)
            .arg(filter),
        "listening on",
        Duration::from_secs(20),
    )
}

/// Stop the oracle; how many packets it lost: those the kernel dropped for it
/// and those its filter took that it never wrote (tcpdump's own report at exit).
fn stop_oracle((child, log): &mut Oracle) -> u64 {
    interrupt(child);
    let mut text = String::new();
    wait_until(Duration::from_secs(5), "tcpdump's report", || {
        text = log.lock().map(|l| l.clone()).unwrap_or_default();
        text.contains("dropped by kernel")
    });
    let count = |what: &str| -> u64 {
        text.lines()
            .find(|l| l.ends_with(what))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    count("packets dropped by kernel")
        + count("packets received by filter").saturating_sub(count("packets captured"))
}

#[test]
fn two_live_interfaces_go_into_one_file() {
    let _net = Net::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    let log = logs.join("job.log");
    std::fs::write(&log, "").expect("log");
    let filter = format!("udp port {ROCE_PORT} and (host {LO_DST} or host {NS_IP})");
    let (o_lo, o_veth) = (dir.path().join("lo.pcap"), dir.path().join("veth.pcap"));
    let mut td_lo = tcpdump("lo", &o_lo, &filter);
    let mut td_veth = tcpdump(VETH, &o_veth, &filter);
    let (mut agent, agent_log) = spawn_ready(
        tripcap()
            .args([
                "run",
                "-i",
                "lo",
                "-i",
                VETH,
                "-f",
                &filter,
                "--pattern",
                "NET/IB : Got completion from peer",
                "--pre",
                "1s",
                "--post",
                "1s",
                "-o",
            ])
            .arg(&out)
            .arg("--log")
            .arg(&log),
        "capturing",
        Duration::from_secs(20),
    );

    let lo_sock =
        UdpSocket::bind(SocketAddr::from((Ipv4Addr::new(127, 89, 0, 1), 0))).expect("bind lo");
    let veth_sock = UdpSocket::bind(SocketAddr::from((HOST_IP, 0))).expect("bind veth");
    let mut g = Generator::new(
        vec![Flow::new(0x31, 0x41, 1, 2), Flow::new(0x32, 0x42, 1, 2)],
        64,
    );
    let mut buf = Vec::new();
    paced(3000, Duration::from_millis(1), |i| {
        if i == 1500 {
            std::fs::write(&log, "host:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.231.0.2<49152> with error 12, opcode 0, len 0, vendor err 129 (Recv) localGid ::ffff:10.231.0.1 remoteGid ::ffff:10.231.0.2\n").expect("log");
        }
        let p = g.next_packet(&mut buf).expect("packet");
        if p.flow == 0 {
            lo_sock
                .send_to(&buf, SocketAddr::from((LO_DST, ROCE_PORT)))
                .expect("send lo");
        } else {
            veth_sock
                .send_to(&buf, SocketAddr::from((NS_IP, ROCE_PORT)))
                .expect("send veth");
        }
    });
    wait_until(Duration::from_secs(20), "the sidecar", || {
        sidecars(&out).len() == 1
    });
    assert!(
        interrupt(&mut agent).success(),
        "{}",
        agent_log.lock().map(|l| l.clone()).unwrap_or_default()
    );
    let oracle_lost = stop_oracle(&mut td_lo) + stop_oracle(&mut td_veth);

    let side = read_sidecar(&sidecars(&out)[0]);
    assert_eq!(
        side.interfaces
            .iter()
            .map(|i| i.name.as_str())
            .collect::<Vec<_>>(),
        vec!["lo", VETH]
    );
    // Each interface's speed and MTU, as sysfs says them (lo has no speed; veth says 10000).
    for i in &side.interfaces {
        let sys = |f: &str| {
            std::fs::read_to_string(format!("/sys/class/net/{}/{f}", i.name))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
        };
        assert_eq!(i.speed_mbps, sys("speed"), "{}", i.name);
        assert_eq!(i.mtu.map(u64::from), sys("mtu"), "{}", i.name);
    }
    assert_eq!(side.interfaces[1].mtu, Some(4200));
    assert_eq!(side.interfaces[1].speed_mbps, Some(10_000));
    assert_eq!(side.interfaces[0].speed_mbps, None, "lo has no speed");
    assert!(side.window.complete, "{:?}", side.window.shortfall);
    let (from, to) = (side.window.asked_start_ns, side.window.asked_end_ns);
    let mut expected: Vec<Row> = tshark_rows(&o_lo)
        .into_iter()
        .map(|r| Row {
            iface: "lo".into(),
            ..r
        })
        .chain(tshark_rows(&o_veth).into_iter().map(|r| Row {
            iface: VETH.into(),
            ..r
        }))
        .filter(|r| r.ts >= from && r.ts <= to)
        .collect();
    expected.sort_by(|a, b| a.ts.cmp(&b.ts).then(a.iface.cmp(&b.iface)));
    let ours = tshark_rows(&out.join(&side.file));
    assert!(expected.iter().any(|r| r.iface == "lo") && expected.iter().any(|r| r.iface == VETH));
    if oracle_lost == 0 {
        assert_eq!(ours, expected, "both interfaces, merged in time order");
    } else {
        // tcpdump lost packets on this busy machine (it says how many): ours must
        // hold every packet it has, in order, and at most as many more as it lost.
        let mut rest = ours.iter();
        for r in &expected {
            assert!(rest.any(|o| o == r), "{r:?} is missing, or out of order");
        }
        assert!(
            ours.len() as u64 <= expected.len() as u64 + oracle_lost,
            "{} packets, the oracle {} and lost {oracle_lost}",
            ours.len(),
            expected.len()
        );
    }
    assert_eq!(
        side.interfaces.iter().map(|i| i.packets).sum::<u64>(),
        ours.len() as u64
    );
}

/// One of two captured interfaces vanishes mid-run: the agent keeps capturing
/// the other, the capture is written, and its sidecar says which interface
/// stopped, when and why, instead of claiming to be complete.
#[test]
fn an_interface_that_vanishes_is_reported_not_fatal() {
    const GONE: &str = "tcapgone0";
    let _ = Command::new("ip").args(["link", "del", GONE]).output();
    ip(&[
        "link",
        "add",
        GONE,
        "type",
        "veth",
        "peer",
        "name",
        "tcapgone1",
    ]);
    ip(&["link", "set", GONE, "up"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let log = dir.path().join("job.log");
    std::fs::write(&log, "").expect("log");
    let (mut agent, agent_log) = spawn_ready(
        tripcap()
            .args([
                "run",
                "-i",
                "lo",
                "-i",
                GONE,
                "-f",
                "udp port 4791 and host 127.89.1.2",
                "--pattern",
                "boom",
                "--pre",
                "2s",
                "--post",
                "500ms",
                "-o",
            ])
            .arg(&out)
            .arg("--log")
            .arg(&log),
        "capturing",
        Duration::from_secs(20),
    );
    let sock = UdpSocket::bind(SocketAddr::from((Ipv4Addr::new(127, 89, 1, 1), 0))).expect("bind");
    let mut g = Generator::new(vec![Flow::new(0x71, 0x81, 1, 2)], 32);
    let mut buf = Vec::new();
    paced(1500, Duration::from_millis(1), |i| {
        if i == 500 {
            ip(&["link", "del", GONE]);
        }
        if i == 1000 {
            std::fs::write(&log, "boom\n").expect("log");
        }
        g.next_packet(&mut buf).expect("packet");
        sock.send_to(
            &buf,
            SocketAddr::from((Ipv4Addr::new(127, 89, 1, 2), ROCE_PORT)),
        )
        .expect("send");
    });
    wait_until(Duration::from_secs(20), "the sidecar", || {
        sidecars(&out).len() == 1
    });
    assert!(
        agent.try_wait().expect("try_wait").is_none(),
        "the agent kept running"
    );
    assert!(
        interrupt(&mut agent).success(),
        "{}",
        agent_log.lock().map(|l| l.clone()).unwrap_or_default()
    );
    let side = read_sidecar(&sidecars(&out)[0]);
    assert!(!side.window.complete);
    assert!(
        side.window
            .shortfall
            .iter()
            .any(|s| s.starts_with(&format!("capture on `{GONE}` stopped at"))),
        "{:?}",
        side.window.shortfall
    );
    assert!(side.packets > 0);
    assert_eq!(
        tshark_rows(&out.join(&side.file)).len() as u64,
        side.packets
    );
}
