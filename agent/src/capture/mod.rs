//! Capture: where packets enter tripcap, live from libpcap ([`live`]) or from a
//! saved file ([`replay`]). Either way a dedicated OS thread per source copies
//! packets into ring blocks and raises the interface's watermark; neither ever
//! waits for disk.

pub mod live;
pub mod replay;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::capture_file::pcapng::InterfaceDesc;

/// Default BPF filter: RoCE v2, RoCE v1, PFC/pause, ARP.
pub const DEFAULT_FILTER: &str = "udp port 4791 or ether proto 0x8915 or ether proto 0x8808 or arp";

/// Timestamp precision libpcap actually delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsPrecision {
    /// Microseconds (the nanosecond request was not honoured).
    Micro,
    /// Nanoseconds.
    Nano,
}

impl fmt::Display for TsPrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TsPrecision::Micro => "micro",
            TsPrecision::Nano => "nano",
        })
    }
}

/// Per-interface counters (monotonic, 64-bit even though libpcap's are 32-bit).
#[derive(Debug, Default)]
pub struct IfaceCounters {
    /// Packets copied into the ring.
    pub packets: AtomicU64,
    /// Captured bytes copied into the ring.
    pub bytes: AtomicU64,
    /// Packets the kernel dropped (socket buffer full).
    pub kernel_drops: AtomicU64,
    /// Packets the interface/driver dropped.
    pub if_drops: AtomicU64,
    /// Why and when (ns) capturing on this interface stopped early (it vanished,
    /// went down, libpcap failed); `None` while it runs.
    pub stopped: std::sync::Mutex<Option<(i64, String)>>,
}

impl IfaceCounters {
    /// Record that capturing stopped early at `at` (ns) because of `why`.
    pub fn stop(&self, at: i64, why: String) {
        if let Ok(mut s) = self.stopped.lock() {
            s.get_or_insert((at, why));
        }
    }

    /// When and why capturing stopped early, if it did.
    pub fn stopped(&self) -> Option<(i64, String)> {
        self.stopped.lock().ok().and_then(|s| s.clone())
    }

    /// `[kernel_drops, if_drops]` now.
    pub fn drops(&self) -> [u64; 2] {
        [
            self.kernel_drops.load(Ordering::Relaxed),
            self.if_drops.load(Ordering::Relaxed),
        ]
    }
}

/// A captured interface, as the ring and the capture files know it.
#[derive(Debug, Clone)]
pub struct InterfaceInfo {
    /// What goes into the pcapng interface block.
    pub desc: InterfaceDesc,
    /// Precision of its timestamps.
    pub precision: TsPrecision,
    /// Its counters.
    pub counters: Arc<IfaceCounters>,
    /// Where its packets come from.
    pub source: Source,
}

/// Where an interface's packets come from, as the sidecar records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Live, through this libpcap (its `pcap_lib_version`); `rdma_sniffer`
    /// when the interface is an RDMA device read by libpcap's RDMA sniffer,
    /// which counts none of its own drops.
    Live {
        /// `libpcap version 1.10.3 (…)`.
        libpcap: String,
        /// Read by libpcap's RDMA sniffer.
        rdma_sniffer: bool,
    },
    /// Replayed from a file.
    File,
}

/// Accumulates libpcap's wrapping 32-bit counters into 64-bit totals.
#[derive(Debug, Default, Clone, Copy)]
pub struct WrappingCounter {
    last: Option<u32>,
}

impl WrappingCounter {
    /// The increase since the previous reading (the first reading counts in full).
    pub fn delta(&mut self, now: u32) -> u64 {
        let d = match self.last {
            Some(prev) => now.wrapping_sub(prev),
            None => now,
        };
        self.last = Some(now);
        u64::from(d)
    }
}

/// Errors opening a capture source. Each message says what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// No such interface.
    #[error("interface `{0}` does not exist: `tripcap interfaces` lists the ones this machine can capture on")]
    NoSuchDevice(String),
    /// An RDMA device this libpcap cannot open.
    #[error("`{0}` is an RDMA device and this libpcap was built without RDMA sniffing: capture on its netdev (see `tripcap interfaces`) or use a libpcap built with rdma-core")]
    RdmaDevice(String),
    /// Interface is down.
    #[error("interface `{0}` is down: bring it up with `ip link set {0} up`")]
    Down(String),
    /// Not permitted.
    #[error("no permission to capture on `{0}`: run tripcap as root or give it CAP_NET_RAW (`setcap cap_net_raw,cap_net_admin+ep $(command -v tripcap)`)")]
    Permission(String),
    /// The BPF filter does not compile.
    #[error("bad capture filter `{filter}`: {message} (syntax: `man pcap-filter`)")]
    BadFilter {
        /// The filter text.
        filter: String,
        /// libpcap's message.
        message: String,
    },
    /// A file to replay could not be opened or read.
    #[error("cannot replay `{path}`: {message}")]
    Replay {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// Anything else libpcap said.
    #[error("cannot capture on `{iface}`: {message}")]
    Other {
        /// Interface.
        iface: String,
        /// libpcap's message.
        message: String,
    },
}

impl CaptureError {
    /// A filter libpcap refused, without libpcap's boilerplate prefixes.
    pub fn bad_filter(filter: &str, err: &pcap::Error) -> CaptureError {
        let text = err.to_string();
        let message = text
            .trim_start_matches("libpcap error: ")
            .trim_start_matches("can't parse filter expression: ")
            .to_string();
        CaptureError::BadFilter {
            filter: filter.to_string(),
            message,
        }
    }

    /// Map libpcap's activation text for `iface` to an error that names the fix.
    pub fn from_pcap(iface: &str, err: &pcap::Error) -> CaptureError {
        let text = err.to_string();
        let lower = text.to_ascii_lowercase();
        if lower.contains("no such device") {
            if iface.starts_with("mlx")
                || std::path::Path::new("/sys/class/infiniband")
                    .join(iface)
                    .exists()
            {
                CaptureError::RdmaDevice(iface.to_string())
            } else {
                CaptureError::NoSuchDevice(iface.to_string())
            }
        } else if lower.contains("not up") {
            CaptureError::Down(iface.to_string())
        } else if lower.contains("operation not permitted") || lower.contains("permission denied") {
            CaptureError::Permission(iface.to_string())
        } else {
            CaptureError::Other {
                iface: iface.to_string(),
                message: text,
            }
        }
    }
}

/// Check that `filter` compiles for Ethernet, without capturing (works unprivileged).
pub fn check_filter(filter: &str, snaplen: u32) -> Result<(), CaptureError> {
    let dead = pcap::Capture::dead(pcap::Linktype::ETHERNET).map_err(|e| CaptureError::Other {
        iface: "(filter check)".into(),
        message: e.to_string(),
    })?;
    let _ = snaplen;
    dead.compile(filter, true)
        .map(|_| ())
        .map_err(|e| CaptureError::bad_filter(filter, &e))
}

/// A libpcap timestamp in ns; `scale` is 1 when libpcap gives nanoseconds in
/// `tv_usec`, 1000 when it gives microseconds.
#[inline]
#[allow(clippy::unnecessary_cast)] // time_t and suseconds_t are i32 on some targets
pub fn timeval_ns(tv: &libc::timeval, scale: i64) -> i64 {
    (tv.tv_sec as i64)
        .saturating_mul(1_000_000_000)
        .saturating_add((tv.tv_usec as i64).saturating_mul(scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_counter_survives_the_32_bit_wrap() {
        let mut c = WrappingCounter::default();
        assert_eq!(c.delta(10), 10);
        assert_eq!(c.delta(u32::MAX - 5), u64::from(u32::MAX - 15));
        assert_eq!(c.delta(4), 10, "wrapped: 5 up to MAX, then 0..=4");
    }

    #[test]
    fn filter_check_names_the_problem() {
        assert!(check_filter(DEFAULT_FILTER, 128).is_ok());
        let err = check_filter("udp port 4791 and bogus", 128)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("bad capture filter `udp port 4791 and bogus`:"),
            "{err}"
        );
        assert!(err.contains("man pcap-filter"), "{err}");
    }
}
