//! Live capture with libpcap: one dedicated OS thread per interface.
//!
//! The handle is opened (and every error reported) on the caller's thread, so
//! a bad interface, filter or permission fails `tripcap run` before anything
//! starts. The thread then polls the socket with a short timeout, drains it
//! with `pcap_dispatch` in non-blocking mode (a quiet link still returns, so
//! watermarks keep rising), copies each packet into its own ring block, seals
//! the block when full or [`FLUSH_INTERVAL`] old, and reads the kernel's drop
//! counters every second (32-bit, wrapping: see [`WrappingCounter`]).

use std::os::unix::io::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pcap::{Active, Capture, Precision};

use super::{CaptureError, IfaceCounters, InterfaceInfo, TsPrecision, WrappingCounter};
use crate::capture_file::pcapng::InterfaceDesc;
use crate::clock::now_ns;
use crate::ring::{BlockWriter, Ring, WATERMARK_END};
use crate::tasks::Tasks;

/// libpcap read timeout (TPACKET_V3 block retire timeout), ms.
const READ_TIMEOUT_MS: i32 = 100;
/// A block with packets is sealed at least this often, so windows see them.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(200);
/// How far behind "now" the watermark stays: a packet can sit in a kernel
/// block for up to the read timeout before we can read it.
const WATERMARK_LAG_NS: i64 = 3 * READ_TIMEOUT_MS as i64 * 1_000_000;

/// The watermark rises in steps of at least this much capture time. Every
/// subscriber (windows, packet triggers, the baseline) wakes once per rise:
/// once per step, not once per dispatch batch (about 1,300 a second in a
/// 400 kpps flood). A window that waits for its end is told at most this late.
const WATERMARK_STEP_NS: i64 = 10_000_000;

extern "C" {
    fn pcap_get_tstamp_precision(p: *mut libc::c_void) -> libc::c_int;
}

/// What to capture on one interface.
#[derive(Debug, Clone)]
pub struct LiveSpec {
    /// Interface name.
    pub iface: String,
    /// BPF filter.
    pub filter: String,
    /// Snapshot length in bytes.
    pub snaplen: u32,
    /// Cut each packet where its headers end (`snaplen = "headers"`).
    pub headers_only: bool,
    /// Kernel buffer in bytes.
    pub buffer_size: u32,
    /// Promiscuous mode.
    pub promiscuous: bool,
    /// The interface is an RDMA device (`mlx5_0`): libpcap reads it with its
    /// RDMA sniffer.
    pub rdma_sniffer: bool,
}

/// The linked libpcap's version line (`pcap_lib_version`).
pub fn libpcap_version() -> String {
    extern "C" {
        fn pcap_lib_version() -> *const std::ffi::c_char;
    }
    // SAFETY: libpcap returns a pointer to a static NUL-terminated string.
    let p = unsafe { pcap_lib_version() };
    if p.is_null() {
        return "libpcap (version unknown)".to_string();
    }
    // SAFETY: non-null, NUL-terminated and static (see above).
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// An opened, filtered, non-blocking capture, ready for [`spawn`].
pub struct LiveCapture {
    cap: Capture<Active>,
    info: InterfaceInfo,
    headers_only: bool,
}

impl LiveCapture {
    /// What the ring and the files will say about this interface.
    pub fn info(&self) -> &InterfaceInfo {
        &self.info
    }
}

/// Open `spec`: activate, ask for nanosecond timestamps (and read back what
/// libpcap really gave), set the filter, switch to non-blocking.
pub fn open(spec: &LiveSpec) -> Result<LiveCapture, CaptureError> {
    let err = |e: pcap::Error| CaptureError::from_pcap(&spec.iface, &e);
    let inactive = Capture::from_device(spec.iface.as_str()).map_err(err)?;
    let cap = inactive
        .snaplen(i32::try_from(spec.snaplen).unwrap_or(i32::MAX))
        .buffer_size(i32::try_from(spec.buffer_size).unwrap_or(i32::MAX))
        .timeout(READ_TIMEOUT_MS)
        .promisc(spec.promiscuous)
        .precision(Precision::Nano)
        .open()
        .map_err(err)?;
    // SAFETY: the handle is live for the duration of the call.
    let precision = match unsafe { pcap_get_tstamp_precision(cap.as_ptr().cast()) } {
        1 => TsPrecision::Nano,
        _ => TsPrecision::Micro,
    };
    let mut cap = cap;
    cap.filter(&spec.filter, true)
        .map_err(|e| CaptureError::bad_filter(&spec.filter, &e))?;
    let cap = cap.setnonblock().map_err(err)?;
    let linktype = cap.get_datalink().0;
    let info = InterfaceInfo {
        desc: InterfaceDesc {
            name: spec.iface.clone(),
            description: if spec.headers_only {
                format!("live capture, tstamp precision {precision}, headers only")
            } else {
                format!("live capture, tstamp precision {precision}")
            },
            linktype: u16::try_from(linktype).unwrap_or(1),
            snaplen: spec.snaplen,
            filter: spec.filter.clone(),
        },
        precision,
        counters: Arc::new(IfaceCounters::default()),
        source: super::Source::Live {
            libpcap: libpcap_version(),
            rdma_sniffer: spec.rdma_sniffer,
        },
    };
    Ok(LiveCapture {
        cap,
        info,
        headers_only: spec.headers_only,
    })
}

/// Run the capture of interface `iface` (its index in the ring) on its own
/// thread, tracked by `tasks`, until they stop. On exit, the last block is
/// sealed and the interface's watermark set to the end, so open windows can
/// close.
pub fn spawn(
    capture: LiveCapture,
    iface: u16,
    ring: Arc<Ring>,
    tasks: &Tasks,
) -> std::io::Result<()> {
    let name = capture.info.desc.name.clone();
    let stop = tasks.stop_token().clone();
    tasks.thread(format!("capture-{name}"), move || {
        let LiveCapture {
            mut cap,
            info,
            headers_only,
        } = capture;
        let linktype = u32::from(info.desc.linktype);
        let counters = info.counters;
        let ts_scale: i64 = match info.precision {
            TsPrecision::Nano => 1,
            TsPrecision::Micro => 1000,
        };
        let fd = cap.as_raw_fd();
        let mut writer: Option<BlockWriter> = None;
        let mut opened_at = Instant::now();
        let mut last_stats = Instant::now();
        let mut drops = WrappingCounter::default();
        let mut if_drops = WrappingCounter::default();
        let mut mark_sent = i64::MIN;
        while !stop.is_cancelled() {
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd for the duration of the call.
            unsafe { libc::poll(&mut pfd, 1, READ_TIMEOUT_MS) };
            // Counted per dispatch batch, not per packet: one atomic add each.
            let (mut batch_packets, mut batch_bytes) = (0u64, 0u64);
            let result = cap.dispatch(None, |pkt| {
                let ts = super::timeval_ns(&pkt.header.ts, ts_scale);
                let data = if headers_only {
                    &pkt.data[..crate::wire::headers_len(linktype, pkt.data)]
                } else {
                    pkt.data
                };
                if !ring.append(&mut writer, iface, ts, pkt.header.len, data, None) {
                    ring.count_full_drop();
                    return;
                }
                if writer.as_ref().is_some_and(|w| w.packets() == 1) {
                    opened_at = Instant::now(); // a new block: its flush clock starts
                }
                batch_packets += 1;
                batch_bytes += data.len() as u64;
            });
            counters.packets.fetch_add(batch_packets, Ordering::Relaxed);
            counters.bytes.fetch_add(batch_bytes, Ordering::Relaxed);
            if let Err(e) = result {
                tracing::error!(interface = %name, error = %e, "capture stopped: libpcap read failed");
                counters.stop(now_ns(), e.to_string());
                break;
            }
            if writer.as_ref().is_some_and(|w| w.packets() > 0) && opened_at.elapsed() >= FLUSH_INTERVAL {
                if let Some(w) = writer.take() {
                    ring.seal(w);
                }
            }
            let sealed_up_to = match writer.as_ref().and_then(BlockWriter::first_ts) {
                Some(first) => first - 1, // the open block is not visible yet
                None => i64::MAX,
            };
            let mark = (now_ns() - WATERMARK_LAG_NS).min(sealed_up_to);
            if mark >= mark_sent.saturating_add(WATERMARK_STEP_NS) {
                ring.advance(iface, mark);
                mark_sent = mark;
            }
            if last_stats.elapsed() >= Duration::from_secs(1) {
                last_stats = Instant::now();
                if let Ok(s) = cap.stats() {
                    counters.kernel_drops.fetch_add(drops.delta(s.dropped), Ordering::Relaxed);
                    counters.if_drops.fetch_add(if_drops.delta(s.if_dropped), Ordering::Relaxed);
                }
            }
        }
        if let Some(w) = writer.take() {
            ring.seal(w);
        }
        if let Ok(s) = cap.stats() {
            counters.kernel_drops.fetch_add(drops.delta(s.dropped), Ordering::Relaxed);
            counters.if_drops.fetch_add(if_drops.delta(s.if_dropped), Ordering::Relaxed);
        }
        ring.advance(iface, WATERMARK_END);
    })
}
