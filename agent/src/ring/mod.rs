//! The ring: the last seconds of captured packets, bounded by bytes and by age.
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
//! Memory: every block buffer comes from one pool of `memory_limit / block_size`
//! buffers. A buffer returns to the pool when its last reference is dropped, so
//! blocks pinned by dumps in flight count against the limit. When the pool is
//! empty the oldest ring block is evicted (counted); if every buffer is pinned by
//! dumps, a live capture drops the packet (counted as `ring_full_drops`) rather
//! than wait, while a replay waits (it has no deadline). A `ring-prefault`
//! thread keeps a few free buffers allocated and page-faulted ahead of the
//! capture ([`RingConfig::prefault`]), so a capture thread filling a cold ring
//! does not stop on a page fault every 4 KiB.
//!
//! Time: each interface has a *watermark*, the capture time up to which all of
//! its packets are sealed. Windows close when the lowest watermark passes their
//! end, which is how a window knows it has every packet it asked for.

pub mod codec;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::capture_file::pcapng::{self, EPB_OVERHEAD};

/// Default size of one block.
pub const DEFAULT_BLOCK_SIZE: usize = 256 * 1024;

/// A watermark meaning "this interface will deliver nothing more".
pub const WATERMARK_END: i64 = i64::MAX;

/// Sizes of the ring.
#[derive(Debug, Clone, Copy)]
pub struct RingConfig {
    /// Total bytes of block buffers, including blocks held by dumps in flight.
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
}

/// Default [`RingConfig::prefault`]: 32 MiB of warm buffers.
pub const DEFAULT_PREFAULT: usize = 32 << 20;

/// One sealed block of records from one interface.
#[derive(Debug)]
pub struct Block {
    buf: Vec<u8>,
    len: usize,
    iface: u16,
    packets: u32,
    first_ts: i64,
    min_ts: i64,
    last_ts: i64,
    /// Captured bytes of all records.
    data_bytes: u64,
    /// Original (wire) lengths of all records.
    wire_bytes: u64,
    pool: Weak<Pool>,
}

impl Block {
    /// Interface index (position in the ring's interface list).
    pub fn iface(&self) -> u16 {
        self.iface
    }
    /// Records in the block.
    pub fn packets(&self) -> u32 {
        self.packets
    }
    /// Timestamp of the first record (ns since the Unix epoch).
    pub fn first_ts(&self) -> i64 {
        self.first_ts
    }
    /// Highest timestamp of any record in the block.
    pub fn last_ts(&self) -> i64 {
        self.last_ts
    }
    /// Lowest timestamp of any record in the block (capture clocks can step back).
    pub fn min_ts(&self) -> i64 {
        self.min_ts
    }
    /// Captured bytes of all records.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }
    /// Original (on the wire) lengths of all records.
    pub fn wire_bytes(&self) -> u64 {
        self.wire_bytes
    }
    /// Every record, as consecutive pcapng Enhanced Packet Blocks.
    pub fn pcapng(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// The record starting at byte `offset`, and the offset of the next one.
    pub fn record_at(&self, offset: usize) -> Option<(Record<'_>, usize)> {
        let epb = pcapng::parse_epb(self.buf[..self.len].get(offset..)?)?;
        let record = Record {
            ts: epb.ts_ns,
            orig_len: epb.orig_len,
            data: epb.data,
            pcapng: epb.block,
        };
        Some((record, offset + epb.block.len()))
    }
    /// Iterate over the records.
    pub fn records(&self) -> Records<'_> {
        Records {
            block: self,
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
    block: &'a Block,
    offset: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;
    fn next(&mut self) -> Option<Record<'a>> {
        let (rec, next) = self.block.record_at(self.offset)?;
        self.offset = next;
        Some(rec)
    }
}

/// The pool of block buffers: the one place memory is bounded.
#[derive(Debug)]
struct Pool {
    free: Mutex<Vec<Vec<u8>>>,
    returned: Condvar,
    /// Signalled when a buffer is taken, for the prefault thread.
    taken: Condvar,
    allocated: AtomicU64,
    max_blocks: u64,
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
        self.reserve().then(|| vec![0u8; self.block_size])
    }
    /// Count one more buffer as allocated, if under the limit.
    fn reserve(&self) -> bool {
        self.allocated
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_blocks).then_some(n + 1)
            })
            .is_ok()
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
        if !pool.reserve() {
            return; // the pool is at its limit: every buffer exists
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
        // Block sizes and records are multiples of 4, so `room` is too and the
        // padded data always fits when the data does.
        let room = b.buf.len().saturating_sub(b.len + EPB_OVERHEAD);
        if room < data.len() && b.packets > 0 {
            return false;
        }
        let data = &data[..data.len().min(room)];
        let ts = ts.max(0); // as the block will hold it
        let total = pcapng::epb_len(data.len());
        let Some(rec) = b.buf.get_mut(b.len..b.len + total) else {
            return false; // a block smaller than one record's framing
        };
        pcapng::put_epb(rec, u32::from(b.iface), ts, orig_len, data);
        b.len += total;
        if b.packets == 0 {
            b.first_ts = ts;
            b.min_ts = ts;
            b.last_ts = ts;
        } else {
            b.min_ts = b.min_ts.min(ts);
            b.last_ts = b.last_ts.max(ts);
        }
        b.packets += 1;
        b.data_bytes += data.len() as u64;
        b.wire_bytes += u64::from(orig_len);
        true
    }
    /// Records written so far.
    pub fn packets(&self) -> u32 {
        self.block.packets
    }
    /// Timestamp of the first record, if any.
    pub fn first_ts(&self) -> Option<i64> {
        (self.block.packets > 0).then_some(self.block.first_ts)
    }
}

/// What a window receives from the ring, in order.
#[derive(Debug)]
pub enum RingEvent {
    /// A sealed block (also the blocks already in the ring when it subscribed).
    Block(Arc<Block>),
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
}

/// A point-in-time view of the ring for status and coverage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSpan {
    /// Oldest capture time the ring can still deliver every packet from.
    pub reaches_back_to: i64,
    /// Whether that limit comes from evicting blocks (memory or age), rather
    /// than from when capturing started.
    pub evicted: bool,
    /// Newest packet sealed.
    pub newest_ts: Option<i64>,
    /// Blocks held by the ring.
    pub blocks: usize,
    /// Bytes of buffers allocated (ring + pinned by dumps + free for reuse).
    pub allocated_bytes: u64,
}

#[derive(Debug)]
struct State {
    blocks: VecDeque<Arc<Block>>,
    watermarks: Vec<i64>,
    low_watermark: i64,
    subscribers: Vec<Sender<RingEvent>>,
    /// Every packet with a timestamp after this is still in the ring (or pinned).
    complete_after: i64,
    /// When capturing started (the initial `complete_after`).
    started_at: i64,
    newest_ts: Option<i64>,
}

/// The shared ring. Cheap to clone through `Arc`.
#[derive(Debug)]
pub struct Ring {
    pool: Arc<Pool>,
    /// Free buffers the prefault thread keeps ready ([`RingConfig::prefault`]).
    prefault_keep: usize,
    state: Mutex<State>,
    max_age_ns: i64,
    stats: RingStats,
}

impl Ring {
    /// The body of the `ring-prefault` thread, for its owner to start
    /// (`None` when [`RingConfig::prefault`] is 0): keeps free buffers
    /// faulted in ahead of the capture threads until `stop` is cancelled, the
    /// ring is dropped, or the pool reaches its limit. Best effort: without
    /// it, capture threads fault pages in themselves.
    pub fn prefaulter(&self, stop: CancellationToken) -> Option<impl FnOnce() + Send + 'static> {
        let weak = Arc::downgrade(&self.pool);
        let keep = self.prefault_keep;
        (keep > 0).then_some(move || prefault(weak, keep, stop))
    }

    /// A ring for `interfaces` interfaces, whose packets are all newer than `started_at`
    /// (ns since the epoch): the ring can't reach back before the capture started.
    pub fn new(config: RingConfig, interfaces: usize, started_at: i64) -> Arc<Ring> {
        let block_size = config.block_size.max(4096) & !7;
        let max_blocks = (config.memory_limit / block_size).max(2) as u64;
        let pool = Arc::new(Pool {
            free: Mutex::new(Vec::new()),
            returned: Condvar::new(),
            taken: Condvar::new(),
            allocated: AtomicU64::new(0),
            max_blocks,
            block_size,
        });
        Arc::new(Ring {
            prefault_keep: config.prefault / block_size,
            pool,
            state: Mutex::new(State {
                blocks: VecDeque::new(),
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
            }),
            max_age_ns: i64::try_from(config.max_age.as_nanos()).unwrap_or(i64::MAX),
            stats: RingStats::default(),
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
        self.pool.max_blocks * self.pool.block_size as u64
    }

    /// A fresh block for interface `iface`. Evicts the oldest blocks when the pool
    /// is empty. `None` when every buffer is pinned by dumps in flight
    /// (`wait = false`), or after `wait` elapsed without one coming back.
    pub fn take_block(&self, iface: u16, wait: Option<Duration>) -> Option<BlockWriter> {
        loop {
            if let Some(buf) = self.pool.try_get() {
                return Some(BlockWriter {
                    block: Block {
                        buf,
                        len: 0,
                        iface,
                        packets: 0,
                        first_ts: 0,
                        min_ts: 0,
                        last_ts: 0,
                        data_bytes: 0,
                        wire_bytes: 0,
                        pool: Arc::downgrade(&self.pool),
                    },
                });
            }
            // Evict outside the pool lock: dropping the Arc returns the buffer.
            let evicted = {
                let mut st = self.lock();
                let b = st.blocks.pop_front();
                if let Some(b) = &b {
                    st.complete_after = st.complete_after.max(b.last_ts);
                }
                b
            };
            match evicted {
                Some(b) => {
                    self.stats.evicted_blocks.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .evicted_packets
                        .fetch_add(u64::from(b.packets), Ordering::Relaxed);
                }
                None => {
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
        if block.packets == 0 {
            return;
        }
        self.stats
            .packets
            .fetch_add(u64::from(block.packets), Ordering::Relaxed);
        self.stats
            .bytes
            .fetch_add(block.data_bytes, Ordering::Relaxed);
        let block = Arc::new(block);
        let mut aged = Vec::new();
        {
            let mut st = self.lock();
            let newest = st.newest_ts.map_or(block.last_ts, |n| n.max(block.last_ts));
            st.newest_ts = Some(newest);
            let horizon = newest.saturating_sub(self.max_age_ns);
            while st.blocks.front().is_some_and(|b| b.last_ts < horizon) {
                if let Some(b) = st.blocks.pop_front() {
                    st.complete_after = st.complete_after.max(b.last_ts);
                    aged.push(b);
                }
            }
            st.subscribers
                .retain(|s| s.send(RingEvent::Block(Arc::clone(&block))).is_ok());
            st.blocks.push_back(block);
        }
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
    /// `start` (those in the ring now, then each one sealed later) and every
    /// watermark rise. Atomic with sealing: no block is missed or sent twice.
    pub fn subscribe(&self, start: i64, tx: Sender<RingEvent>) -> RingSpan {
        let mut st = self.lock();
        for b in st.blocks.iter().filter(|b| b.last_ts >= start) {
            if tx.send(RingEvent::Block(Arc::clone(b))).is_err() {
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
        RingSpan {
            reaches_back_to: st.complete_after.saturating_add(1),
            evicted: st.complete_after > st.started_at,
            newest_ts: st.newest_ts,
            blocks: st.blocks.len(),
            allocated_bytes: self.pool.allocated.load(Ordering::Relaxed)
                * self.pool.block_size as u64,
        }
    }

    /// The lowest watermark of all interfaces.
    pub fn low_watermark(&self) -> i64 {
        self.lock().low_watermark
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn ring(limit: usize, block: usize) -> Arc<Ring> {
        Ring::new(
            RingConfig {
                memory_limit: limit,
                block_size: block,
                max_age: Duration::from_secs(3600),
                prefault: 0,
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
                memory_limit: 8 * 4096,
                block_size: 4096,
                max_age: Duration::from_secs(3600),
                prefault: 3 * 4096,
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
        for _ in 0..6 {
            held.push(r.take_block(0, None).expect("block"));
        }
        settle(&r, 8); // at the limit: nothing beyond it, now or later
        assert!(r.take_block(0, None).is_none(), "all 8 held");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(allocated(&r), 8);
        stop.cancel();
        thread.join().expect("prefault thread ends when stopped");
    }

    #[test]
    fn watermark_is_the_lowest_interface() {
        let r = Ring::new(
            RingConfig {
                memory_limit: 1 << 20,
                block_size: 4096,
                max_age: Duration::from_secs(1),
                prefault: 0,
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
                RingEvent::Block(_) => None,
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
}
