//! The merge: records of every interface's pinned blocks, in time order, cut
//! to the window. It decides what goes out and in what order; the [`Sink`]
//! (the writer) puts it in the file.
//!
//! A ring block goes out whole, one write straight from the ring, when every
//! record in it falls in the window and comes before the other interfaces'
//! next records: exactly what the per-record merge would write. Otherwise
//! records go one by one. On equal times the lower interface index goes first.
//!
//! Packed blocks (the ring's older history, compressed) are decoded when they
//! reach the front of their interface's queue, one per interface at a time,
//! into the ring's decode buffers ([`InflateLease`]), and from there they are
//! merged exactly as raw ones: the file holds the same bytes either way. The
//! window holds the decode buffers only while it has packed blocks to read.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::ring::codec::Decoder;
use crate::ring::{record_at, Block, BlockMeta, InflateLease, Packed, Record, Ring, RingEvent};

/// Longest a window waits for another window to give the decode buffers back.
const LEASE_WAIT: Duration = Duration::from_secs(60);

/// Where merged packets go.
pub(crate) trait Sink {
    /// A whole block of interface `iface`: its records as pcapng EPBs.
    fn block(&mut self, iface: usize, pcapng: &[u8], meta: &BlockMeta) -> io::Result<()>;
    /// One record of interface `iface`.
    fn record(&mut self, iface: usize, record: &Record<'_>) -> io::Result<()>;
}

/// A block waiting in a queue.
enum Item {
    Raw(Arc<Block>),
    Packed(Arc<Packed>),
    /// Decoded into this interface's decode buffer.
    Inflated(BlockMeta),
}

/// Decodes packed blocks for one window.
struct Inflater {
    ring: Arc<Ring>,
    decoder: Decoder,
    lease: Option<InflateLease>,
    /// Packed or inflated items in all queues.
    pending: usize,
    /// Packets of packed blocks that could not be decoded (left out).
    lost: u64,
}

impl Inflater {
    /// Decode `p` into interface `iface`'s buffer; `None` (counted, logged) if
    /// it cannot be.
    fn inflate(&mut self, iface: usize, p: &Packed) -> Option<BlockMeta> {
        if self.lease.is_none() {
            let slot = self.ring.inflate_slot()?;
            self.lease = slot.lease(LEASE_WAIT);
            if self.lease.is_none() {
                tracing::warn!("no decode buffer came back from another window in {LEASE_WAIT:?}: a packed block of the ring is left out of this capture");
            }
        }
        let buf = self.lease.as_mut()?.buffer(iface)?;
        match self.decoder.decode(p.bytes(), buf) {
            Ok(()) if buf.len() as u64 == p.meta().pcapng_bytes => Some(*p.meta()),
            outcome => {
                self.ring
                    .stats()
                    .decode_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    ?outcome,
                    "a packed ring block does not decode: its packets are left out of this capture"
                );
                None
            }
        }
    }

    fn bytes(&self, iface: usize) -> &[u8] {
        self.lease.as_ref().map_or(&[], |l| l.bytes(iface))
    }
}

/// One interface's pinned blocks, read front to back.
struct Queue {
    blocks: VecDeque<(Item, usize)>,
    /// Timestamp of the record at the front (kept, so choosing the next record
    /// across interfaces decodes nothing).
    head: Option<i64>,
}

/// The EPB bytes of a queue item.
fn bytes_of<'a>(item: &'a Item, iface: usize, inflater: &'a Option<Inflater>) -> &'a [u8] {
    match item {
        Item::Raw(b) => b.pcapng(),
        Item::Inflated(_) => inflater.as_ref().map_or(&[], |i| i.bytes(iface)),
        Item::Packed(_) => &[],
    }
}

fn meta_of(item: &Item) -> &BlockMeta {
    match item {
        Item::Raw(b) => b.meta(),
        Item::Packed(p) => p.meta(),
        Item::Inflated(m) => m,
    }
}

impl Queue {
    /// Drop the front block (its buffer may go back to the pool).
    fn pop(&mut self, inflater: &mut Option<Inflater>) {
        if let Some((item, _)) = self.blocks.pop_front() {
            if !matches!(item, Item::Raw(_)) {
                if let Some(i) = inflater.as_mut() {
                    i.pending = i.pending.saturating_sub(1);
                }
            }
        }
    }

    /// Decode the front block if it is packed, drop exhausted blocks, and
    /// re-read the front record's timestamp.
    fn refresh(&mut self, iface: usize, inflater: &mut Option<Inflater>) {
        self.head = loop {
            let Some((item, off)) = self.blocks.front_mut() else {
                break None;
            };
            if let Item::Packed(p) = item {
                match inflater.as_mut().map(|i| (i.inflate(iface, p), i)) {
                    Some((Some(meta), _)) => *item = Item::Inflated(meta),
                    lost => {
                        if let Some((_, i)) = lost {
                            i.lost += u64::from(p.meta().packets);
                        }
                        self.pop(inflater);
                        continue;
                    }
                }
            }
            let off = *off;
            match self
                .blocks
                .front()
                .and_then(|(item, _)| record_at(bytes_of(item, iface, inflater), off))
            {
                Some((r, _)) => break Some(r.ts),
                None => self.pop(inflater),
            }
        };
    }
}

/// Every interface's queue of blocks not yet written.
pub(crate) struct Queues {
    queues: Vec<Queue>,
    inflater: Option<Inflater>,
}

impl Queues {
    /// Queues for `interfaces` interfaces of `ring`.
    pub(crate) fn new(interfaces: usize, ring: &Arc<Ring>) -> Queues {
        Queues {
            queues: (0..interfaces)
                .map(|_| Queue {
                    blocks: VecDeque::new(),
                    head: None,
                })
                .collect(),
            inflater: ring.compresses().then(|| Inflater {
                ring: Arc::clone(ring),
                decoder: Decoder::new(),
                lease: None,
                pending: 0,
                lost: 0,
            }),
        }
    }

    /// A block from the ring (blocks of one interface come in order); other
    /// events are ignored.
    pub(crate) fn push(&mut self, event: RingEvent) {
        let item = match event {
            RingEvent::Block(b) => Item::Raw(b),
            RingEvent::Packed(p) => {
                if let Some(i) = self.inflater.as_mut() {
                    i.pending += 1;
                }
                Item::Packed(p)
            }
            RingEvent::Watermark(_) => return,
        };
        let iface = usize::from(meta_of(&item).iface);
        if let Some(q) = self.queues.get_mut(iface) {
            q.blocks.push_back((item, 0));
            if q.head.is_none() {
                q.refresh(iface, &mut self.inflater);
            }
        }
    }

    /// Packets of packed blocks that could not be decoded, and are not in the file.
    pub(crate) fn lost_packets(&self) -> u64 {
        self.inflater.as_ref().map_or(0, |i| i.lost)
    }

    /// Release every block still held.
    pub(crate) fn clear(&mut self) {
        self.queues.clear();
        self.inflater = None;
    }

    /// Send every record with ts <= `limit` to `sink`, merged across
    /// interfaces by time; records outside [start, end] are skipped.
    pub(crate) fn emit_until(
        &mut self,
        start: i64,
        end: i64,
        limit: i64,
        sink: &mut impl Sink,
    ) -> io::Result<()> {
        loop {
            // Few interfaces (1–8): a linear scan beats a heap.
            let mut best: Option<(usize, i64)> = None;
            for (i, q) in self.queues.iter().enumerate() {
                if let Some(ts) = q.head {
                    if best.is_none_or(|(_, b)| ts < b) {
                        best = Some((i, ts));
                    }
                }
            }
            let Some((i, ts)) = best else { break };
            if ts > limit {
                break;
            }
            let before_others = self.queues[i].blocks.front().is_some_and(|(b, _)| {
                let last = meta_of(b).last_ts;
                self.queues
                    .iter()
                    .enumerate()
                    .all(|(j, q)| j == i || q.head.is_none_or(|h| last < h || (j > i && last == h)))
            });
            let q = &mut self.queues[i];
            let Some((item, off)) = q.blocks.front_mut() else {
                break;
            };
            let meta = *meta_of(item);
            let bytes = bytes_of(item, i, &self.inflater);
            if *off == 0 && before_others && meta.min_ts >= start && meta.last_ts <= end.min(limit)
            {
                sink.block(i, bytes, &meta)?;
                q.pop(&mut self.inflater);
            } else {
                let Some((rec, next)) = record_at(bytes, *off) else {
                    q.refresh(i, &mut self.inflater);
                    continue;
                };
                if ts >= start && ts <= end {
                    sink.record(i, &rec)?;
                }
                *off = next;
            }
            q.refresh(i, &mut self.inflater);
        }
        // Packed blocks only come when the window subscribes: once they are
        // read, the decode buffers go back for other windows.
        if let Some(inf) = self.inflater.as_mut() {
            if inf.pending == 0 {
                inf.lease = None;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::tests::roce_frames;
    use crate::ring::RingConfig;
    use std::sync::mpsc;

    /// What the writer would put in the file, as one byte string.
    #[derive(Default)]
    struct Bytes(Vec<u8>);
    impl Sink for Bytes {
        fn block(&mut self, _: usize, pcapng: &[u8], _: &BlockMeta) -> io::Result<()> {
            self.0.extend_from_slice(pcapng);
            Ok(())
        }
        fn record(&mut self, _: usize, r: &Record<'_>) -> io::Result<()> {
            self.0.extend_from_slice(r.pcapng);
            Ok(())
        }
    }

    fn ring(compress: bool) -> Arc<Ring> {
        Ring::new(
            RingConfig {
                memory_limit: 8 << 20, // 512 blocks: all of them fit raw
                block_size: 16 << 10,
                max_age: Duration::from_secs(3600),
                prefault: 0,
                compress,
            },
            2,
            0,
        )
    }

    /// Feed `frames` to each ring in `rings`, frame `i` on the interface and at
    /// the time `at(i)` gives, then seal everything and let every window close.
    fn fill(rings: &[&Arc<Ring>], frames: &[Vec<u8>], at: impl Fn(usize) -> (usize, i64)) {
        for r in rings {
            let mut slots: [Option<crate::ring::BlockWriter>; 2] = [None, None];
            for (i, f) in frames.iter().enumerate() {
                let (iface, ts) = at(i);
                assert!(r.append(&mut slots[iface], iface as u16, ts, f.len() as u32, f, None));
            }
            for w in slots.iter_mut().filter_map(Option::take) {
                r.seal(w);
            }
            r.advance_all(i64::MAX - 1);
        }
    }

    /// The window [start, end] as the merge writes it from `ring`, and how
    /// many packed blocks it read.
    fn window(ring: &Arc<Ring>, start: i64, end: i64) -> (Vec<u8>, usize) {
        let (bytes, packed, _) = window_lost(ring, start, end);
        (bytes, packed)
    }

    /// [`window`], and the packets it could not decode.
    fn window_lost(ring: &Arc<Ring>, start: i64, end: i64) -> (Vec<u8>, usize, u64) {
        let (tx, rx) = mpsc::channel();
        ring.subscribe(start, tx);
        let mut q = Queues::new(2, ring);
        let mut packed = 0;
        for ev in rx.try_iter() {
            packed += usize::from(matches!(ev, RingEvent::Packed(_)));
            q.push(ev);
        }
        let mut out = Bytes::default();
        q.emit_until(start, end, end, &mut out).expect("vec");
        if end == i64::MAX - 1 {
            assert!(
                q.inflater.as_ref().is_none_or(|i| i.lease.is_none()),
                "every packed block read: the decode buffers are given back"
            );
        }
        (out.0, packed, q.lost_packets())
    }

    #[test]
    fn a_window_from_packed_blocks_is_byte_for_byte_the_raw_one() {
        let (plain, packing) = (ring(false), ring(true));
        let frames = roce_frames(30_000, 16, 40);
        // Two interfaces; interface 1's clock runs a little behind and
        // sometimes ties with interface 0's.
        fill(&[&plain, &packing], &frames, |i| {
            let iface = usize::from(i % 3 == 0);
            (iface, 1_000_000 + i as i64 * 100 - iface as i64 * 150)
        });
        let packed = packing.pack_now();
        assert!(packed > 100, "{packed} {:?}", packing.span());
        assert_eq!(plain.span().packets, packing.span().packets);
        let last = 1_000_000 + 30_000 * 100;
        for (start, end) in [
            (0, i64::MAX - 1),
            (1_000_000 + 5_000 * 100 + 37, 1_000_000 + 20_000 * 100),
            (1_000_000 + 12_345 * 100, last - 1_000),
        ] {
            let (want, none) = window(&plain, start, end);
            let (got, packed) = window(&packing, start, end);
            assert_eq!(none, 0);
            assert!(
                packed > 5,
                "window {start}..{end} read {packed} packed blocks"
            );
            assert!(!want.is_empty());
            assert!(got == want, "window {start}..{end} differs");
        }
    }

    #[test]
    fn a_packed_block_that_does_not_decode_is_left_out_and_counted() {
        let r = ring(true);
        let frames = roce_frames(5_000, 4, 0);
        fill(&[&r], &frames, |i| (0, i as i64));
        assert!(r.pack_now() > 3);
        let all = r.span().packets;
        let cut = r.cut_oldest_packed();
        assert!(cut > 0);
        let (bytes, _, lost) = window_lost(&r, 0, i64::MAX - 1);
        assert_eq!(lost, u64::from(cut));
        let written = crate::ring::Records::over(&bytes).count() as u64;
        assert_eq!(written + lost, all, "every other packet is written");
        assert_eq!(r.stats().decode_errors.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn two_compressor_threads_pack_every_block_once_and_windows_stay_exact() {
        let (plain, packing) = (ring(false), ring(true));
        let stop = tokio_util::sync::CancellationToken::new();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let run = packing
                    .compressor(vec![1, 1], stop.clone())
                    .expect("compresses");
                std::thread::spawn(run)
            })
            .collect();
        let frames = roce_frames(30_000, 16, 40);
        fill(&[&plain, &packing], &frames, |i| {
            (i % 2, 1_000_000 + i as i64 * 100)
        });
        let start = std::time::Instant::now();
        while packing.compressor_behind() > 0
            || packing.span().packed_blocks + 2 < packing.span().blocks
        {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{:?}",
                packing.span()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.cancel();
        for t in threads {
            t.join().expect("compressor ends");
        }
        let span = packing.span();
        assert_eq!(
            packing.stats().packed_blocks.load(Ordering::Relaxed),
            span.packed_blocks as u64,
            "each block packed once"
        );
        let (want, _) = window(&plain, 0, i64::MAX - 1);
        let (got, packed) = window(&packing, 0, i64::MAX - 1);
        assert!(packed > 100);
        assert!(got == want);
    }

    #[test]
    fn two_windows_reading_packed_blocks_take_turns_with_the_decode_buffers() {
        let (plain, packing) = (ring(false), ring(true));
        let frames = roce_frames(20_000, 8, 0);
        fill(&[&plain, &packing], &frames, |i| (0, i as i64 * 10));
        assert!(packing.pack_now() > 20);
        let (want, _) = window(&plain, 0, i64::MAX - 1);
        let windows: Vec<_> = (0..2)
            .map(|_| {
                let r = Arc::clone(&packing);
                std::thread::spawn(move || window(&r, 0, i64::MAX - 1))
            })
            .collect();
        for w in windows {
            let (got, packed) = w.join().expect("window");
            assert!(packed > 20);
            assert!(got == want, "both windows whole and exact");
        }
        assert_eq!(packing.stats().decode_errors.load(Ordering::Relaxed), 0);
        // Both gave the buffers back: a third window gets them at once.
        let slot = packing.inflate_slot().expect("compresses");
        assert!(slot.lease(Duration::ZERO).is_some());
    }
}
