//! The ring: the last seconds (or minutes) of captured packets, bounded by bytes and by age.
//!
//! Packets are stored as *records* (timestamp ns, original length, captured
//! bytes) packed into fixed-size *blocks*. A record is laid out as the pcapng
//! Enhanced Packet Block a capture file holds for it (little-endian, timestamp
//! in ns, interface id = ring interface index), so a dump writes runs of
//! records, up to whole blocks, without re-framing them. A capture thread
//! fills one block of its own ([`BlockWriter`]) with no lock and no
//! allocation, then *seals* it into the ring as an `Arc<Block>`. A window being dumped takes references to the
//! blocks it needs and subscribes to the blocks sealed after it opened, so the
//! capture thread never waits for disk.
//!
//! Compression ([`RingConfig::compress`]): a `ring-compress` thread
//! ([`Ring::compressor`]) turns sealed blocks older than the newest few into
//! [`Packed`] blocks with the lossless [`codec`], and the raw buffer goes back to
//! the pool for the capture to fill again. The newest blocks stay raw, so the
//! capture thread never compresses and a window on the last moments decodes
//! nothing. A window that reaches back into packed blocks decodes them one at a
//! time per interface, into buffers set aside for that when the ring was made
//! ([`InflateSlot`]), and writes exactly the bytes the raw block held.
//!
//! Memory: every byte the ring holds counts against one budget of
//! `memory_limit`: raw block buffers (`block_size` each, whether filled, free
//! or held by a dump), packed blocks (their length), and the decode buffers. A
//! raw buffer returns to the pool and a packed block's bytes to the budget when
//! the last reference to it is dropped, so blocks pinned by dumps in flight
//! count against the limit. When the budget is spent the oldest ring block is
//! evicted (counted); if every block is pinned by dumps, a live capture drops
//! the packet (counted as `ring_full_drops`) rather than wait, while a replay
//! waits (it has no deadline). A `ring-prefault` thread keeps a few free
//! buffers allocated and page-faulted ahead of the capture
//! ([`RingConfig::prefault`]), so a capture thread filling a cold ring does not
//! stop on a page fault every 4 KiB.
//!
//! Time: each interface has a *watermark*, the capture time up to which all of
//! its packets are sealed. Windows close when the lowest watermark passes their
//! end, which is how a window knows it has every packet it asked for.

pub mod codec;
mod compress;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::capture_file::pcapng::{self, EPB_OVERHEAD};

pub use compress::{InflateLease, InflateSlot};

/// Default size of one block.
pub const DEFAULT_BLOCK_SIZE: usize = 256 * 1024;

/// A watermark meaning "this interface will deliver nothing more".
pub const WATERMARK_END: i64 = i64::MAX;

/// Sizes of the ring.
#[derive(Debug, Clone, Copy)]
pub struct RingConfig {
    /// Total bytes of blocks, raw and packed, including blocks held by dumps in
    /// flight and the buffers windows decode packed blocks into.
    pub memory_limit: usize,
    /// Bytes per block; a packet larger than a block is cut to fit.
    pub block_size: usize,
    /// Blocks whose newest packet is older than this (relative to the newest
    /// packet sealed) are evicted even when memory is left.
    pub max_age: Duration,
    /// Bytes of free buffers a background thread keeps allocated and
    /// page-faulted ahead of the capture (0: none), so filling a cold ring never
    /// stalls a capture thread on first-touch page faults. Within `memory_limit`.
    pub prefault: usize,
    /// Compress blocks older than the newest few ([`Ring::compressor`]).
    pub compress: bool,
}

/// Default [`RingConfig::prefault`]: 32 MiB of warm buffers.
pub const DEFAULT_PREFAULT: usize = 32 << 20;

/// What is known of a block without reading its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockMeta {
    /// Interface index (position in the ring's interface list).
    pub iface: u16,
    /// Records in the block.
    pub packets: u32,
    /// Timestamp of the first record (ns since the Unix epoch).
    pub first_ts: i64,
    /// Lowest timestamp of any record (capture clocks can step back).
    pub min_ts: i64,
    /// Highest timestamp of any record.
    pub last_ts: i64,
    /// Captured bytes of all records.
    pub data_bytes: u64,
    /// Original (on the wire) lengths of all records.
    pub wire_bytes: u64,
    /// Bytes of the records as pcapng Enhanced Packet Blocks.
    pub pcapng_bytes: u64,
}

/// One sealed block of records from one interface, as raw pcapng EPBs.
#[derive(Debug)]
pub struct Block {
    buf: Vec<u8>,
    meta: BlockMeta,
    pool: Weak<Pool>,
}

impl Block {
    /// What is known of the block.
    pub fn meta(&self) -> &BlockMeta {
        &self.meta
    }
    /// Interface index (position in the ring's interface list).
    pub fn iface(&self) -> u16 {
        self.meta.iface
    }
    /// Records in the block.
    pub fn packets(&self) -> u32 {
        self.meta.packets
    }
    /// Timestamp of the first record (ns since the Unix epoch).
    pub fn first_ts(&self) -> i64 {
        self.meta.first_ts
    }
    /// Highest timestamp of any record in the block.
    pub fn last_ts(&self) -> i64 {
        self.meta.last_ts
    }
    /// Lowest timestamp of any record in the block (capture clocks can step back).
    pub fn min_ts(&self) -> i64 {
        self.meta.min_ts
    }
    /// Captured bytes of all records.
    pub fn data_bytes(&self) -> u64 {
        self.meta.data_bytes
    }
    /// Original (on the wire) lengths of all records.
    pub fn wire_bytes(&self) -> u64 {
        self.meta.wire_bytes
    }
    /// Every record, as consecutive pcapng Enhanced Packet Blocks.
    pub fn pcapng(&self) -> &[u8] {
        &self.buf[..self.meta.pcapng_bytes as usize]
    }
    /// The record starting at byte `offset`, and the offset of the next one.
    pub fn record_at(&self, offset: usize) -> Option<(Record<'_>, usize)> {
        record_at(self.pcapng(), offset)
    }
    /// Iterate over the records.
    pub fn records(&self) -> Records<'_> {
        Records {
            bytes: self.pcapng(),
            offset: 0,
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.put(std::mem::take(&mut self.buf));
        }
    }
}

/// A sealed block compressed by the [`codec`]: the same records in fewer bytes.
#[derive(Debug)]
pub struct Packed {
    bytes: Box<[u8]>,
    meta: BlockMeta,
    pool: Weak<Pool>,
}

impl Packed {
    /// What is known of the block.
    pub fn meta(&self) -> &BlockMeta {
        &self.meta
    }
    /// The compressed block, for [`codec::Decoder::decode`].
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.release(self.bytes.len() as u64);
        }
    }
}

/// The record of pcapng EPB bytes `bytes` at `offset`, and the offset of the next one.
pub fn record_at(bytes: &[u8], offset: usize) -> Option<(Record<'_>, usize)> {
    let epb = pcapng::parse_epb(bytes.get(offset..)?)?;
    let record = Record {
        ts: epb.ts_ns,
        orig_len: epb.orig_len,
        data: epb.data,
        pcapng: epb.block,
    };
    Some((record, offset + epb.block.len()))
}

/// One captured packet, borrowed from its block.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Capture time, ns since the Unix epoch.
    pub ts: i64,
    /// Length of the packet on the wire.
    pub orig_len: u32,
    /// The captured bytes (at most snaplen).
    pub data: &'a [u8],
    /// The whole record: the pcapng Enhanced Packet Block holding it.
    pub pcapng: &'a [u8],
}

/// Iterator over a block's records.
pub struct Records<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Records<'a> {
    /// The records of `bytes`, consecutive pcapng EPBs (a block's, or a window's).
    pub fn over(bytes: &'a [u8]) -> Records<'a> {
        Records { bytes, offset: 0 }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;
    fn next(&mut self) -> Option<Record<'a>> {
        let (rec, next) = record_at(self.bytes, self.offset)?;
        self.offset = next;
        Some(rec)
    }
}

/// A block as the ring holds it.
#[derive(Debug, Clone)]
pub enum Stored {
    /// Raw pcapng EPBs.
    Raw(Arc<Block>),
    /// Compressed.
    Packed(Arc<Packed>),
}

impl Stored {
    /// What is known of the block.
    pub fn meta(&self) -> &BlockMeta {
        match self {
            Stored::Raw(b) => &b.meta,
            Stored::Packed(p) => &p.meta,
        }
    }
}

/// The pool of raw block buffers and the byte budget every block is charged to:
/// the one place memory is bounded.
#[derive(Debug)]
struct Pool {
    free: Mutex<Vec<Vec<u8>>>,
    /// Signalled when a buffer or budget comes back.
    returned: Condvar,
    /// Signalled when a buffer is taken, for the prefault thread.
    taken: Condvar,
    /// Bytes charged: raw buffers (free or not), packed blocks, decode buffers.
    used: AtomicU64,
    limit: u64,
    block_size: usize,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Vec<Vec<u8>>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn put(&self, buf: Vec<u8>) {
        self.lock().push(buf);
        self.returned.notify_one();
    }
    /// A free buffer, or a new one while under the limit.
    fn try_get(&self) -> Option<Vec<u8>> {
        if let Some(buf) = self.lock().pop() {
            self.taken.notify_one();
            return Some(buf);
        }
        self.reserve(self.block_size as u64)
            .then(|| vec![0u8; self.block_size])
    }
    /// Charge `n` more bytes, if under the limit.
    fn reserve(&self, n: u64) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                (u + n <= self.limit).then_some(u + n)
            })
            .is_ok()
    }
    /// Give back `n` bytes charged by [`Pool::reserve`].
    fn release(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::Relaxed);
        // Under the lock, so a waiter in `take_block` cannot miss it.
        let _free = self.lock();
        self.returned.notify_one();
    }
    /// Free one idle buffer's memory for other use, if more than `keep` are
    /// idle; `false` if not.
    fn shrink(&self, keep: usize) -> bool {
        let buf = {
            let mut free = self.lock();
            if free.len() <= keep {
                return false;
            }
            free.pop()
        };
        buf.is_some_and(|b| {
            drop(b);
            self.used
                .fetch_sub(self.block_size as u64, Ordering::Relaxed);
            true
        })
    }
}

/// Keep up to `keep` free buffers allocated and page-faulted ahead of the
/// capture threads, until the pool reaches its limit or the ring is dropped.
/// Writing one byte per page makes the kernel allocate and zero the page here,
/// on another core, instead of in a capture thread's first `push` into it.
fn prefault(pool: Weak<Pool>, keep: usize, stop: CancellationToken) {
    const PAGE: usize = 4096;
    loop {
        if stop.is_cancelled() {
            return;
        }
        let Some(pool) = pool.upgrade() else { return };
        {
            let free = pool.lock();
            if free.len() >= keep {
                // Woken by a take; the timeout notices the ring going away.
                let _ = pool.taken.wait_timeout(free, Duration::from_millis(200));
                continue;
            }
        }
        if !pool.reserve(pool.block_size as u64) {
            // At the limit: every byte is in use. Packed blocks may give some
            // back later, so look again rather than end.
            let free = pool.lock();
            let _ = pool.taken.wait_timeout(free, Duration::from_millis(200));
            continue;
        }
        let mut buf = vec![0u8; pool.block_size];
        for i in (0..buf.len()).step_by(PAGE) {
            // SAFETY: `i < buf.len()`; a volatile write is not elided for a zeroed allocation.
            unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 0) };
        }
        pool.put(buf);
    }
}

/// A block being filled by one capture thread. Not shared: no locks.
#[derive(Debug)]
pub struct BlockWriter {
    block: Block,
}

impl BlockWriter {
    /// Append a packet; `false` if the block has no room left for it.
    /// `data` longer than the block is cut to fit (its `orig_len` is kept).
    /// Timestamps before the epoch are stored as 0, as pcapng cannot hold them.
    #[inline]
    pub fn push(&mut self, ts: i64, orig_len: u32, data: &[u8]) -> bool {
        let b = &mut self.block;
        let m = &mut b.meta;
        let len = m.pcapng_bytes as usize;
        // Block sizes and records are multiples of 4, so `room` is too and the
        // padded data always fits when the data does.
        let room = b.buf.len().saturating_sub(len + EPB_OVERHEAD);
        if room < data.len() && m.packets > 0 {
            return false;
        }
        let data = &data[..data.len().min(room)];
        let ts = ts.max(0); // as the block will hold it
        let total = pcapng::epb_len(data.len());
        let Some(rec) = b.buf.get_mut(len..len + total) else {
            return false; // a block smaller than one record's framing
        };
        pcapng::put_epb(rec, u32::from(m.iface), ts, orig_len, data);
        m.pcapng_bytes += total as u64;
        if m.packets == 0 {
            m.first_ts = ts;
            m.min_ts = ts;
            m.last_ts = ts;
        } else {
            m.min_ts = m.min_ts.min(ts);
            m.last_ts = m.last_ts.max(ts);
        }
        m.packets += 1;
        m.data_bytes += data.len() as u64;
        m.wire_bytes += u64::from(orig_len);
        true
    }
    /// Records written so far.
    pub fn packets(&self) -> u32 {
        self.block.meta.packets
    }
    /// Timestamp of the first record, if any.
    pub fn first_ts(&self) -> Option<i64> {
        (self.block.meta.packets > 0).then_some(self.block.meta.first_ts)
    }
}

/// What a window receives from the ring, in order.
#[derive(Debug)]
pub enum RingEvent {
    /// A sealed block (also the raw blocks already in the ring when it subscribed).
    Block(Arc<Block>),
    /// A packed block that was in the ring when the window subscribed (blocks
    /// sealed later always come raw).
    Packed(Arc<Packed>),
    /// The lowest watermark of all interfaces rose to this capture time.
    Watermark(i64),
}

/// Counters of the ring (monotonic).
#[derive(Debug, Default)]
pub struct RingStats {
    /// Blocks evicted because memory was full.
    pub evicted_blocks: AtomicU64,
    /// Packets in those blocks.
    pub evicted_packets: AtomicU64,
    /// Blocks evicted because they were older than `max_age`.
    pub aged_blocks: AtomicU64,
    /// Packets a live capture dropped because every buffer was pinned by dumps.
    pub ring_full_drops: AtomicU64,
    /// Packets sealed into the ring.
    pub packets: AtomicU64,
    /// Captured bytes sealed into the ring.
    pub bytes: AtomicU64,
    /// Blocks the compressor packed.
    pub packed_blocks: AtomicU64,
    /// Blocks the compressor left raw (packing would not have saved memory, or
    /// the codec refused them).
    pub unpacked_blocks: AtomicU64,
    /// Packed blocks a window could not decode (their packets are missing from it).
    pub decode_errors: AtomicU64,
}

/// A point-in-time view of the ring for status and coverage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RingSpan {
    /// Oldest capture time the ring can still deliver every packet from.
    pub reaches_back_to: i64,
    /// Whether that limit comes from evicting blocks (memory or age), rather
    /// than from when capturing started.
    pub evicted: bool,
    /// Newest packet sealed.
    pub newest_ts: Option<i64>,
    /// Oldest packet the ring holds.
    pub oldest_ts: Option<i64>,
    /// Blocks held by the ring, raw and packed.
    pub blocks: usize,
    /// Of those, packed.
    pub packed_blocks: usize,
    /// Packets in the packed blocks.
    pub packed_packets: u64,
    /// Packets held by the ring.
    pub packets: u64,
    /// Bytes of memory the ring's blocks take (a raw block takes its whole buffer).
    pub held_bytes: u64,
    /// Bytes of the packed blocks, and of their records as raw pcapng.
    pub packed_bytes: (u64, u64),
    /// Bytes charged to the budget (ring blocks, blocks pinned by dumps, free
    /// buffers, decode buffers).
    pub allocated_bytes: u64,
    /// Of those, free buffers waiting for the capture.
    pub idle_bytes: u64,
}

impl RingSpan {
    /// Seconds of capture time the ring holds: from the oldest time it can
    /// deliver every packet from (or its oldest packet) to its newest packet.
    pub fn history_seconds(&self) -> f64 {
        let (Some(newest), Some(oldest)) = (self.newest_ts, self.oldest_ts) else {
            return 0.0;
        };
        let from = if self.evicted {
            self.reaches_back_to
        } else {
            oldest
        };
        newest.saturating_sub(from).max(0) as f64 / 1e9
    }
    /// Memory per packet held, in bytes (`None` while the ring is empty).
    pub fn bytes_per_packet(&self) -> Option<f64> {
        (self.packets > 0).then(|| self.held_bytes as f64 / self.packets as f64)
    }
    /// Raw over packed bytes of the packed blocks (`None` while none is packed).
    pub fn compression_ratio(&self) -> Option<f64> {
        let (packed, raw) = self.packed_bytes;
        (packed > 0).then(|| raw as f64 / packed as f64)
    }
}

#[derive(Debug)]
struct State {
    blocks: VecDeque<Stored>,
    /// Sequence number of `blocks[0]` (each sealed block gets the next one).
    front_seq: u64,
    /// Sequence number of the next block a compressor thread may claim.
    pack_next: u64,
    watermarks: Vec<i64>,
    low_watermark: i64,
    subscribers: Vec<Sender<RingEvent>>,
    /// Every packet with a timestamp after this is still in the ring (or pinned).
    complete_after: i64,
    /// When capturing started (the initial `complete_after`).
    started_at: i64,
    newest_ts: Option<i64>,
    /// Totals over `blocks`.
    held: Held,
}

/// Totals over the blocks the ring holds.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    packets: u64,
    packed_packets: u64,
    packed_blocks: usize,
    packed_bytes: u64,
    packed_pcapng: u64,
}

impl Held {
    fn add(&mut self, s: &Stored, sign: i64) {
        let m = s.meta();
        let apply = |v: &mut u64, d: u64| {
            *v = if sign > 0 {
                *v + d
            } else {
                v.saturating_sub(d)
            }
        };
        apply(&mut self.packets, u64::from(m.packets));
        if let Stored::Packed(p) = s {
            if sign > 0 {
                self.packed_blocks += 1;
            } else {
                self.packed_blocks = self.packed_blocks.saturating_sub(1);
            }
            apply(&mut self.packed_bytes, p.bytes.len() as u64);
            apply(&mut self.packed_packets, u64::from(m.packets));
            apply(&mut self.packed_pcapng, m.pcapng_bytes);
        }
    }
}

/// The shared ring. Cheap to clone through `Arc`.
#[derive(Debug)]
pub struct Ring {
    pool: Arc<Pool>,
    /// Free buffers the prefault thread keeps ready ([`RingConfig::prefault`]).
    prefault_keep: usize,
    state: Mutex<State>,
    /// Signalled on every seal, for the compressor.
    sealed: Condvar,
    max_age_ns: i64,
    stats: RingStats,
    /// Decode buffers for windows, when the ring compresses.
    inflate: Option<Arc<InflateSlot>>,
    /// Raw blocks the compressor leaves at the new end of the ring.
    keep_raw: usize,
    /// Compressor threads running.
    compressors: std::sync::atomic::AtomicUsize,
    /// Signalled (with the ring lock) when a compressor has packed a block.
    packed: Condvar,
}

impl Ring {
    /// The body of the `ring-prefault` thread, for its owner to start
    /// (`None` when [`RingConfig::prefault`] is 0): keeps free buffers
    /// faulted in ahead of the capture threads until `stop` is cancelled or the
    /// ring is dropped. Best effort: without it, capture threads fault pages
    /// in themselves.
    pub fn prefaulter(&self, stop: CancellationToken) -> Option<impl FnOnce() + Send + 'static> {
        let weak = Arc::downgrade(&self.pool);
        let keep = self.prefault_keep;
        (keep > 0).then_some(move || prefault(weak, keep, stop))
    }

    /// A ring for `interfaces` interfaces, whose packets are all newer than `started_at`
    /// (ns since the epoch): the ring can't reach back before the capture started.
    /// Compression needs room for a decode buffer per interface and two blocks
    /// besides; a smaller ring does not compress.
    pub fn new(config: RingConfig, interfaces: usize, started_at: i64) -> Arc<Ring> {
        let block_size = config.block_size.max(4096) & !7;
        let max_blocks = (config.memory_limit / block_size).max(2);
        let compress = config.compress && max_blocks >= interfaces + 4;
        let pool = Arc::new(Pool {
            free: Mutex::new(Vec::new()),
            returned: Condvar::new(),
            taken: Condvar::new(),
            used: AtomicU64::new(0),
            limit: (max_blocks * block_size) as u64,
            block_size,
        });
        let inflate = compress.then(|| InflateSlot::new(&pool, interfaces.max(1)));
        // Raw blocks kept new, and warm buffers kept free: what the ring holds
        // raw beside them is history lost to compression, so little: 1/256
        // of the ring each (2 to 16 blocks kept raw). Without compression,
        // warm buffers cost no history until the ring is full: 1/16.
        let keep_raw = (max_blocks / 256).clamp(2, 16);
        let warm_share = if compress { 256 } else { 16 };
        Arc::new(Ring {
            prefault_keep: (config.prefault / block_size).min(max_blocks / warm_share),
            pool,
            state: Mutex::new(State {
                blocks: VecDeque::new(),
                front_seq: 0,
                pack_next: 0,
                watermarks: vec![i64::MIN; interfaces],
                low_watermark: if interfaces == 0 {
                    WATERMARK_END
                } else {
                    i64::MIN
                },
                subscribers: Vec::new(),
                complete_after: started_at,
                started_at,
                newest_ts: None,
                held: Held::default(),
            }),
            sealed: Condvar::new(),
            max_age_ns: i64::try_from(config.max_age.as_nanos()).unwrap_or(i64::MAX),
            stats: RingStats::default(),
            inflate,
            keep_raw,
            compressors: std::sync::atomic::AtomicUsize::new(0),
            packed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The ring's counters.
    pub fn stats(&self) -> &RingStats {
        &self.stats
    }

    /// Bytes the ring may hold in all.
    pub fn memory_limit(&self) -> u64 {
        self.pool.limit
    }

    /// Bytes per block.
    pub fn block_size(&self) -> usize {
        self.pool.block_size
    }

    /// Whether the ring compresses its older blocks.
    pub fn compresses(&self) -> bool {
        self.inflate.is_some()
    }

    /// Sealed blocks, beyond those kept raw, the compressor has not looked at yet.
    pub fn compressor_behind(&self) -> u64 {
        let st = self.lock();
        let end = st.front_seq + st.blocks.len() as u64;
        end.saturating_sub(st.pack_next.max(st.front_seq))
            .saturating_sub(self.keep_raw as u64)
    }

    /// Where windows take buffers to decode packed blocks into (`None` when the
    /// ring does not compress).
    pub fn inflate_slot(&self) -> Option<&Arc<InflateSlot>> {
        self.inflate.as_ref()
    }

    /// Evict the oldest block; `false` if the ring holds none. Its memory comes
    /// back once no dump holds it.
    fn evict_oldest(&self) -> bool {
        let evicted = {
            let mut st = self.lock();
            let b = st.blocks.pop_front();
            if let Some(b) = &b {
                st.front_seq += 1;
                st.complete_after = st.complete_after.max(b.meta().last_ts);
                st.held.add(b, -1);
            }
            b
        };
        // Dropped here, outside the ring lock: a raw buffer goes back to the pool.
        match evicted {
            Some(b) => {
                self.stats.evicted_blocks.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .evicted_packets
                    .fetch_add(u64::from(b.meta().packets), Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// A fresh block for interface `iface`. Evicts the oldest blocks when the
    /// budget is spent. `None` when every block is pinned by dumps in flight
    /// (`wait = None`), or after `wait` elapsed without memory coming back.
    pub fn take_block(&self, iface: u16, wait: Option<Duration>) -> Option<BlockWriter> {
        if let Some(wait) = wait {
            self.wait_for_compressor(wait);
        }
        loop {
            if let Some(buf) = self.pool.try_get() {
                return Some(BlockWriter {
                    block: Block {
                        buf,
                        meta: BlockMeta {
                            iface,
                            ..BlockMeta::default()
                        },
                        pool: Arc::downgrade(&self.pool),
                    },
                });
            }
            if !self.evict_oldest() {
                let wait = wait?;
                let free = self.pool.lock();
                if free.is_empty() {
                    let (_free, timeout) = self
                        .pool
                        .returned
                        .wait_timeout(free, wait)
                        .unwrap_or_else(|p| p.into_inner());
                    if timeout.timed_out() {
                        return None;
                    }
                }
            }
        }
    }

    /// A capture that can wait (a replay) lets the compressor keep up: it waits
    /// (up to `wait`) while more than twice the blocks the compressor leaves
    /// raw wait for it, so a replay holds the history a live capture on this
    /// machine would. A live capture never waits.
    fn wait_for_compressor(&self, wait: Duration) {
        let running = || self.compressors.load(Ordering::Relaxed) > 0;
        if !running() {
            return;
        }
        let behind = |st: &State| {
            let end = st.front_seq + st.blocks.len() as u64;
            end.saturating_sub(st.pack_next.max(st.front_seq)) > 2 * self.keep_raw as u64
        };
        let st = self.lock();
        if behind(&st) && running() {
            let _ = self
                .packed
                .wait_timeout_while(st, wait, |st| behind(st) && running());
        }
    }

    /// Append a packet to interface `iface`'s open block in `slot`, sealing it
    /// into the ring and taking a fresh one when it is full. `wait` is passed to
    /// [`Ring::take_block`]; `false` when no block could be had (the packet is
    /// not stored; `slot` is then empty).
    #[inline]
    pub fn append(
        &self,
        slot: &mut Option<BlockWriter>,
        iface: u16,
        ts: i64,
        orig_len: u32,
        data: &[u8],
        wait: Option<Duration>,
    ) -> bool {
        if let Some(w) = slot.as_mut() {
            if w.push(ts, orig_len, data) {
                return true;
            }
            if let Some(full) = slot.take() {
                self.seal(full);
            }
        }
        match self.take_block(iface, wait) {
            Some(mut w) => {
                w.push(ts, orig_len, data);
                *slot = Some(w);
                true
            }
            None => false,
        }
    }

    /// Count a packet a live capture dropped because no block was free.
    pub fn count_full_drop(&self) {
        self.stats.ring_full_drops.fetch_add(1, Ordering::Relaxed);
    }

    /// Seal a filled block into the ring and hand it to every open window.
    /// Empty blocks go straight back to the pool.
    pub fn seal(&self, writer: BlockWriter) {
        let block = writer.block;
        if block.meta.packets == 0 {
            return;
        }
        self.stats
            .packets
            .fetch_add(u64::from(block.meta.packets), Ordering::Relaxed);
        self.stats
            .bytes
            .fetch_add(block.meta.data_bytes, Ordering::Relaxed);
        let block = Arc::new(block);
        let mut aged = Vec::new();
        {
            let mut st = self.lock();
            let newest = st
                .newest_ts
                .map_or(block.meta.last_ts, |n| n.max(block.meta.last_ts));
            st.newest_ts = Some(newest);
            let horizon = newest.saturating_sub(self.max_age_ns);
            while st
                .blocks
                .front()
                .is_some_and(|b| b.meta().last_ts < horizon)
            {
                if let Some(b) = st.blocks.pop_front() {
                    st.front_seq += 1;
                    st.complete_after = st.complete_after.max(b.meta().last_ts);
                    st.held.add(&b, -1);
                    aged.push(b);
                }
            }
            st.subscribers
                .retain(|s| s.send(RingEvent::Block(Arc::clone(&block))).is_ok());
            let stored = Stored::Raw(block);
            st.held.add(&stored, 1);
            st.blocks.push_back(stored);
        }
        self.sealed.notify_one();
        self.stats
            .aged_blocks
            .fetch_add(aged.len() as u64, Ordering::Relaxed);
        drop(aged); // buffers go back to the pool outside the ring lock
    }

    /// Interface `iface` has sealed every packet up to capture time `ts`.
    pub fn advance(&self, iface: u16, ts: i64) {
        let mut st = self.lock();
        let Some(w) = st.watermarks.get_mut(usize::from(iface)) else {
            return;
        };
        if ts <= *w {
            return;
        }
        *w = ts;
        let low = st.watermarks.iter().copied().min().unwrap_or(WATERMARK_END);
        if low > st.low_watermark {
            st.low_watermark = low;
            st.subscribers
                .retain(|s| s.send(RingEvent::Watermark(low)).is_ok());
        }
    }

    /// Every interface has sealed every packet up to `ts` (replay, shutdown).
    pub fn advance_all(&self, ts: i64) {
        let n = self.lock().watermarks.len();
        for i in 0..n {
            self.advance(i as u16, ts);
        }
    }

    /// Subscribe a window starting at `start`: returns the ring's reach at this
    /// moment, and `tx` receives every block that may hold packets at or after
    /// `start` (those in the ring now, raw or packed, then each one sealed
    /// later) and every watermark rise. Atomic with sealing: no block is missed
    /// or sent twice.
    pub fn subscribe(&self, start: i64, tx: Sender<RingEvent>) -> RingSpan {
        let mut st = self.lock();
        for b in st.blocks.iter().filter(|b| b.meta().last_ts >= start) {
            let ev = match b {
                Stored::Raw(b) => RingEvent::Block(Arc::clone(b)),
                Stored::Packed(p) => RingEvent::Packed(Arc::clone(p)),
            };
            if tx.send(ev).is_err() {
                break;
            }
        }
        let _ = tx.send(RingEvent::Watermark(st.low_watermark));
        st.subscribers.push(tx);
        self.span_locked(&st)
    }

    /// The ring's extent now.
    pub fn span(&self) -> RingSpan {
        let st = self.lock();
        self.span_locked(&st)
    }

    fn span_locked(&self, st: &State) -> RingSpan {
        let raw_blocks = st.blocks.len() - st.held.packed_blocks;
        RingSpan {
            reaches_back_to: st.complete_after.saturating_add(1),
            evicted: st.complete_after > st.started_at,
            newest_ts: st.newest_ts,
            oldest_ts: st.blocks.front().map(|b| b.meta().min_ts),
            blocks: st.blocks.len(),
            packed_blocks: st.held.packed_blocks,
            packed_packets: st.held.packed_packets,
            packets: st.held.packets,
            held_bytes: (raw_blocks * self.pool.block_size) as u64 + st.held.packed_bytes,
            packed_bytes: (st.held.packed_bytes, st.held.packed_pcapng),
            allocated_bytes: self.pool.used.load(Ordering::Relaxed),
            idle_bytes: (self.pool.lock().len() * self.pool.block_size) as u64,
        }
    }

    /// The lowest watermark of all interfaces.
    pub fn low_watermark(&self) -> i64 {
        self.lock().low_watermark
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::mpsc;

    fn ring(limit: usize, block: usize) -> Arc<Ring> {
        Ring::new(
            RingConfig {
                memory_limit: limit,
                block_size: block,
                max_age: Duration::from_secs(3600),
                prefault: 0,
                compress: false,
            },
            1,
            0,
        )
    }

    /// Seal `w` and get it back as a subscriber sees it.
    fn seal_and_read_back(r: &Ring, w: BlockWriter) -> Arc<Block> {
        r.seal(w);
        let (tx, rx) = mpsc::channel();
        r.subscribe(0, tx);
        match rx.try_recv() {
            Ok(RingEvent::Block(b)) => b,
            other => panic!("no block: {other:?}"),
        }
    }

    #[test]
    fn records_round_trip_through_a_block() {
        let r = ring(1 << 20, 4096);
        let mut w = r.take_block(0, None).expect("block");
        assert!(w.push(10, 100, &[1, 2, 3]));
        assert!(w.push(20, 5, &[9; 5]));
        let b = seal_and_read_back(&r, w);
        let recs: Vec<_> = b
            .records()
            .map(|r| (r.ts, r.orig_len, r.data.to_vec()))
            .collect();
        assert_eq!(recs, vec![(10, 100, vec![1, 2, 3]), (20, 5, vec![9; 5])]);
    }

    #[test]
    fn a_record_is_the_pcapng_block_a_capture_file_holds_for_it() {
        let r = ring(4096, 4096); // 2 buffers: the second take reuses the first
        let mut w = r.take_block(3, None).expect("block");
        assert!(w.push(1, 99, &[0xff; 99]));
        drop(w.block); // back to the pool, dirty
        let mut w = r.take_block(3, None).expect("block");
        let ts = 1_796_000_000_123_456_789;
        assert!(w.push(ts, 1500, &[1, 2, 3, 4, 5]));
        let b = seal_and_read_back(&r, w);
        let rec = b.records().next().expect("record");
        assert_eq!(
            (rec.ts, rec.orig_len, rec.data),
            (ts, 1500, &[1u8, 2, 3, 4, 5][..])
        );
        // Interface id = ring interface index; the pcapng tests check the bytes.
        let mut expected = vec![0u8; pcapng::epb_len(5)];
        pcapng::put_epb(&mut expected, 3, ts, 1500, &[1, 2, 3, 4, 5]);
        assert_eq!(
            rec.pcapng,
            &expected[..],
            "padding zeroed, not the old 0xff"
        );
        assert_eq!(b.pcapng(), &expected[..]);
        assert_eq!((b.data_bytes(), b.wire_bytes()), (5, 1500));
    }

    #[test]
    fn full_block_refuses_and_oversized_packet_is_cut() {
        let r = ring(1 << 20, 4096);
        let mut w = r.take_block(0, None).expect("block");
        assert!(
            w.push(1, 10_000, &[7u8; 10_000]),
            "first packet always fits, cut"
        );
        assert!(!w.push(2, 10, &[1; 10]));
        let b = seal_and_read_back(&r, w);
        let rec = b.records().next().expect("record");
        assert_eq!(rec.orig_len, 10_000);
        assert_eq!(rec.data.len(), 4096 - EPB_OVERHEAD);
    }

    #[test]
    fn eviction_at_the_byte_bound_is_counted_and_moves_the_reach() {
        let r = ring(4 * 4096, 4096); // 4 blocks
        for i in 0..10i64 {
            let mut w = r.take_block(0, None).expect("block");
            assert!(w.push(i * 100, 1, &[0]));
            assert!(w.push(i * 100 + 50, 1, &[0]));
            r.seal(w);
        }
        assert_eq!(r.stats().evicted_blocks.load(Ordering::Relaxed), 6);
        let span = r.span();
        assert_eq!(span.blocks, 4);
        assert_eq!(
            span.reaches_back_to, 551,
            "block 5 (500..550) was the last evicted"
        );
        assert_eq!(span.allocated_bytes, 4 * 4096);
    }

    #[test]
    fn pinned_blocks_count_against_the_limit() {
        let r = ring(4 * 4096, 4096);
        let (tx, rx) = mpsc::channel();
        r.subscribe(0, tx);
        for i in 0..4 {
            let mut w = r.take_block(0, None).expect("block");
            w.push(i, 1, &[0]);
            r.seal(w);
        }
        // All 4 buffers are held by the subscriber's queue: nothing to give.
        assert!(r.take_block(0, None).is_none());
        drop(rx);
        // The ring still holds them; eviction frees them now.
        assert!(r.take_block(0, None).is_some());
    }

    #[test]
    fn prefault_keeps_buffers_ready_ahead_and_never_passes_the_limit() {
        let r = Ring::new(
            RingConfig {
                memory_limit: 64 * 4096,
                block_size: 4096,
                max_age: Duration::from_secs(3600),
                prefault: 3 * 4096,
                compress: false,
            },
            1,
            0,
        );
        let stop = CancellationToken::new();
        let prefault = r.prefaulter(stop.clone()).expect("prefault asked");
        let thread = std::thread::spawn(prefault);
        let allocated = |r: &Ring| r.span().allocated_bytes / 4096;
        let settle = |r: &Ring, want: u64| {
            let start = std::time::Instant::now();
            while allocated(r) != want && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(allocated(r), want);
        };
        settle(&r, 3); // 3 ready before any capture asked
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(r.take_block(0, None).expect("block"));
        }
        settle(&r, 5); // 2 taken, topped up to 3 free again
        for _ in 0..62 {
            held.push(r.take_block(0, None).expect("block"));
        }
        settle(&r, 64); // at the limit: nothing beyond it, now or later
        assert!(r.take_block(0, None).is_none(), "all 64 held");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(allocated(&r), 64);
        stop.cancel();
        thread.join().expect("prefault thread ends when stopped");
    }

    #[test]
    fn at_most_a_sixteenth_of_the_ring_idles_warm() {
        let r = Ring::new(
            RingConfig {
                memory_limit: 32 * 4096,
                block_size: 4096,
                max_age: Duration::from_secs(3600),
                prefault: 8 * 4096,
                compress: false,
            },
            1,
            0,
        );
        assert_eq!(r.prefault_keep, 2);
    }

    #[test]
    fn watermark_is_the_lowest_interface() {
        let r = Ring::new(
            RingConfig {
                memory_limit: 1 << 20,
                block_size: 4096,
                max_age: Duration::from_secs(1),
                prefault: 0,
                compress: false,
            },
            2,
            0,
        );
        let (tx, rx) = mpsc::channel();
        r.subscribe(0, tx);
        r.advance(0, 100);
        assert_eq!(r.low_watermark(), i64::MIN);
        r.advance(1, 50);
        assert_eq!(r.low_watermark(), 50);
        let marks: Vec<i64> = rx
            .try_iter()
            .filter_map(|e| match e {
                RingEvent::Watermark(w) => Some(w),
                RingEvent::Block(_) | RingEvent::Packed(_) => None,
            })
            .collect();
        assert_eq!(marks, vec![i64::MIN, 50]);
    }

    #[test]
    fn blocks_older_than_max_age_are_aged_out() {
        let r = Ring::new(
            RingConfig {
                memory_limit: 1 << 20,
                block_size: 4096,
                max_age: Duration::from_nanos(1000),
                prefault: 0,
                compress: false,
            },
            1,
            0,
        );
        for ts in [0i64, 500, 2000] {
            let mut w = r.take_block(0, None).expect("block");
            w.push(ts, 1, &[0]);
            r.seal(w);
        }
        assert_eq!(r.span().blocks, 1);
        assert_eq!(r.stats().aged_blocks.load(Ordering::Relaxed), 2);
    }

    /// RoCE v2 frames of `qps` queue pairs doing WRITEs with ACKs, with
    /// `payload` random bytes after the headers.
    pub(crate) fn roce_frames(n: usize, qps: u32, payload: usize) -> Vec<Vec<u8>> {
        use crate::traffic::{frame, Flow, Generator};
        let flows = (0..qps)
            .map(|q| Flow::new(0x100 + q, 0x200 + q, 0xff_fff0 - q * 7, 4))
            .collect();
        let mut g = Generator::new(flows, payload);
        let (mut udp, mut seed) = (Vec::new(), 0x9e37_79b9_u32);
        (0..n)
            .filter_map(|_| {
                g.next_packet(&mut udp)?;
                for b in udp.iter_mut().skip(12 + 16) {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    *b = seed as u8;
                }
                let mut f = Vec::new();
                let src = std::net::Ipv4Addr::new(10, 0, 0, 1);
                frame(
                    src,
                    std::net::Ipv4Addr::new(10, 0, 0, 2),
                    49152,
                    &udp,
                    &mut f,
                );
                Some(f)
            })
            .collect()
    }

    fn compressed(limit: usize, block: usize) -> Arc<Ring> {
        Ring::new(
            RingConfig {
                memory_limit: limit,
                block_size: block,
                max_age: Duration::from_secs(3600),
                prefault: 0,
                compress: true,
            },
            1,
            0,
        )
    }

    #[test]
    fn packed_blocks_give_back_their_raw_bytes_and_the_budget_holds() {
        let (block, limit) = (16 << 10, 64 * (16 << 10));
        let r = compressed(limit, block);
        assert!(r.compresses());
        let frames = roce_frames(40_000, 8, 64);
        let mut sealed: Vec<Vec<u8>> = Vec::new();
        let mut slot: Option<BlockWriter> = None;
        for (i, f) in frames.iter().enumerate() {
            let ts = 1_000_000 + i as i64 * 500;
            if let Some(w) = slot.as_mut() {
                if w.push(ts, f.len() as u32, f) {
                    continue;
                }
            }
            if let Some(full) = slot.take() {
                sealed.push(full.block.pcapng().to_vec());
                r.seal(full);
                r.pack_now();
                assert!(r.span().allocated_bytes <= r.memory_limit());
            }
            let mut w = r.take_block(0, None).expect("block");
            assert!(w.push(ts, f.len() as u32, f));
            slot = Some(w);
        }
        let span = r.span();
        assert!(span.packed_blocks > 64, "{span:?}");
        assert_eq!(span.blocks - span.packed_blocks, r.keep_raw, "{span:?}");
        assert!(
            span.blocks > 2 * 64,
            "twice the blocks an uncompressed ring of this size holds: {span:?}"
        );
        let ratio = span.compression_ratio().expect("packed");
        assert!(ratio > 2.0, "64 random payload bytes a packet: {ratio}");
        // Read back as a window does: every block held, oldest first.
        let (tx, rx) = mpsc::channel();
        r.subscribe(0, tx);
        let mut decoder = codec::Decoder::new();
        let got: Vec<Vec<u8>> = rx
            .try_iter()
            .filter_map(|e| match e {
                RingEvent::Block(b) => Some(b.pcapng().to_vec()),
                RingEvent::Packed(p) => {
                    let mut out = Vec::new();
                    decoder.decode(p.bytes(), &mut out).expect("decodes");
                    assert_eq!(out.len() as u64, p.meta().pcapng_bytes);
                    Some(out)
                }
                RingEvent::Watermark(_) => None,
            })
            .collect();
        assert_eq!(got.len(), span.blocks);
        assert_eq!(&sealed[sealed.len() - got.len()..], &got[..]);
        assert_eq!(
            span.packets,
            got.iter()
                .map(|b| Records::over(b).count() as u64)
                .sum::<u64>()
        );
        // Everything given back: only the decode buffer stays charged.
        drop(r.take_block(0, None));
        while r.evict_oldest() {}
        drop(slot);
        assert_eq!(r.span().held_bytes, 0);
    }

    #[test]
    fn packed_blocks_held_by_a_window_count_against_the_limit() {
        let r = compressed(64 * 4096, 4096);
        let frames = roce_frames(4_000, 4, 0);
        let mut slot = None;
        for (i, f) in frames.iter().enumerate() {
            assert!(r.append(&mut slot, 0, i as i64, f.len() as u32, f, None));
        }
        if let Some(w) = slot.take() {
            r.seal(w);
        }
        assert!(r.pack_now() > 10);
        let (tx, rx) = mpsc::channel();
        r.subscribe(0, tx); // a window holding every block, packed ones included
        while r.evict_oldest() {}
        let decode = 4096; // one interface's decode buffer
        let pinned = r.span().allocated_bytes;
        assert!(
            pinned > decode + 10 * 64,
            "packed bytes still charged: {pinned}"
        );
        drop(rx);
        let idle = r.span().idle_bytes;
        assert_eq!(r.span().allocated_bytes, decode + idle, "all given back");
        assert!(pinned > r.span().allocated_bytes);
    }

    #[test]
    fn a_ring_too_small_for_the_decode_buffers_does_not_compress() {
        assert!(!compressed(4 * 4096, 4096).compresses());
        assert!(compressed(5 * 4096, 4096).compresses());
    }
}
