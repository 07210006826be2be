//! A netdev's driver statistics read with the SIOCETHTOOL ioctl (`tripcap::ethtool`)
//! against `ethtool -S` as the independent reader, on a veth pair made for the test (veth
//! has statistics: `peer_ifindex` and per-queue XDP counters). Then the path the counters
//! take into a capture's sidecar: `counters::ethtool_counters` files a netdev's statistic
//! under the RDMA port that netdev is.

use std::collections::BTreeMap;
use std::process::Command;

use tripcap::{counters, ethtool};

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A veth pair, one end here and the peer in a namespace of its own; removed on drop.
struct Pair {
    ns: String,
    here: String,
    peer: String,
}

impl Pair {
    /// `tag` keeps the tests of this file, which run in parallel, apart.
    fn new(tag: char) -> Pair {
        let id = std::process::id() % 100_000;
        let pair = Pair {
            ns: format!("tc-eth-{id}{tag}"),
            here: format!("tce{id}{tag}"),
            peer: format!("tcp{id}{tag}"),
        };
        pair.remove();
        ip(&["netns", "add", &pair.ns]);
        ip(&[
            "link", "add", &pair.here, "type", "veth", "peer", "name", &pair.peer,
        ]);
        ip(&["link", "set", &pair.peer, "netns", &pair.ns]);
        ip(&["link", "set", &pair.here, "up"]);
        pair
    }

    fn remove(&self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.here])
            .output();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }

    fn peer_ifindex(&self) -> u64 {
        let out = Command::new("ip")
            .args(["-n", &self.ns, "-o", "link", "show", &self.peer])
            .output()
            .expect("ip link show");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split(':')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no ifindex in {text:?}"))
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.remove();
    }
}

/// `ethtool -S IF` as (name, value) in its order.
fn ethtool_s(netdev: &str) -> Vec<(String, u64)> {
    let out = Command::new("ethtool")
        .args(["-S", netdev])
        .output()
        .expect("run ethtool (apt-get install ethtool)");
    assert!(out.status.success(), "ethtool -S {netdev}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1) // "NIC statistics:"
        .filter_map(|l| {
            let (name, value) = l.trim().rsplit_once(": ")?;
            Some((name.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn statistics_are_what_ethtool_prints() {
    let pair = Pair::new('a');
    let ours = ethtool::stats(&pair.here).expect("read statistics");
    let reference = ethtool_s(&pair.here);
    assert!(
        reference.len() > 1,
        "ethtool -S printed too little: {reference:?}"
    );
    assert_eq!(ours, reference, "ioctl vs ethtool -S on {}", pair.here);
    let peer = ours
        .iter()
        .find(|(n, _)| n == "peer_ifindex")
        .map(|&(_, v)| v);
    assert_eq!(peer, Some(pair.peer_ifindex()), "veth's peer_ifindex");

    let named = ethtool::stats_named(&pair.here, &["peer_ifindex", "rx_discards_phy"])
        .expect("named statistics");
    assert_eq!(
        named,
        vec![("peer_ifindex".to_string(), pair.peer_ifindex())]
    );
    let missing = ethtool::stats("tce-absent0").expect_err("no such interface");
    assert!(missing.to_string().contains("No such device"), "{missing}");
}

#[test]
fn counters_file_a_netdevs_statistic_under_its_rdma_port() {
    let pair = Pair::new('b');
    // A fake sysfs that puts the real veth behind an RDMA device as its second port
    // (dev_port 1), the way mlx5 links a port's netdev.
    let root = tempfile::tempdir().expect("tempdir");
    let net = root
        .path()
        .join("class/infiniband/mlx5_7/device/net")
        .join(&pair.here);
    std::fs::create_dir_all(&net).expect("fake device/net");
    let class_net = root.path().join("class/net").join(&pair.here);
    std::fs::create_dir_all(&class_net).expect("fake class/net");
    std::fs::write(class_net.join("dev_port"), "1\n").expect("dev_port");

    let mut ports = BTreeMap::new();
    ports.insert(
        "2".to_string(),
        BTreeMap::from([("port_rcv_discards".to_string(), 5u64)]),
    );
    counters::ethtool_counters(
        root.path(),
        "mlx5_7",
        &["peer_ifindex", "rx_discards_phy"],
        &mut ports,
    );
    let port2 = ports.get("2").expect("port 2");
    assert_eq!(port2.get("peer_ifindex"), Some(&pair.peer_ifindex()));
    assert_eq!(
        port2.get("port_rcv_discards"),
        Some(&5),
        "sysfs values kept"
    );
    assert_eq!(ports.len(), 1, "filed under port 2 only: {ports:?}");
}
