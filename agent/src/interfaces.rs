//! `tripcap interfaces`: what this machine can capture on, and what it can't.
//!
//! Says first whether the libpcap linked into this binary can sniff RDMA
//! devices (Debian's and Ubuntu's cannot: `scripts/build-rdma.sh` builds one
//! that can), then lists libpcap's devices, then every RDMA device under
//! `/sys/class/infiniband` with its ports (state, link layer: Ethernet is
//! RoCE) and the netdev behind it, saying whether this build can open the RDMA
//! device itself and what to do when it can't.

use std::fmt::Write as _;
use std::path::Path;

/// The script that builds tripcap with an RDMA-capable libpcap.
pub const RDMA_BUILD_SCRIPT: &str = "scripts/build-rdma.sh";

/// Whether the libpcap linked into this process can capture RDMA devices.
///
/// Decided at run time: libpcap's RDMA sniffer (`pcap-rdmasniff.c`) is built
/// only against rdma-core and is the only part of tripcap that uses
/// libibverbs, so the verbs entry point it calls is resolvable in this process
/// exactly when the linked libpcap (static or shared) has the sniffer.
pub fn rdma_sniffing() -> bool {
    // SAFETY: a lookup by a NUL-terminated name in the process's global scope.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"ibv_get_device_list".as_ptr()) };
    !sym.is_null()
}

/// The line `tripcap interfaces` and `tripcap check` print about RDMA sniffing.
pub fn sniffing_line(available: bool) -> String {
    if available {
        "RDMA sniffing: available in this build".to_string()
    } else {
        format!("RDMA sniffing: not in this build ({RDMA_BUILD_SCRIPT})")
    }
}

/// One port of an RDMA device, from sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaPort {
    /// Port number (1-based).
    pub number: u32,
    /// `ACTIVE`, `DOWN`, … (`ports/N/state` without its number).
    pub state: String,
    /// `Ethernet` (RoCE) or `InfiniBand`.
    pub link_layer: String,
}

/// One RDMA device and its netdevs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaDevice {
    /// `mlx5_0`.
    pub name: String,
    /// Netdevs behind it (`ens1f0np0`).
    pub netdevs: Vec<String>,
    /// Its ports.
    pub ports: Vec<RdmaPort>,
    /// Whether libpcap lists the RDMA device itself as capturable.
    pub pcap_can_open: bool,
}

/// Whether `name` is an RDMA device under `sysfs_root/class/infiniband`.
pub fn is_rdma_device(sysfs_root: &Path, name: &str) -> bool {
    !name.is_empty()
        && !name.contains('/')
        && sysfs_root.join("class/infiniband").join(name).is_dir()
}

fn ports(dev: &Path) -> Vec<RdmaPort> {
    let read = |p: std::path::PathBuf| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut out: Vec<RdmaPort> = std::fs::read_dir(dev.join("ports"))
        .map(|d| {
            d.flatten()
                .filter_map(|p| {
                    let number = p.file_name().to_str()?.parse().ok()?;
                    let state = read(p.path().join("state"));
                    let state = state
                        .split_once(": ")
                        .map_or(state.clone(), |(_, s)| s.to_string());
                    Some(RdmaPort {
                        number,
                        state,
                        link_layer: read(p.path().join("link_layer")),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by_key(|p| p.number);
    out
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
                ports: ports(&e.path()),
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
    let mut out = format!(
        "{}\n\nCapture devices (libpcap):\n",
        sniffing_line(rdma_sniffing())
    );
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
            describe_rdma(&mut out, r);
        }
    }
    Ok(out)
}

/// One RDMA device: its ports, its netdev, and how to capture its RoCE traffic.
fn describe_rdma(out: &mut String, r: &RdmaDevice) {
    let netdevs = if r.netdevs.is_empty() {
        "(no netdev)".to_string()
    } else {
        r.netdevs.join(", ")
    };
    let ports: Vec<String> = r
        .ports
        .iter()
        .map(|p| {
            let kind = match p.link_layer.as_str() {
                "Ethernet" => "Ethernet (RoCE)",
                "" => "link layer unknown",
                other => other,
            };
            format!(
                "port {} {} {kind}",
                p.number,
                if p.state.is_empty() {
                    "state unknown"
                } else {
                    &p.state
                }
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "  {:<12} {}; netdev {netdevs}",
        r.name,
        ports.join("; ")
    );
    let netdev = r.netdevs.first().map_or("IFACE", String::as_str);
    if r.pcap_can_open {
        let _ = writeln!(
            out,
            "  {:<12} capturable directly: `-i {}` (RDMA sniffer)",
            "", r.name
        );
    } else {
        let _ = writeln!(
            out,
            "  {:<12} not capturable by this build: offloaded RoCE does not reach the netdev. Build with {RDMA_BUILD_SCRIPT} \
             and capture `-i {}`, or enable the NIC's sniffer mode (mlx5: `ethtool --set-priv-flags {netdev} sniffer on`) \
             and capture `-i {netdev}`, or mirror the port",
            "", r.name
        );
    }
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
        let port = root.path().join("class/infiniband/mlx5_0/ports/1");
        std::fs::create_dir_all(&port).expect("mkdir");
        std::fs::write(port.join("state"), "4: ACTIVE\n").expect("state");
        std::fs::write(port.join("link_layer"), "Ethernet\n").expect("link layer");
        let found = rdma_devices(root.path(), &["mlx5_1".to_string(), "lo".to_string()]);
        assert_eq!(
            found,
            vec![
                RdmaDevice {
                    name: "mlx5_0".into(),
                    netdevs: vec!["ens1f0np0".into()],
                    ports: vec![RdmaPort {
                        number: 1,
                        state: "ACTIVE".into(),
                        link_layer: "Ethernet".into()
                    }],
                    pcap_can_open: false
                },
                RdmaDevice {
                    name: "mlx5_1".into(),
                    netdevs: vec!["ens2f0np0".into()],
                    ports: Vec::new(),
                    pcap_can_open: true
                },
            ]
        );
        let mut text = String::new();
        describe_rdma(&mut text, &found[0]);
        assert!(
            text.contains("mlx5_0       port 1 ACTIVE Ethernet (RoCE); netdev ens1f0np0"),
            "{text}"
        );
        assert!(
            text.contains("Build with scripts/build-rdma.sh and capture `-i mlx5_0`"),
            "{text}"
        );
        assert!(is_rdma_device(root.path(), "mlx5_1") && !is_rdma_device(root.path(), "lo"));
    }

    #[test]
    fn the_sniffing_line_names_the_build_script() {
        assert_eq!(
            sniffing_line(true),
            "RDMA sniffing: available in this build"
        );
        assert_eq!(
            sniffing_line(false),
            "RDMA sniffing: not in this build (scripts/build-rdma.sh)"
        );
    }
}
