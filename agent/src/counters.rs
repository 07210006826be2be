//! RDMA port counters from sysfs: what the NIC saw that a capture may have missed.
//!
//! A capture shows the packets that reached the capture point; the NIC's own counters
//! (`out_of_sequence`, `packet_seq_err`, `local_ack_timeout_err`, `rnr_nak_retry_err`,
//! `np_cnp_sent`, `np_ecn_marked_roce_packets`, `rp_cnp_handled`, …) count what happened
//! inside the RDMA device. The agent takes a [`snapshot`] at trigger time and another at the
//! end of the post-window; [`delta`] of the two goes into the sidecar and the analysis
//! summary shows it.
//!
//! Which devices: the RDMA devices behind the captured netdevs, found both ways sysfs links
//! them (`<root>/class/net/<if>/device/infiniband/<dev>` and
//! `<root>/class/infiniband/<dev>/device/net/<if>`); a capture interface that *is* an RDMA
//! device (`mlx5_0`, libpcap's RDMA sniffer) counts too. The sysfs root is a parameter so
//! tests build a fake tree in a temporary directory.
//!
//! Reading is best effort and never fails: a counter file that cannot be read or does not
//! hold an unsigned integer is skipped and counted in [`CounterSnapshot::unreadable`]
//! (some `hw_counters` files are write-only or return `EINVAL` on some firmware).
//!
//! On the live sysfs (`/sys`), the discard counters that drivers keep only in their ethtool
//! statistics (`rx_discards_phy` on mlx5) are read from each RDMA device's netdevs with
//! [`crate::ethtool`] and filed under the port the netdev is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Counters that count packets the NIC discarded before any capture could see
/// them: receive buffers exhausted (`out_of_buffer`), discards at the port
/// (`port_rcv_discards`), and the physical port's discards where a driver
/// exposes them here or in its ethtool statistics (`rx_discards_phy`, mlx5's).
pub const DISCARD_COUNTERS: [&str; 3] = ["out_of_buffer", "port_rcv_discards", "rx_discards_phy"];

/// The discard counters that rose in `delta`: ("mlx5_0 port 1 out_of_buffer", increase).
pub fn discards(delta: &CounterSnapshot) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (dev, ports) in &delta.devices {
        for (port, counters) in ports {
            for name in DISCARD_COUNTERS {
                if let Some(&n) = counters.get(name).filter(|&&n| n > 0) {
                    out.push((format!("{dev} port {port} {name}"), n));
                }
            }
        }
    }
    out
}

/// Counter name → value.
pub type PortCounters = BTreeMap<String, u64>;

/// One reading of every counter: device → port → counter name → value. Counters of
/// `counters/` and `hw_counters/` share one namespace (their names do not overlap on
/// mlx5; if they did, `hw_counters` wins).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSnapshot {
    /// Values by device, then port number (as named in sysfs), then counter.
    pub devices: BTreeMap<String, BTreeMap<String, PortCounters>>,
    /// Counter files that could not be read or parsed.
    #[serde(default)]
    pub unreadable: u64,
}

/// The RDMA devices behind `netdevs` under `sysfs_root`, sorted and deduplicated.
pub fn devices_for(sysfs_root: &Path, netdevs: &[String]) -> Vec<String> {
    let ib = sysfs_root.join("class/infiniband");
    let mut out = BTreeSet::new();
    for netdev in netdevs {
        // The capture interface may be the RDMA device itself.
        if crate::interfaces::is_rdma_device(sysfs_root, netdev) {
            out.insert(netdev.clone());
        }
        let via_net = sysfs_root
            .join("class/net")
            .join(netdev)
            .join("device/infiniband");
        out.extend(dir_names(&via_net));
    }
    for dev in dir_names(&ib) {
        let nets = dir_names(&ib.join(&dev).join("device/net"));
        if nets.iter().any(|n| netdevs.contains(n)) {
            out.insert(dev);
        }
    }
    out.into_iter().collect()
}

/// Reads every counter of every port of the RDMA devices behind `netdevs`.
pub fn snapshot(sysfs_root: &Path, netdevs: &[String]) -> CounterSnapshot {
    let mut snap = CounterSnapshot::default();
    for dev in devices_for(sysfs_root, netdevs) {
        let ports_dir = sysfs_root.join("class/infiniband").join(&dev).join("ports");
        let mut ports = BTreeMap::new();
        for port in dir_names(&ports_dir) {
            let mut counters = PortCounters::new();
            for group in ["counters", "hw_counters"] {
                let dir = ports_dir.join(&port).join(group);
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for e in entries.flatten() {
                    let Ok(ft) = e.file_type() else { continue };
                    if ft.is_dir() {
                        continue;
                    }
                    let name = e.file_name().to_string_lossy().into_owned();
                    match std::fs::read_to_string(e.path())
                        .ok()
                        .and_then(|t| t.trim().parse::<u64>().ok())
                    {
                        Some(v) => {
                            counters.insert(name, v);
                        }
                        None => snap.unreadable += 1,
                    }
                }
            }
            if !counters.is_empty() {
                ports.insert(port, counters);
            }
        }
        if sysfs_root == Path::new(LIVE_SYSFS) {
            ethtool_counters(sysfs_root, &dev, &DISCARD_COUNTERS, &mut ports);
        }
        snap.devices.insert(dev, ports);
    }
    snap
}

/// The sysfs of the running kernel: only there do the netdevs named in it answer the
/// ethtool ioctl (a fake tree's do not exist, or are other interfaces).
const LIVE_SYSFS: &str = "/sys";

/// The ethtool statistics in `names` of the netdevs of RDMA device `dev` (found under
/// `sysfs_root`, read from the running kernel), filed under the port each netdev is
/// (`dev_port` + 1). [`snapshot`] reads the discard counters that drivers keep only there
/// (mlx5's `rx_discards_phy`). A name sysfs already gave is not replaced.
pub fn ethtool_counters(
    sysfs_root: &Path,
    dev: &str,
    names: &[&str],
    ports: &mut BTreeMap<String, PortCounters>,
) {
    let nets = sysfs_root
        .join("class/infiniband")
        .join(dev)
        .join("device/net");
    for netdev in dir_names(&nets) {
        let Ok(found) = crate::ethtool::stats_named(&netdev, names) else {
            continue;
        };
        if found.is_empty() {
            continue;
        }
        let dev_port =
            std::fs::read_to_string(sysfs_root.join("class/net").join(&netdev).join("dev_port"))
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
                .unwrap_or(0);
        let counters = ports
            .entry(dev_port.saturating_add(1).to_string())
            .or_default();
        for (name, value) in found {
            counters.entry(name).or_insert(value);
        }
    }
}

/// `b - a` for every counter present in both (wrapping: a counter that wrapped or was
/// reset between the two readings gives its modular increase, never a panic). Counters
/// only in `b` are taken whole (they appeared, e.g. a port came up); counters only in `a`
/// are left out. `unreadable` is `b`'s.
pub fn delta(a: &CounterSnapshot, b: &CounterSnapshot) -> CounterSnapshot {
    let mut out = CounterSnapshot {
        devices: BTreeMap::new(),
        unreadable: b.unreadable,
    };
    for (dev, ports) in &b.devices {
        let mut dports = BTreeMap::new();
        for (port, counters) in ports {
            let before = a.devices.get(dev).and_then(|p| p.get(port));
            let d: PortCounters = counters
                .iter()
                .map(|(name, &v)| {
                    let old = before.and_then(|c| c.get(name)).copied().unwrap_or(0);
                    (name.clone(), v.wrapping_sub(old))
                })
                .collect();
            dports.insert(port.clone(), d);
        }
        out.devices.insert(dev.clone(), dports);
    }
    out
}

impl CounterSnapshot {
    /// Every non-zero counter as (`device/port/name`, value), for summaries.
    pub fn non_zero(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        self.devices.iter().flat_map(|(dev, ports)| {
            ports.iter().flat_map(move |(port, counters)| {
                counters
                    .iter()
                    .filter(|(_, &v)| v != 0)
                    .map(move |(name, &v)| (format!("{dev}/{port}/{name}"), v))
            })
        })
    }
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }

    /// mlx5_0 behind eth0 (linked from the netdev), mlx5_1 behind eth1 (linked only from
    /// the RDMA device), mlx5_2 behind nothing we capture.
    fn fake_tree(root: &Path) {
        write(
            root,
            "class/infiniband/mlx5_0/ports/1/counters/port_rcv_packets",
            "100\n",
        );
        write(
            root,
            "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence",
            "7\n",
        );
        write(
            root,
            "class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent",
            "garbage\n",
        );
        fs::create_dir_all(root.join("class/net/eth0/device/infiniband/mlx5_0")).expect("mkdir");
        write(
            root,
            "class/infiniband/mlx5_1/ports/1/hw_counters/rp_cnp_handled",
            "3",
        );
        fs::create_dir_all(root.join("class/infiniband/mlx5_1/device/net/eth1")).expect("mkdir");
        write(
            root,
            "class/infiniband/mlx5_2/ports/1/hw_counters/rp_cnp_handled",
            "9",
        );
    }

    #[test]
    fn snapshot_reads_the_devices_behind_the_netdevs_and_counts_bad_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        fake_tree(dir.path());
        let s = snapshot(dir.path(), &["eth0".into(), "eth1".into()]);
        assert_eq!(
            s.devices.keys().collect::<Vec<_>>(),
            vec!["mlx5_0", "mlx5_1"]
        );
        let p = &s.devices["mlx5_0"]["1"];
        assert_eq!(p["port_rcv_packets"], 100);
        assert_eq!(p["out_of_sequence"], 7);
        assert!(!p.contains_key("np_cnp_sent"));
        assert_eq!(s.unreadable, 1);
        assert_eq!(s.devices["mlx5_1"]["1"]["rp_cnp_handled"], 3);
        // The RDMA device named directly.
        let s = snapshot(dir.path(), &["mlx5_2".into()]);
        assert_eq!(s.devices.keys().collect::<Vec<_>>(), vec!["mlx5_2"]);
        // Nothing behind an unknown interface, and no panic on a missing root.
        assert!(snapshot(dir.path(), &["lo".into()]).devices.is_empty());
        assert!(snapshot(&dir.path().join("nope"), &["eth0".into()])
            .devices
            .is_empty());
    }

    #[test]
    fn delta_subtracts_and_wraps() {
        let dir = tempfile::tempdir().expect("tempdir");
        fake_tree(dir.path());
        let a = snapshot(dir.path(), &["eth0".into()]);
        write(
            dir.path(),
            "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence",
            "19",
        );
        write(
            dir.path(),
            "class/infiniband/mlx5_0/ports/1/hw_counters/packet_seq_err",
            "2",
        );
        let b = snapshot(dir.path(), &["eth0".into()]);
        let d = delta(&a, &b);
        let p = &d.devices["mlx5_0"]["1"];
        assert_eq!(p["out_of_sequence"], 12);
        assert_eq!(p["port_rcv_packets"], 0);
        assert_eq!(p["packet_seq_err"], 2, "a new counter counts whole");
        let names: Vec<String> = d.non_zero().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            vec!["mlx5_0/1/out_of_sequence", "mlx5_0/1/packet_seq_err"]
        );

        let mut hi = CounterSnapshot::default();
        hi.devices
            .entry("d".into())
            .or_default()
            .entry("1".into())
            .or_default()
            .insert("c".into(), u64::MAX - 1);
        let mut lo = hi.clone();
        lo.devices
            .get_mut("d")
            .and_then(|p| p.get_mut("1"))
            .expect("port")
            .insert("c".into(), 3);
        assert_eq!(delta(&hi, &lo).devices["d"]["1"]["c"], 5);
        let json = serde_json::to_string(&d).expect("json");
        let back: CounterSnapshot = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, d);
    }
}
