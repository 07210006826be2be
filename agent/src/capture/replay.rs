//! Replay: feed saved captures through the same ring as a live capture.
//!
//! Each file is one ring interface; several files are merged by timestamp.
//! Time is capture time: manual triggers (`--trigger-at`) fire when the replay
//! reaches them, after every earlier packet has been sealed, so what a window
//! finds in the ring is exactly what a live agent would have had. Unlike a live
//! capture, a replay never drops: when every ring buffer is pinned by windows
//! being written, it waits for one. At the end all blocks are sealed, the
//! watermark is raised to the last packet and then to the end, which closes
//! every open window.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{CaptureError, IfaceCounters, InterfaceInfo, TsPrecision};
use crate::capture_file::pcapng::InterfaceDesc;
use crate::capture_file::reader::{Interface, Reader, TsResol};
use crate::ring::{BlockWriter, Ring, WATERMARK_END};
use crate::units::FULL_SNAPLEN;

/// Read buffer per replayed file.
const READ_BUFFER: usize = 1 << 20;
/// Packets between updates of the shared per-interface counters.
const COUNTER_BATCH: u64 = 4096;

/// How fast to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Speed {
    /// As fast as the ring takes it.
    #[default]
    Max,
    /// At the pace the packets were captured.
    Realtime,
}

impl std::str::FromStr for Speed {
    type Err = String;
    fn from_str(s: &str) -> Result<Speed, String> {
        match s {
            "max" => Ok(Speed::Max),
            "1x" | "realtime" => Ok(Speed::Realtime),
            other => Err(format!("unknown replay speed `{other}`: use `max` or `1x`")),
        }
    }
}

/// One file being replayed. Its interfaces occupy ring indexes
/// `first_iface .. first_iface + n_ifaces`.
struct Source {
    path: PathBuf,
    reader: Reader<BufReader<File>>,
    first_iface: u16,
    n_ifaces: u16,
    /// The next packet, copied out of the reader: (ring iface, ts, orig_len), data in `buf`.
    next: Option<(u16, i64, u32)>,
    /// Interface id (in the file) of `next`, kept until the interface count is known.
    next_id: u32,
    buf: Vec<u8>,
}

impl Source {
    fn ring_iface(&self, interface_id: u32) -> u16 {
        self.first_iface + (interface_id.min(u32::from(self.n_ifaces.saturating_sub(1))) as u16)
    }

    /// Read the next packet into `buf`. A read error ends this file (reported).
    fn advance(&mut self) -> Result<(), String> {
        let first = self.first_iface;
        let last = self.n_ifaces.saturating_sub(1);
        match self.reader.next_packet() {
            Ok(Some(p)) => {
                let iface = first + (p.interface_id.min(u32::from(last)) as u16);
                self.buf.clear();
                self.buf.extend_from_slice(p.data);
                self.next = Some((iface, p.ts_ns, p.orig_len));
                self.next_id = p.interface_id;
                Ok(())
            }
            Ok(None) => {
                self.next = None;
                Ok(())
            }
            Err(e) => {
                self.next = None;
                Err(e.to_string())
            }
        }
    }
}

/// Opened files to replay.
pub struct Replay {
    sources: Vec<Source>,
    infos: Vec<InterfaceInfo>,
    /// Cut each packet where its headers end (`snaplen = "headers"`), as a live
    /// capture would have.
    headers_only: bool,
}

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    /// Packets fed to the ring.
    pub packets: u64,
    /// First and last packet time.
    pub first_ts: Option<i64>,
    /// Last packet time.
    pub last_ts: Option<i64>,
    /// Files that ended with a read error (truncated…), with the error.
    pub read_errors: Vec<String>,
}

impl Replay {
    /// Open every file (pcap or pcapng) and read its first packet. Each
    /// interface of each file becomes one ring interface.
    /// With `headers_only`, each packet is cut where its headers end, as a live
    /// capture at `snaplen = "headers"` would have kept it; otherwise packets keep
    /// the bytes the file holds.
    pub fn open(paths: &[PathBuf], headers_only: bool) -> Result<Replay, CaptureError> {
        let mut sources = Vec::new();
        let mut infos = Vec::new();
        for path in paths {
            let err = |message: String| CaptureError::Replay {
                path: path.display().to_string(),
                message,
            };
            let file = File::open(path).map_err(|e| err(e.to_string()))?;
            let reader = Reader::new(BufReader::with_capacity(READ_BUFFER, file))
                .map_err(|e| err(e.to_string()))?;
            let first_iface =
                u16::try_from(infos.len()).map_err(|_| err("too many interfaces".into()))?;
            let mut src = Source {
                path: path.clone(),
                reader,
                first_iface,
                n_ifaces: 0,
                next: None,
                next_id: 0,
                buf: Vec::with_capacity(2048),
            };
            // Reading the first packet also reads the interface blocks before it.
            src.advance().map_err(err)?;
            let file_ifaces: Vec<Interface> = src.reader.interfaces().to_vec();
            let n = file_ifaces.len().max(1);
            src.n_ifaces = u16::try_from(n).map_err(|_| err("too many interfaces".into()))?;
            if let Some((_, ts, len)) = src.next {
                // Map the first packet now that the interface count is known.
                src.next = Some((src.ring_iface(src.next_id), ts, len));
            }
            for i in 0..n {
                let iface = file_ifaces.get(i);
                let name = match iface.and_then(|f| f.name.clone()) {
                    Some(n) if file_ifaces.len() > 1 => format!("replay:{}:{n}", file_name(path)),
                    _ => format!("replay:{}", file_name(path)),
                };
                let precision = match iface.map(|f| f.ts_resol) {
                    Some(TsResol::Decimal(n)) if n < 9 => TsPrecision::Micro,
                    _ => TsPrecision::Nano,
                };
                infos.push(InterfaceInfo {
                    desc: InterfaceDesc {
                        name,
                        description: format!("replay of {}", path.display()),
                        linktype: iface.map_or(1, |f| u16::try_from(f.link_type).unwrap_or(1)),
                        snaplen: iface
                            .map_or(FULL_SNAPLEN, |f| {
                                if f.snaplen == 0 {
                                    FULL_SNAPLEN
                                } else {
                                    f.snaplen
                                }
                            })
                            .min(if headers_only {
                                crate::units::HEADERS_MAX
                            } else {
                                u32::MAX
                            }),
                        filter: String::new(),
                    },
                    precision,
                    counters: Arc::new(IfaceCounters::default()),
                    source: super::Source::File,
                });
            }
            sources.push(src);
        }
        Ok(Replay {
            sources,
            infos,
            headers_only,
        })
    }

    /// The interfaces (one per file), in ring order.
    pub fn interfaces(&self) -> &[InterfaceInfo] {
        &self.infos
    }

    /// Time of the earliest first packet of all files.
    pub fn first_ts(&self) -> Option<i64> {
        self.sources
            .iter()
            .filter_map(|s| s.next.map(|n| n.1))
            .min()
    }

    /// Feed every packet to `ring`, calling `fire(T, tag)` for each `(T, tag)`
    /// of `triggers_at` when the replay reaches T (and for those after the last
    /// packet, at the end). Returns when every file is read or `stop` is set.
    pub fn run<Tag: Copy>(
        mut self,
        ring: &Ring,
        speed: Speed,
        mut triggers_at: Vec<(i64, Tag)>,
        mut fire: impl FnMut(i64, Tag),
        stop: &CancellationToken,
    ) -> ReplayReport {
        triggers_at.sort_by_key(|&(t, _)| t);
        let mut pending = triggers_at.into_iter().peekable();
        let mut writers: Vec<Option<BlockWriter>> = (0..self.infos.len()).map(|_| None).collect();
        let mut report = ReplayReport::default();
        let wall_start = Instant::now();
        let mut last_flush = Instant::now();
        let first = self.first_ts();
        // Per-interface packets and bytes not yet added to the shared counters.
        let mut counted = vec![[0u64; 2]; self.infos.len()];
        loop {
            if stop.is_cancelled() {
                break;
            }
            // The source with the earliest next packet.
            let Some((i, (iface, ts, orig_len))) = self
                .sources
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.next.map(|n| (i, n)))
                .min_by_key(|&(_, (_, ts, _))| ts)
            else {
                break;
            };
            while let Some(&(t, tag)) = pending.peek() {
                if t >= ts {
                    break;
                }
                seal_all(ring, &mut writers);
                ring.advance_all(t);
                publish(&self.infos, &mut counted);
                fire(t, tag);
                pending.next();
            }
            if speed == Speed::Realtime {
                if let Some(first) = first {
                    pace(
                        ring,
                        &mut writers,
                        wall_start,
                        first,
                        ts,
                        &mut last_flush,
                        stop,
                    );
                }
            }
            let src = &mut self.sources[i];
            let data = if self.headers_only {
                let linktype = self
                    .infos
                    .get(usize::from(iface))
                    .map_or(1, |f| u32::from(f.desc.linktype));
                &src.buf[..crate::wire::headers_len(linktype, &src.buf).min(src.buf.len())]
            } else {
                &src.buf[..]
            };
            if !push(
                ring,
                &mut writers,
                usize::from(iface),
                ts,
                orig_len,
                data,
                stop,
            ) {
                break;
            }
            let c = &mut counted[usize::from(iface)];
            c[0] += 1;
            c[1] += data.len() as u64;
            report.packets += 1;
            // At capture pace the counters are read while the replay runs: keep them current.
            if speed == Speed::Realtime || report.packets % COUNTER_BATCH == 0 {
                publish(&self.infos, &mut counted);
            }
            report.first_ts.get_or_insert(ts);
            report.last_ts = Some(report.last_ts.map_or(ts, |l| l.max(ts)));
            if let Err(e) = src.advance() {
                tracing::warn!(file = %src.path.display(), error = %e, "replay: file ends early (packets read so far are kept)");
                report
                    .read_errors
                    .push(format!("{}: {e}", src.path.display()));
            }
        }
        seal_all(ring, &mut writers);
        publish(&self.infos, &mut counted);
        if let Some(last) = report.last_ts {
            ring.advance_all(last);
        }
        for (t, tag) in pending {
            fire(t, tag);
        }
        ring.advance_all(WATERMARK_END);
        report
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Add the packets and bytes counted locally to the interfaces' shared counters.
fn publish(infos: &[InterfaceInfo], counted: &mut [[u64; 2]]) {
    for (info, c) in infos.iter().zip(counted.iter_mut()) {
        if c[0] > 0 {
            info.counters.packets.fetch_add(c[0], Ordering::Relaxed);
            info.counters.bytes.fetch_add(c[1], Ordering::Relaxed);
            *c = [0, 0];
        }
    }
}

/// Seal every open block and raise the watermark to what is now sealed.
fn seal_all(ring: &Ring, writers: &mut [Option<BlockWriter>]) {
    for w in writers.iter_mut() {
        if let Some(w) = w.take() {
            ring.seal(w);
        }
    }
}

/// Append one packet to source `i`'s block; waits for a free block rather
/// than dropping. `false` only if `stop` was set while waiting.
fn push(
    ring: &Ring,
    writers: &mut [Option<BlockWriter>],
    i: usize,
    ts: i64,
    orig_len: u32,
    data: &[u8],
    stop: &CancellationToken,
) -> bool {
    loop {
        if ring.append(
            &mut writers[i],
            i as u16,
            ts,
            orig_len,
            data,
            Some(Duration::from_millis(50)),
        ) {
            return true;
        }
        if stop.is_cancelled() {
            return false;
        }
        // Every buffer is pinned by windows waiting for time to pass: seal
        // what is open and let them drain everything before `ts`.
        seal_all(ring, writers);
        ring.advance_all(ts - 1);
    }
}

/// Sleep until the replay is at `ts` (capture time, `first` being the start),
/// sealing blocks and raising the watermark every flush interval so windows
/// see packets at the pace a live capture would give them.
fn pace(
    ring: &Ring,
    writers: &mut [Option<BlockWriter>],
    wall_start: Instant,
    first: i64,
    ts: i64,
    last_flush: &mut Instant,
    stop: &CancellationToken,
) {
    let target = Duration::from_nanos(ts.saturating_sub(first).max(0) as u64);
    loop {
        let elapsed = wall_start.elapsed();
        if last_flush.elapsed() >= super::live::FLUSH_INTERVAL {
            *last_flush = Instant::now();
            seal_all(ring, writers);
            let now = first.saturating_add(i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX));
            ring.advance_all(now.min(ts - 1));
        }
        if elapsed >= target || stop.is_cancelled() {
            return;
        }
        std::thread::sleep((target - elapsed).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_parses_and_names_the_fix() {
        assert_eq!("max".parse::<Speed>(), Ok(Speed::Max));
        assert_eq!("1x".parse::<Speed>(), Ok(Speed::Realtime));
        assert!("2x"
            .parse::<Speed>()
            .unwrap_err()
            .contains("use `max` or `1x`"));
    }
}
