//! `tripcap interfaces`: what this machine can capture on, and what it can't.
//!
//! Lists libpcap's devices, then every RDMA device under `/sys/class/infiniband`
//! with the netdev behind it, saying whether this libpcap can open the RDMA
//! device itself (Debian's libpcap is built without RDMA sniffing) and what to
//! do when it can't.

use std::fmt::Write as _;
use std::path::Path;

/// One RDMA device and its netdevs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaDevice {
    /// `mlx5_0`.
    pub name: String,
    /// Netdevs behind it (`ens1f0np0`).
    pub netdevs: Vec<String>,
    /// Whether libpcap lists the RDMA device itself as capturable.
    pub pcap_can_open: bool,
}

/// RDMA devices under `sysfs_root/class/infiniband`, given libpcap's device names.
pub fn rdma_devices(sysfs_root: &Path, pcap_devices: &[String]) -> Vec<RdmaDevice> {
    let Ok(entries) = std::fs::read_dir(sysfs_root.join("class/infiniband")) else {
        return Vec::new();
    };
    let mut out: Vec<RdmaDevice> = entries
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let mut netdevs: Vec<String> = std::fs::read_dir(e.path().join("device/net"))
                .map(|d| {
                    d.flatten()
                        .map(|n| n.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            netdevs.sort();
            let pcap_can_open = pcap_devices.iter().any(|d| d == &name);
            RdmaDevice {
                name,
                netdevs,
                pcap_can_open,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The report `tripcap interfaces` prints.
pub fn report(sysfs_root: &Path) -> Result<String, pcap::Error> {
    let devices = pcap::Device::list()?;
    let names: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
    let mut out = String::from("Capture devices (libpcap):\n");
    for d in &devices {
        let up = if d.flags.is_up() { "up" } else { "down" };
        let desc = d.desc.clone().unwrap_or_default();
        let _ = writeln!(out, "  {:<20} {:<5} {}", d.name, up, desc);
    }
    let rdma = rdma_devices(sysfs_root, &names);
    if rdma.is_empty() {
        out.push_str("\nNo RDMA devices under /sys/class/infiniband.\n");
    } else {
        out.push_str("\nRDMA devices:\n");
        for r in &rdma {
            let netdevs = if r.netdevs.is_empty() {
                "(no netdev)".to_string()
            } else {
                r.netdevs.join(", ")
            };
            if r.pcap_can_open {
                let _ = writeln!(
                    out,
                    "  {:<12} netdev {netdevs}: capturable directly (`-i {}`, RDMA sniffer)",
                    r.name, r.name
                );
            } else {
                let _ = writeln!(
                    out,
                    "  {:<12} netdev {netdevs}: this libpcap cannot open it (built without rdma-core). Offloaded RoCE does not reach the netdev: \
                     use a libpcap built with rdma-core, enable the NIC's sniffer mode (mlx5: `ethtool --set-priv-flags {} sniffer on`), or mirror the port",
                    r.name,
                    r.netdevs.first().map_or("IFACE", String::as_str)
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_rdma_devices_to_netdevs_in_a_fake_sysfs() {
        let root = tempfile::tempdir().expect("tempdir");
        for (dev, net) in [("mlx5_0", "ens1f0np0"), ("mlx5_1", "ens2f0np0")] {
            std::fs::create_dir_all(
                root.path()
                    .join(format!("class/infiniband/{dev}/device/net/{net}")),
            )
            .expect("mkdir");
        }
        let found = rdma_devices(root.path(), &["mlx5_1".to_string(), "lo".to_string()]);
        assert_eq!(
            found,
            vec![
                RdmaDevice {
                    name: "mlx5_0".into(),
                    netdevs: vec!["ens1f0np0".into()],
                    pcap_can_open: false
                },
                RdmaDevice {
                    name: "mlx5_1".into(),
                    netdevs: vec!["ens2f0np0".into()],
                    pcap_can_open: true
                },
            ]
        );
    }
}
