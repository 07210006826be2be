//! Whole-capture statistics: the throughput timeline, the packet-size histogram and the
//! path MTU it implies, and PFC / 802.3x pause frames per priority.
//!
//! All three are fixed-size or grow by amortized doubling; nothing is allocated per
//! packet. The timeline starts at 1 ms bins and coarsens by 10× (merging bins in place)
//! when the capture outgrows [`MAX_FINE_BINS`] bins, up to 100 ms bins, so the bin width
//! is chosen by the capture's length in one pass: up to 10 s → 1 ms, up to 100 s → 10 ms,
//! longer → 100 ms.

use serde::Serialize;

use crate::wire::pfc;
use crate::wire::Roce;

/// The payload of a RoCE packet on the wire: its original length minus
/// everything before the payload, the pad and the ICRC (right even when the
/// snaplen cut the frame). `data` is the captured frame `r` was parsed from.
#[inline]
pub fn roce_payload_len(data: &[u8], orig_len: u32, r: &Roce<'_>) -> u32 {
    let tdata = r.transport.bth().into_inner();
    let headers = tdata.len() - r.transport.payload().len();
    let before = (tdata.as_ptr() as usize).saturating_sub(data.as_ptr() as usize);
    let payload = (orig_len as usize)
        .saturating_sub(before + headers + usize::from(r.transport.bth().pad()) + 4);
    u32::try_from(payload).unwrap_or(u32::MAX)
}

/// Bins kept before the timeline coarsens (1 ms → 10 ms → 100 ms).
pub const MAX_FINE_BINS: usize = 10_000;
const COARSEST_BIN_NS: i64 = 100_000_000;

/// Packets and bytes per time bin, from the first packet on.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    /// Bin width in milliseconds (1, 10 or 100).
    pub bin_ms: u32,
    /// Start of the first bin, ns since the epoch (the first packet).
    pub start_ns: i64,
    /// Packets per bin.
    pub packets: Vec<u64>,
    /// Wire bytes per bin.
    pub bytes: Vec<u64>,
    #[serde(skip)]
    bin_ns: i64,
    #[serde(skip)]
    started: bool,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline {
            bin_ms: 1,
            start_ns: 0,
            packets: Vec::new(),
            bytes: Vec::new(),
            bin_ns: 1_000_000,
            started: false,
        }
    }
}

impl Timeline {
    /// Counts a packet of `bytes` wire bytes at `ts`. Packets before the first one (an
    /// interface merged out of order) count in the first bin.
    pub fn add(&mut self, ts: i64, bytes: u64) {
        if !self.started {
            self.started = true;
            self.start_ns = ts;
        }
        let mut i = (ts.saturating_sub(self.start_ns).max(0) / self.bin_ns) as usize;
        while i >= MAX_FINE_BINS && self.bin_ns < COARSEST_BIN_NS {
            self.coarsen();
            i = (ts.saturating_sub(self.start_ns).max(0) / self.bin_ns) as usize;
        }
        if i >= self.packets.len() {
            self.packets.resize(i + 1, 0);
            self.bytes.resize(i + 1, 0);
        }
        self.packets[i] += 1;
        self.bytes[i] += bytes;
    }

    fn coarsen(&mut self) {
        let merge = |v: &mut Vec<u64>| {
            let merged: Vec<u64> = v.chunks(10).map(|c| c.iter().sum()).collect();
            *v = merged;
        };
        merge(&mut self.packets);
        merge(&mut self.bytes);
        self.bin_ns *= 10;
        self.bin_ms *= 10;
    }

    /// Bin width in ns.
    pub fn bin_ns(&self) -> i64 {
        self.bin_ns
    }

    /// Throughput of bin `i` in Gbit/s.
    pub fn gbps(&self, i: usize) -> f64 {
        self.bytes.get(i).copied().unwrap_or(0) as f64 * 8.0 / self.bin_ns as f64
    }

    /// The busiest bin's throughput in Gbit/s.
    pub fn peak_gbps(&self) -> f64 {
        (0..self.bytes.len())
            .map(|i| self.gbps(i))
            .fold(0.0, f64::max)
    }
}

/// Upper bounds (inclusive, frame bytes on the wire) of the size histogram's buckets; the
/// last bucket takes everything larger.
pub const SIZE_BUCKETS: [u32; 9] = [64, 128, 256, 512, 1024, 1518, 2048, 4096, 9216];
/// InfiniBand path MTUs (payload bytes).
pub const IB_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// Frame sizes, and the IB path MTU they imply.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sizes {
    /// Packets per bucket of [`SIZE_BUCKETS`] (one more for larger frames).
    pub buckets: Vec<SizeBucket>,
    /// Largest frame on the wire (bytes), all frames.
    pub max_frame: u32,
    /// Largest RoCE payload of a First/Middle packet of a multi-packet message: exactly the
    /// path MTU the sender uses.
    pub max_segment_payload: u32,
    /// Largest RoCE payload of any packet.
    pub max_payload: u32,
    /// The path MTU those imply (256…4096), if any data was sent.
    pub implied_mtu: Option<u32>,
    /// `segments` (from First/Middle packets: exact) or `largest_payload` (a lower bound).
    pub mtu_basis: Option<&'static str>,
    #[serde(skip)]
    counts: [u64; SIZE_BUCKETS.len() + 1],
}

/// One bucket of the size histogram.
#[derive(Debug, Clone, Serialize)]
pub struct SizeBucket {
    /// Largest frame size in the bucket (`null`: no bound).
    pub le: Option<u32>,
    /// Packets.
    pub packets: u64,
}

impl Sizes {
    /// Counts a frame of `len` wire bytes.
    #[inline]
    pub fn add_frame(&mut self, len: u32) {
        let i = SIZE_BUCKETS.partition_point(|&b| b < len);
        self.counts[i] += 1;
        self.max_frame = self.max_frame.max(len);
    }

    /// Notes a RoCE payload length; `segment` for First/Middle packets.
    #[inline]
    pub fn add_payload(&mut self, payload: u32, segment: bool) {
        self.max_payload = self.max_payload.max(payload);
        if segment {
            self.max_segment_payload = self.max_segment_payload.max(payload);
        }
    }

    /// Fills the serialized fields.
    pub fn finish(&mut self) {
        self.buckets = SIZE_BUCKETS
            .iter()
            .map(|&b| Some(b))
            .chain(std::iter::once(None))
            .zip(self.counts)
            .map(|(le, packets)| SizeBucket { le, packets })
            .collect();
        let mtu_at_most = |p: u32| IB_MTUS.iter().rev().copied().find(|&m| m <= p);
        if self.max_segment_payload > 0 {
            self.implied_mtu = mtu_at_most(self.max_segment_payload);
            self.mtu_basis = Some("segments");
        } else if self.max_payload > 0 {
            self.implied_mtu = mtu_at_most(self.max_payload).or(Some(IB_MTUS[0]));
            self.mtu_basis = Some("largest_payload");
        }
    }
}

/// Pause frames of one priority (or of 802.3x PAUSE).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PauseCounts {
    /// Frames with non-zero quanta (XOFF).
    pub xoff: u64,
    /// Frames with zero quanta (XON).
    pub xon: u64,
    /// Sum of the quanta (1 quantum = 512 bit times: 5.12 ns at 100 Gbit/s).
    pub quanta: u64,
    /// First XOFF, ns since the epoch.
    pub first_xoff_ns: Option<i64>,
}

/// Pause frames remembered for the time paused (`throughput`); later ones are counted in
/// [`Pauses::frames_dropped`].
pub const MAX_PAUSE_FRAMES: usize = 100_000;

/// One priority's pause request: XOFF for `quanta`, or XON (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseFrame {
    /// When, ns since the epoch.
    pub ts: i64,
    /// Priority 0–7, or 8 for 802.3x PAUSE.
    pub slot: u8,
    /// Pause quanta (0: XON).
    pub quanta: u16,
}

/// The priorities RoCE packets travel on: by VLAN PCP when tagged, else by
/// their DSCP (which a NIC and switch in "trust DSCP" mode map to a priority).
#[derive(Debug, Clone)]
pub struct RocePriorities {
    /// Tagged RoCE packets per PCP.
    pub pcp: [u64; 8],
    /// Untagged RoCE packets per DSCP.
    pub dscp: [u64; 64],
}

impl Default for RocePriorities {
    fn default() -> RocePriorities {
        RocePriorities {
            pcp: [0; 8],
            dscp: [0; 64],
        }
    }
}

impl RocePriorities {
    /// Counts one RoCE packet.
    #[inline]
    pub fn add(&mut self, r: &crate::wire::Roce<'_>) {
        match (&r.vlan, r.dscp) {
            (Some(v), _) => self.pcp[usize::from(v.pcp & 7)] += 1,
            (None, Some(d)) => self.dscp[usize::from(d & 63)] += 1,
            (None, None) => {}
        }
    }
}

/// PFC (802.1Qbb) per priority and 802.3x PAUSE.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pauses {
    /// Per priority 0–7.
    pub pfc: [PauseCounts; 8],
    /// 802.3x PAUSE (all priorities).
    pub pause_8023x: PauseCounts,
    /// Every priority's pause request in capture order, at most [`MAX_PAUSE_FRAMES`].
    #[serde(skip)]
    pub frames: Vec<PauseFrame>,
    /// Pause requests not kept in `frames`.
    #[serde(skip)]
    pub frames_dropped: u64,
}

impl Pauses {
    /// Counts one MAC Control frame; returns the priorities it paused (bit mask).
    pub fn add(&mut self, ts: i64, p: &pfc::Packet<&[u8]>) -> u8 {
        let frames = &mut self.frames;
        let dropped = &mut self.frames_dropped;
        let mut remember = |slot: u8, quanta: u16| {
            if frames.len() < MAX_PAUSE_FRAMES {
                frames.push(PauseFrame { ts, slot, quanta });
            } else {
                *dropped += 1;
            }
        };
        let count = |c: &mut PauseCounts, q: u16| {
            if q == 0 {
                c.xon += 1;
            } else {
                c.xoff += 1;
                c.quanta += u64::from(q);
                c.first_xoff_ns.get_or_insert(ts);
            }
        };
        match p.opcode() {
            pfc::Opcode::Pfc => {
                let cev = p.class_enable_vector();
                for prio in 0..8u8 {
                    if cev & (1 << prio) != 0 {
                        count(&mut self.pfc[usize::from(prio)], p.quanta(prio));
                        remember(prio, p.quanta(prio));
                    }
                }
            }
            pfc::Opcode::Pause => {
                count(&mut self.pause_8023x, p.pause_time());
                remember(8, p.pause_time());
            }
            pfc::Opcode::Unknown(_) => {}
        }
        p.paused_mask()
    }

    /// XOFF frames over all priorities and PAUSE.
    pub fn xoff_total(&self) -> u64 {
        self.pfc.iter().map(|c| c.xoff).sum::<u64>() + self.pause_8023x.xoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_coarsens_with_length() {
        let mut t = Timeline::default();
        t.add(1_000, 100);
        t.add(1_000 + 5_000_000, 50);
        assert_eq!(t.bin_ms, 1);
        assert_eq!(t.packets.len(), 6);
        t.add(1_000 + 20_000_000_000, 10); // 20 s: 10 ms bins
        assert_eq!(t.bin_ms, 10);
        assert_eq!(t.packets[0], 2);
        assert_eq!(t.bytes[0], 150);
        assert_eq!(t.packets.len(), 2001);
        t.add(1_000 + 500_000_000_000, 1); // 500 s: 100 ms bins, then grows
        assert_eq!(t.bin_ms, 100);
        assert_eq!(t.packets.len(), 5001);
        assert_eq!(t.packets.iter().sum::<u64>(), 4);
        t.add(0, 1); // before the start: first bin
        assert_eq!(t.packets[0], 3);
    }

    #[test]
    fn mtu_from_segments_or_largest_payload() {
        let mut s = Sizes::default();
        s.add_frame(60);
        s.add_frame(1078);
        s.add_frame(20_000);
        s.add_payload(1024, true);
        s.add_payload(300, false);
        s.finish();
        assert_eq!(s.implied_mtu, Some(1024));
        assert_eq!(s.mtu_basis, Some("segments"));
        assert_eq!(s.buckets[0].packets, 1);
        assert_eq!(s.buckets[5].packets, 1);
        assert_eq!(s.buckets[9].packets, 1);
        let mut s = Sizes::default();
        s.add_payload(3000, false);
        s.finish();
        assert_eq!(s.implied_mtu, Some(2048));
        assert_eq!(s.mtu_basis, Some("largest_payload"));
    }
}
