//! The compressor thread, which packs older raw blocks, and the decode buffers
//! windows unpack them into.
//!
//! Which block to pack is decided under the ring lock from sequence numbers
//! alone; the encoding runs outside it, and the packed block replaces the raw
//! one only if the raw one is still where it was. So the capture thread waits
//! for the compressor no longer than for a seal, and a block evicted while
//! being packed is simply not replaced.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::codec::Encoder;
use super::{Block, Packed, Pool, Ring, Stored};

impl Ring {
    /// The body of a `ring-compress` thread, for its owner to start (`None`
    /// when the ring does not compress): packs every block but the newest few
    /// until `stop` is cancelled or the ring is dropped. `linktypes` are the
    /// interfaces' pcap link types, by ring interface index. Several threads
    /// share the work, each block packed by one.
    pub fn compressor(
        self: &Arc<Self>,
        linktypes: Vec<u32>,
        stop: CancellationToken,
    ) -> Option<impl FnOnce() + Send + 'static> {
        let weak = Arc::downgrade(self);
        self.compresses()
            .then_some(move || compress(weak, linktypes, stop))
    }

    /// Claim the oldest raw block not yet claimed by a compressor thread:
    /// every block but the newest `keep_raw` is packed, oldest first, each by
    /// one thread. After a burst the compressors catch up through every block
    /// still held; blocks evicted before they came to them are simply passed.
    fn next_to_pack(&self) -> Option<(u64, Arc<Block>)> {
        let mut st = self.lock();
        let keep = self.keep_raw as u64;
        let end = st.front_seq + st.blocks.len() as u64;
        let target_end = end.saturating_sub(keep);
        let mut next = st.pack_next.max(st.front_seq);
        let mut claimed = None;
        while next < target_end {
            let idx = (next - st.front_seq) as usize;
            next += 1;
            if let Some(Stored::Raw(b)) = st.blocks.get(idx) {
                claimed = Some((next - 1, Arc::clone(b)));
                break;
            }
        }
        st.pack_next = next;
        claimed
    }

    /// Pack `block`, sequence number `seq`, with `encoder`, and put it in the
    /// ring in its place if it is still there. `out` is scratch.
    fn pack(&self, seq: u64, block: Arc<Block>, encoder: &mut Encoder, out: &mut Vec<u8>) {
        out.clear();
        let packs = encoder.encode(block.pcapng(), out).is_ok();
        // A raw block takes its whole buffer; packing pays when it takes less.
        if !packs || out.len() >= self.pool.block_size {
            self.stats.unpacked_blocks.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let len = out.len() as u64;
        // Charge the packed bytes before the raw buffer comes back: the ring
        // never holds more than its limit, even for a moment. Idle buffers
        // beyond the warm ones go first, then the oldest history.
        while !self.pool.reserve(len) {
            if !self.pool.shrink(self.prefault_keep.max(1))
                && !self.evict_oldest()
                && !self.pool.shrink(0)
            {
                self.stats.unpacked_blocks.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let packed = Stored::Packed(Arc::new(Packed {
            bytes: out.as_slice().into(),
            meta: block.meta,
            pool: Arc::downgrade(&self.pool),
        }));
        let replaced = {
            let mut st = self.lock();
            let idx = seq.checked_sub(st.front_seq).map(|i| i as usize);
            match idx.and_then(|i| st.blocks.get(i).map(|s| (i, s))) {
                Some((i, Stored::Raw(b))) if Arc::ptr_eq(b, &block) => {
                    st.held.add(&packed, 1);
                    let old = std::mem::replace(&mut st.blocks[i], packed);
                    st.held.add(&old, -1);
                    Some(old)
                }
                _ => None, // evicted meanwhile: `packed` is dropped, its bytes released
            }
        };
        if replaced.is_some() {
            self.stats.packed_blocks.fetch_add(1, Ordering::Relaxed);
        }
        drop(replaced); // the raw buffer back to the pool (unless a window holds it)
                        // Buffers idle beyond the warm ones are history not kept: give their
                        // memory to the packed blocks to come.
        while self.pool.shrink(self.prefault_keep.max(2)) {}
        // `replaced` and `block` drop here, outside the lock: the raw buffer
        // goes back to the pool once no window holds it.
    }

    /// Pack every block the compressor would pack now, on this thread (Ethernet
    /// link type); returns how many were packed. For tests.
    #[cfg(test)]
    pub(crate) fn pack_now(&self) -> u64 {
        let before = self.stats.packed_blocks.load(Ordering::Relaxed);
        let (mut encoder, mut out) = (Encoder::new(), Vec::new());
        while let Some((seq, block)) = self.next_to_pack() {
            self.pack(seq, block, &mut encoder, &mut out);
        }
        self.stats.packed_blocks.load(Ordering::Relaxed) - before
    }

    /// Replace the oldest packed block by one whose bytes are cut in half (a bug
    /// in the codec, or memory gone bad); returns its packets. For tests.
    #[cfg(test)]
    pub(crate) fn cut_oldest_packed(&self) -> u32 {
        let mut st = self.lock();
        let Some(i) = st
            .blocks
            .iter()
            .position(|b| matches!(b, Stored::Packed(_)))
        else {
            return 0;
        };
        let Stored::Packed(p) = &st.blocks[i] else {
            return 0;
        };
        let cut = Stored::Packed(Arc::new(Packed {
            bytes: p.bytes[..p.bytes.len() / 2].into(),
            meta: p.meta,
            pool: Weak::new(),
        }));
        let packets = p.meta.packets;
        st.blocks[i] = cut;
        packets
    }

    /// Wait for a block to be sealed, or `timeout`.
    fn wait_for_seal(&self, timeout: Duration) {
        let st = self.lock();
        let _ = self.sealed.wait_timeout(st, timeout);
    }
}

fn compress(ring: Weak<Ring>, linktypes: Vec<u32>, stop: CancellationToken) {
    /// Counts the thread out however it ends, so a replay stops waiting for
    /// compressors that are gone.
    struct Running(Weak<Ring>);
    impl Drop for Running {
        fn drop(&mut self) {
            if let Some(r) = self.0.upgrade() {
                r.compressors.fetch_sub(1, Ordering::Relaxed);
                let _st = r.lock();
                r.packed.notify_all();
            }
        }
    }
    let _running = ring.upgrade().map(|r| {
        r.compressors.fetch_add(1, Ordering::Relaxed);
        Running(Arc::downgrade(&r))
    });
    let mut encoders: Vec<Encoder> = linktypes.into_iter().map(Encoder::with_linktype).collect();
    let mut fallback = Encoder::new();
    let mut out = Vec::new();
    loop {
        if stop.is_cancelled() {
            return;
        }
        let Some(ring) = ring.upgrade() else { return };
        match ring.next_to_pack() {
            Some((seq, block)) => {
                let encoder = encoders
                    .get_mut(usize::from(block.meta.iface))
                    .unwrap_or(&mut fallback);
                ring.pack(seq, block, encoder, &mut out);
                let _st = ring.lock();
                ring.packed.notify_all();
            }
            None => ring.wait_for_seal(Duration::from_millis(200)),
        }
    }
}

/// Buffers a window decodes packed blocks into: one per interface, charged to
/// the ring's budget when the ring is made, and lent to one window at a time
/// (a window holds them only while it reads packed blocks, which all come
/// first).
#[derive(Debug)]
pub struct InflateSlot {
    bufs: Mutex<Option<Vec<Vec<u8>>>>,
    back: Condvar,
}

impl InflateSlot {
    pub(super) fn new(pool: &Arc<Pool>, interfaces: usize) -> Arc<InflateSlot> {
        // A fresh pool: the limit was checked to leave room for these.
        let _ = pool.reserve((interfaces * pool.block_size) as u64);
        let bufs = (0..interfaces)
            .map(|_| Vec::with_capacity(pool.block_size))
            .collect();
        Arc::new(InflateSlot {
            bufs: Mutex::new(Some(bufs)),
            back: Condvar::new(),
        })
    }

    /// Every decode buffer, once the window holding them gives them back;
    /// `None` if that takes longer than `wait`.
    pub fn lease(self: &Arc<Self>, wait: Duration) -> Option<InflateLease> {
        let deadline = Instant::now() + wait;
        let mut bufs = self.bufs.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(b) = bufs.take() {
                return Some(InflateLease {
                    bufs: b,
                    slot: Arc::clone(self),
                });
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            bufs = self
                .back
                .wait_timeout(bufs, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// The decode buffers, lent to one window; they go back when it is dropped.
#[derive(Debug)]
pub struct InflateLease {
    bufs: Vec<Vec<u8>>,
    slot: Arc<InflateSlot>,
}

impl InflateLease {
    /// The buffer of interface `iface` (emptied), or `None` past the ring's interfaces.
    pub fn buffer(&mut self, iface: usize) -> Option<&mut Vec<u8>> {
        let b = self.bufs.get_mut(iface)?;
        b.clear();
        Some(b)
    }

    /// The bytes last decoded into interface `iface`'s buffer.
    pub fn bytes(&self, iface: usize) -> &[u8] {
        self.bufs.get(iface).map_or(&[], |b| b.as_slice())
    }
}

impl Drop for InflateLease {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut self.bufs);
        *self.slot.bufs.lock().unwrap_or_else(|p| p.into_inner()) = Some(bufs);
        self.slot.back.notify_one();
    }
}
