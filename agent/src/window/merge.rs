//! The merge: records of every interface's pinned blocks, in time order, cut
//! to the window. It decides what goes out and in what order; the [`Sink`]
//! (the writer) puts it in the file.
//!
//! A ring block goes out whole, one write straight from the ring, when every
//! record in it falls in the window and comes before the other interfaces'
//! next records: exactly what the per-record merge would write. Otherwise
//! records go one by one. On equal times the lower interface index goes first.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use crate::ring::{Block, Record};

/// Where merged packets go.
pub(crate) trait Sink {
    /// A whole block of interface `iface`.
    fn block(&mut self, iface: usize, block: &Block) -> io::Result<()>;
    /// One record of interface `iface`.
    fn record(&mut self, iface: usize, record: &Record<'_>) -> io::Result<()>;
}

/// One interface's pinned blocks, read front to back.
struct Queue {
    blocks: VecDeque<(Arc<Block>, usize)>,
    /// Timestamp of the record at the front (kept, so choosing the next record
    /// across interfaces decodes nothing).
    head: Option<i64>,
}

impl Queue {
    /// Drop exhausted blocks (their buffers may go back to the pool) and
    /// re-read the front record's timestamp.
    fn refresh(&mut self) {
        self.head = loop {
            let Some((b, off)) = self.blocks.front() else {
                break None;
            };
            match b.record_at(*off) {
                Some((r, _)) => break Some(r.ts),
                None => {
                    self.blocks.pop_front();
                }
            }
        };
    }
}

/// Every interface's queue of blocks not yet written.
pub(crate) struct Queues {
    queues: Vec<Queue>,
}

impl Queues {
    /// Queues for `interfaces` interfaces.
    pub(crate) fn new(interfaces: usize) -> Queues {
        Queues {
            queues: (0..interfaces)
                .map(|_| Queue {
                    blocks: VecDeque::new(),
                    head: None,
                })
                .collect(),
        }
    }

    /// A block sealed on its interface (blocks of one interface come in order).
    pub(crate) fn push(&mut self, block: Arc<Block>) {
        if let Some(q) = self.queues.get_mut(usize::from(block.iface())) {
            q.blocks.push_back((block, 0));
            if q.head.is_none() {
                q.refresh();
            }
        }
    }

    /// Release every block still held.
    pub(crate) fn clear(&mut self) {
        self.queues.clear();
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
                let last = b.last_ts();
                self.queues
                    .iter()
                    .enumerate()
                    .all(|(j, q)| j == i || q.head.is_none_or(|h| last < h || (j > i && last == h)))
            });
            let q = &mut self.queues[i];
            let Some((block, off)) = q.blocks.front_mut() else {
                break;
            };
            if *off == 0
                && before_others
                && block.min_ts() >= start
                && block.last_ts() <= end.min(limit)
            {
                sink.block(i, block)?;
                q.blocks.pop_front();
            } else {
                let Some((rec, next)) = block.record_at(*off) else {
                    q.refresh();
                    continue;
                };
                if ts >= start && ts <= end {
                    sink.record(i, &rec)?;
                }
                *off = next;
            }
            q.refresh();
        }
        Ok(())
    }
}
