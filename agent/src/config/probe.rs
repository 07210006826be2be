//! The checks of `tripcap check` that look at this machine: libpcap compiles
//! the filter, the interfaces exist, `[upload]` can be used, the ring fits in
//! the memory available. Problems that would stop the agent are errors; those
//! that may be fine where the agent runs are notes.

use super::{Config, Error, ErrorKind};
use crate::capture;

impl Config {
    /// Check everything that can be checked without capturing: triggers, the
    /// BPF filter, `[upload]`, the interfaces, the log globs, the memory.
    /// Returns notes: what may be wrong, one line each.
    pub fn check(&self) -> Result<Vec<String>, Error> {
        let set = self.trigger_set()?;
        capture::check_filter(&self.capture.filter, self.capture.snaplen).map_err(|e| {
            Error::from(ErrorKind::Filter {
                at: self.filter_origin.clone(),
                message: e.to_string(),
            })
        })?;
        let mut notes = Vec::new();
        if let Some(h) = &self.host {
            if !super::validate::valid_host(h) {
                return Err(ErrorKind::Invalid {
                    at: Some(super::Location::Flag("--host")),
                    what: format!("host {h:?} cannot name files and incidents"),
                    fix: "use 1 to 64 letters, digits, `.`, `-` and `_`".into(),
                }
                .into());
            }
        }
        self.fleet_job()?;
        if let Some(note) = self.upload_note()? {
            notes.push(note);
        }
        self.check_rdma_devices(crate::interfaces::rdma_sniffing())?;
        notes.extend(self.interface_notes());
        self.check_log_globs()?;
        if set.is_empty() {
            notes
                .push("no trigger configured: captures happen only on manual triggers".to_string());
        }
        if self.capture.snaplen < 96 {
            notes.push(format!(
                "snaplen {} may cut RoCE headers behind VLAN/IPv6: 128 is safe",
                self.capture.snaplen
            ));
        }
        let available = available_memory();
        if let Some(note) = available.and_then(|a| self.memory_note(a)) {
            notes.push(note);
        }
        Ok(notes)
    }

    /// `[upload]` checked; a variable unset here is a note, not an error:
    /// the agent's environment may differ from the one `check` runs in.
    fn upload_note(&self) -> Result<Option<String>, Error> {
        let Some(upload) = &self.upload else {
            return Ok(None);
        };
        match crate::deliver::check_upload(upload) {
            Ok(()) => Ok(None),
            Err(e @ crate::deliver::UploadError::UnsetEnv(_)) => {
                Ok(Some(format!("{e} (needed when the agent runs)")))
            }
            Err(e) => Err(ErrorKind::Upload {
                message: e.to_string(),
            }
            .into()),
        }
    }

    /// Notes on the interfaces: none configured, or not on this machine
    /// (a note, not an error: a config is often checked on another machine).
    fn interface_notes(&self) -> Vec<String> {
        if self.capture.interfaces.is_empty() {
            return vec![
                "no interface configured: set `capture.interfaces` or pass `-i IFACE`".to_string(),
            ];
        }
        let Ok(devices) = pcap::Device::list() else {
            return Vec::new();
        };
        self.capture
            .interfaces
            .iter()
            .filter(|iface| !devices.iter().any(|d| &d.name == *iface))
            .map(|iface| format!(
                "interface `{iface}` is not on this machine (`tripcap interfaces` lists those that are)"
            ))
            .collect()
    }

    /// An RDMA device (`mlx5_0`) among the interfaces needs a libpcap that can
    /// sniff RDMA devices (`sniffing`: this build's); without one it is an error
    /// that names the build script, since offloaded RoCE never reaches the netdev.
    pub fn check_rdma_devices(&self, sniffing: bool) -> Result<(), Error> {
        if sniffing {
            return Ok(());
        }
        let root = &self.output.sysfs_root;
        match self
            .capture
            .interfaces
            .iter()
            .position(|i| crate::interfaces::is_rdma_device(root, i))
        {
            Some(i) => Err(ErrorKind::Invalid {
                at: self.interface_origins.get(i).cloned(),
                what: format!(
                    "interface `{}` is an RDMA device, and the libpcap in this build cannot capture RDMA devices",
                    self.capture.interfaces[i]
                ),
                fix: format!(
                    "build tripcap with {} (a libpcap with rdma-core's sniffer), or capture the netdev behind it in the NIC's sniffer mode or on a mirror port (`tripcap interfaces` shows both)",
                    crate::interfaces::RDMA_BUILD_SCRIPT
                ),
            }
            .into()),
            None => Ok(()),
        }
    }

    /// Every log path (but `-`, stdin) is a valid glob.
    fn check_log_globs(&self) -> Result<(), Error> {
        for p in self.logs.paths.iter().filter(|p| *p != "-") {
            glob::Pattern::new(p).map_err(|e| {
                Error::from(ErrorKind::Glob {
                    pattern: p.clone(),
                    message: e.to_string(),
                })
            })?;
        }
        Ok(())
    }

    /// A note when the ring and the kernel capture buffers need more memory
    /// than `available` bytes: the kernel would kill the agent, and every
    /// packet it holds, before the ring is full.
    pub fn memory_note(&self, available: u64) -> Option<String> {
        let interfaces = self.capture.interfaces.len().max(1) as u64;
        let buffers = u64::from(self.capture.buffer_size).saturating_mul(interfaces);
        let needed = self.ring.memory_limit.saturating_add(buffers);
        (needed > available).then(|| {
            format!(
                "ring.memory_limit ({} MiB) and the kernel capture buffers ({interfaces} × {} MiB) need {} MiB, but this machine has {} MiB available: lower ring.memory_limit (or capture.buffer_size), or the kernel may kill tripcap and every packet it holds",
                self.ring.memory_limit >> 20,
                self.capture.buffer_size >> 20,
                needed >> 20,
                available >> 20
            )
        })
    }
}

/// Ring bytes per packet measured by `scripts/bench-history.sh` on realistic RoCE
/// traffic (64 queue pairs, 256 KiB blocks; BENCHMARKS.md): raw at `snaplen =
/// "headers"`, and packed.
const RAW_HEADERS_BYTES: f64 = 92.0;
const PACKED_HEADERS_BYTES: f64 = 8.1;

impl Config {
    /// About how many seconds of traffic each GiB of ring holds at
    /// `ring.expected_rate`, and the bytes per packet that assumes: from
    /// figures measured on generated RoCE traffic (payload bytes past the
    /// headers are taken as incompressible). `/status` shows the real figures.
    pub fn seconds_per_gib(&self) -> (f64, f64) {
        let raw = if self.capture.headers_only {
            RAW_HEADERS_BYTES
        } else {
            // EPB framing plus what the snaplen keeps of 4096-MTU segments and
            // short ACKs (148 bytes a packet measured at 128).
            32.0 + 0.9 * f64::from(self.capture.snaplen.min(4096))
        };
        let per_packet = if self.ring.compress {
            PACKED_HEADERS_BYTES + (raw - RAW_HEADERS_BYTES).max(0.0)
        } else {
            raw
        };
        let rate = self.ring.expected_rate.max(1) as f64;
        ((1u64 << 30) as f64 / per_packet / rate, per_packet)
    }

    /// `tripcap check`'s line on how far back the ring reaches.
    pub fn history_line(&self) -> String {
        let (per_gib, per_packet) = self.seconds_per_gib();
        let gib = self.ring.memory_limit as f64 / (1u64 << 30) as f64;
        format!(
            "history: about {:.1} s per GiB, {:.1} s in this ring ({} MiB), at ring.expected_rate = {} packets/s and about {:.0} bytes a packet (snaplen {}, {}); /status shows the real figures",
            per_gib,
            per_gib * gib,
            self.ring.memory_limit >> 20,
            self.ring.expected_rate,
            per_packet,
            self.capture.snaplen_text(),
            if self.ring.compress { "compressed" } else { "not compressed" },
        )
    }
}

/// This machine's `MemAvailable`, in bytes, when `/proc/meminfo` says.
pub fn available_memory() -> Option<u64> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_available(&t))
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let n: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}
