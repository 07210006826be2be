//! The writer thread of one window: it takes the ring's blocks and
//! watermarks, has [`merge`](super::merge) put the window's packets in order
//! into the capture file, and at close completes the unit: section-header
//! comments, sync, rename, the analysis, then the sidecar last.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use super::coverage::{coverage, Observed};
use super::merge::{Queues, Sink};
use super::{read_counters, start_writeback, sync_dir, CaptureOutcome, WindowPlan, WindowShared};
use crate::capture::Source;
use crate::capture_file::pcapng;
use crate::counters::{self, CounterSnapshot};
use crate::private_file::{create_private, rename_noreplace, tmp_path, write_private_atomically};
use crate::ring::{BlockMeta, Record, Ring, RingEvent, RingSpan, WATERMARK_END};
use crate::sidecar::{self, InterfaceReport, RdmaCounters, Sidecar, WindowReport};

/// Buffer of the file writer, for records written one at a time. Smaller than a
/// ring block, so whole blocks bypass it and are written without a copy.
const WRITE_BUFFER: usize = 64 << 10;
/// Start kernel writeback every this many bytes, so the final sync is short.
const WRITEBACK_STEP: u64 = 16 << 20;

/// The capture file being written, and what went into it.
struct Output {
    file: BufWriter<File>,
    written: u64,
    synced: u64,
    packets: u64,
    bytes: u64,
    wire_bytes: u64,
    per_iface: Vec<u64>,
}

impl Output {
    fn wrote(&mut self, iface: usize, len: usize, packets: u64) {
        self.written += len as u64;
        if let Some(n) = self.per_iface.get_mut(iface) {
            *n += packets;
        }
        if self.written >= self.synced + WRITEBACK_STEP {
            start_writeback(self.file.get_ref(), self.synced, self.written - self.synced);
            self.synced = self.written;
        }
    }
}

impl Sink for Output {
    fn block(&mut self, iface: usize, pcapng: &[u8], meta: &BlockMeta) -> io::Result<()> {
        self.file.write_all(pcapng)?;
        self.packets += u64::from(meta.packets);
        self.bytes += meta.data_bytes;
        self.wire_bytes += meta.wire_bytes;
        self.wrote(iface, pcapng.len(), u64::from(meta.packets));
        Ok(())
    }

    fn record(&mut self, iface: usize, rec: &Record<'_>) -> io::Result<()> {
        self.file.write_all(rec.pcapng)?;
        self.packets += 1;
        self.bytes += rec.data.len() as u64;
        self.wire_bytes += u64::from(rec.orig_len);
        self.wrote(iface, rec.pcapng.len(), 1);
        Ok(())
    }
}

/// Counters read when the window opened, for the deltas at close.
pub(super) struct AtOpen {
    /// Per interface: kernel and interface drops.
    pub(super) drops: Vec<[u64; 2]>,
    /// Ring evictions and ring-full drops.
    pub(super) ring: [u64; 2],
}

pub(super) struct Writer {
    pub(super) plan: WindowPlan,
    shared: Arc<WindowShared>,
    span: RingSpan,
    queues: Queues,
    out: Option<Output>,
    tmp_path: PathBuf,
    /// The capture, in place, whose sidecar could not be written.
    pub(super) kept: Option<PathBuf>,
    last_watermark: i64,
    /// Packets of packed ring blocks that could not be decoded.
    undecoded: u64,
}

impl Writer {
    pub(super) fn new(
        plan: WindowPlan,
        shared: Arc<WindowShared>,
        span: RingSpan,
        ring: &Arc<Ring>,
    ) -> Writer {
        let n = plan.interfaces.len();
        let tmp_path = tmp_path(&plan.dir.join(format!("{}.pcapng", plan.incident)));
        Writer {
            plan,
            shared,
            span,
            queues: Queues::new(n, ring),
            out: None,
            tmp_path,
            kept: None,
            last_watermark: i64::MIN,
            undecoded: 0,
        }
    }

    pub(super) fn final_path(&self) -> PathBuf {
        self.plan.dir.join(format!("{}.pcapng", self.stem()))
    }

    /// The file stem: the fleet incident's (unique in the directory) when the
    /// window was tied to one, else the local incident name.
    fn stem(&self) -> String {
        self.shared
            .closing()
            .fleet
            .map_or_else(|| self.plan.incident.clone(), |(_, stem)| stem)
    }

    /// Remove the temporary file (after a failure).
    pub(super) fn cleanup(&mut self) {
        self.out = None;
        let _ = fs::remove_file(&self.tmp_path);
    }

    /// Write the window's packets as the ring's watermark rises; returns when
    /// the window has closed.
    pub(super) fn run(&mut self, rx: Receiver<RingEvent>) -> io::Result<()> {
        let mut file = BufWriter::with_capacity(WRITE_BUFFER, create_private(&self.tmp_path)?);
        let descs: Vec<_> = self
            .plan
            .interfaces
            .iter()
            .map(|i| i.desc.clone())
            .collect();
        file.write_all(&pcapng::section_header(&[]))?;
        file.write_all(&pcapng::interface_blocks(&descs))?;
        let out = self.out.insert(Output {
            file,
            written: 0,
            synced: 0,
            packets: 0,
            bytes: 0,
            wire_bytes: 0,
            per_iface: vec![0; descs.len()],
        });
        let (start, _) = self.shared.window();
        for ev in rx {
            match ev {
                RingEvent::Block(_) | RingEvent::Packed(_) => self.queues.push(ev),
                RingEvent::Watermark(w) => {
                    let (_, end) = self.shared.window();
                    self.queues.emit_until(start, end, w.min(end), out)?;
                    if w != WATERMARK_END {
                        self.last_watermark = w;
                    }
                    if w >= end && self.shared.try_close(w) {
                        return Ok(());
                    }
                }
            }
        }
        // The ring went away (agent stopping): write what arrived.
        let (_, end) = self.shared.window();
        self.queues.emit_until(start, end, end, out)?;
        self.shared.close();
        Ok(())
    }

    /// Complete the unit: comments, sync, rename, analysis, sidecar.
    pub(super) fn finish(
        &mut self,
        ring: &Ring,
        at_open: &AtOpen,
        counters_at_trigger: Option<CounterSnapshot>,
    ) -> io::Result<CaptureOutcome> {
        let Some(out) = self.out.take() else {
            return Err(io::Error::other("capture file was never opened"));
        };
        let Output {
            file,
            packets,
            bytes,
            wire_bytes,
            per_iface,
            ..
        } = out;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        self.undecoded = self.queues.lost_packets();
        self.queues.clear();
        let report = self.sidecar(
            ring,
            at_open,
            counters_at_trigger,
            [packets, bytes, wire_bytes],
            &per_iface,
        );

        let comments = comments(&self.plan.host, &report);
        file.write_all_at(&pcapng::section_header(&comments), 0)?;
        file.sync_all()?;
        drop(file);
        let final_path = self.final_path();
        rename_noreplace(&self.tmp_path, &final_path)?;

        if self.plan.options.reports {
            // The analysis and picture go beside the capture before the sidecar,
            // whose presence marks the unit complete. A failure loses only them.
            let baseline = self.plan.options.baseline.as_ref().and_then(|b| b.get());
            if let Err(e) =
                crate::analyze::write_capture_report_with(&final_path, &report, baseline.as_deref())
            {
                tracing::warn!(file = %final_path.display(), error = %e, "capture written, but its report could not be");
            }
        }
        let sidecar_path = self.plan.dir.join(format!("{}.json", self.stem()));
        let json = serde_json::to_vec_pretty(&report).map_err(io::Error::other)?;
        if let Err(e) = write_private_atomically(&sidecar_path, &json) {
            // The packets are in place: keep them. The next start completes the
            // unit from the file (`deliver::recover`), so it is not stranded.
            self.kept = Some(final_path);
            return Err(e);
        }
        sync_dir(&self.plan.dir);
        Ok(CaptureOutcome::Written {
            pcapng: final_path,
            sidecar: sidecar_path,
            report: Box::new(report),
        })
    }

    /// Per interface: what was written and dropped, and how it was captured.
    fn interface_reports(&self, at_open: &AtOpen, per_iface: &[u64]) -> Vec<InterfaceReport> {
        let sysfs = self
            .plan
            .options
            .sysfs_root
            .clone()
            .unwrap_or_else(|| PathBuf::from("/sys"));
        self.plan
            .interfaces
            .iter()
            .enumerate()
            .map(|(i, info)| {
                let live = matches!(info.source, Source::Live { .. });
                let [k0, f0] = at_open.drops.get(i).copied().unwrap_or_default();
                let [k1, f1] = info.counters.drops();
                InterfaceReport {
                    name: info.desc.name.clone(),
                    linktype: info.desc.linktype,
                    snaplen: info.desc.snaplen,
                    filter: info.desc.filter.clone(),
                    tstamp_precision: info.precision.to_string(),
                    packets: per_iface.get(i).copied().unwrap_or(0),
                    kernel_drops: k1.saturating_sub(k0),
                    if_drops: f1.saturating_sub(f0),
                    libpcap: match &info.source {
                        Source::Live { libpcap, .. } => Some(libpcap.clone()),
                        Source::File => None,
                    },
                    timestamps: Some(match info.source {
                        Source::Live { .. } => "software".to_string(),
                        Source::File => "file".to_string(),
                    }),
                    speed_mbps: live
                        .then(|| link_attr(&sysfs, &info.desc.name, "speed"))
                        .flatten(),
                    mtu: live
                        .then(|| link_attr(&sysfs, &info.desc.name, "mtu"))
                        .flatten()
                        .and_then(|m| u32::try_from(m).ok()),
                }
            })
            .collect()
    }

    /// The sidecar: the window, its coverage, what was written, the counters.
    fn sidecar(
        &self,
        ring: &Ring,
        at_open: &AtOpen,
        counters_at_trigger: Option<CounterSnapshot>,
        [packets, bytes, wire_bytes]: [u64; 3],
        per_iface: &[u64],
    ) -> Sidecar {
        let closing = self.shared.closing();
        let stats = ring.stats();
        let ring_evictions = stats
            .evicted_blocks
            .load(Ordering::Relaxed)
            .saturating_sub(at_open.ring[0]);
        let ring_full_drops = stats
            .ring_full_drops
            .load(Ordering::Relaxed)
            .saturating_sub(at_open.ring[1]);
        let interfaces = self.interface_reports(at_open, per_iface);
        let rdma_counters = counters_at_trigger.map(|at_trigger| {
            let at_end = read_counters(&self.plan).unwrap_or_default();
            let delta = counters::delta(&at_trigger, &at_end);
            RdmaCounters {
                at_trigger,
                at_end,
                delta,
            }
        });
        let c = coverage(&Observed {
            start: closing.start,
            end: closing.end,
            asked_start: closing.asked_start,
            first_trigger_at: closing.triggers.first().map(|t| t.at_ns),
            reaches_back_to: self.span.reaches_back_to,
            evicted: self.span.evicted,
            last_watermark: self.last_watermark,
            ring_full_drops,
            undecoded: self.undecoded,
            stopped: self
                .plan
                .interfaces
                .iter()
                .filter_map(|i| {
                    i.counters
                        .stopped()
                        .map(|(at, why)| (i.desc.name.clone(), at, why))
                })
                .collect(),
            kernel_drops: interfaces.iter().map(|i| i.kernel_drops + i.if_drops).sum(),
            nic_discards: rdma_counters
                .as_ref()
                .map(|r| counters::discards(&r.delta))
                .unwrap_or_default(),
        });
        let asked = [closing.asked_start.min(closing.start), closing.end];
        let (incident, stem) = closing
            .fleet
            .clone()
            .unwrap_or_else(|| (self.plan.incident.clone(), self.plan.incident.clone()));
        let fleet = closing
            .fleet
            .as_ref()
            .and_then(|(id, _)| self.plan.options.fleet.as_ref().and_then(|f| f.report(id)));
        Sidecar {
            schema: sidecar::SCHEMA.to_string(),
            tripcap_version: env!("CARGO_PKG_VERSION").to_string(),
            incident,
            host: self.plan.host.clone(),
            file: format!("{stem}.pcapng"),
            triggers: closing.triggers,
            suppressed_matches: closing.suppressed,
            window: WindowReport {
                asked_start_ns: asked[0],
                asked_end_ns: asked[1],
                covered_start_ns: c.covered_start,
                covered_end_ns: c.covered_end,
                asked: asked.map(crate::clock::rfc3339),
                covered: [c.covered_start, c.covered_end].map(crate::clock::rfc3339),
                complete: c.shortfall.is_empty(),
                shortfall: c.shortfall,
            },
            packets,
            bytes,
            wire_bytes,
            interfaces,
            ring_evictions,
            ring_full_drops,
            rdma_counters,
            notes: self.notes(),
            fleet,
        }
    }
}

impl Writer {
    /// What a reader should know about how this capture was taken.
    fn notes(&self) -> Vec<String> {
        notes(&self.plan.interfaces)
    }
}

/// What a reader should know about how a capture of `interfaces` was taken.
fn notes(interfaces: &[crate::capture::InterfaceInfo]) -> Vec<String> {
    interfaces
            .iter()
            .filter(|i| matches!(i.source, Source::Live { rdma_sniffer: true, .. }))
            .map(|i| {
                format!(
                    "`{}` was read by libpcap's RDMA sniffer, which counts none of its own drops (always 0) and timestamps in software: \
                     only the NIC's discard counters (out_of_buffer, port_rcv_discards) tell of loss, and a window is marked incomplete when they rose",
                    i.desc.name
                )
            })
            .collect()
}

/// The section-header comments: one summary, then one per trigger line.
fn comments(host: &str, report: &Sidecar) -> Vec<String> {
    let mut out = vec![format!(
        "tripcap {} on {host}: incident {}; window {} .. {}{}",
        report.tripcap_version,
        report.incident,
        report.window.asked[0],
        report.window.asked[1],
        if report.window.complete {
            String::new()
        } else {
            format!("; INCOMPLETE: {}", report.window.shortfall.join("; "))
        }
    )];
    for t in &report.triggers {
        let mut c = format!("trigger {} ({}) at {}", t.name, t.class, t.at);
        if let Some(src) = &t.source {
            c.push_str(&format!(" from {src}"));
            if let Some(n) = t.line_no {
                c.push_str(&format!(":{n}"));
            }
        }
        if let Some(line) = &t.line {
            c.push_str(&format!(": {line}"));
        }
        out.push(c);
    }
    out
}

/// `/sys/class/net/<netdev>/<attr>` as a positive number (`speed` is -1 or unreadable when
/// the link is down or has no speed, as `lo`).
fn link_attr(sysfs: &Path, netdev: &str, attr: &str) -> Option<u64> {
    if netdev.is_empty() || netdev.contains('/') || netdev.starts_with('.') {
        return None;
    }
    let text = std::fs::read_to_string(sysfs.join("class/net").join(netdev).join(attr)).ok()?;
    text.trim().parse::<u64>().ok().filter(|&v| v > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{IfaceCounters, InterfaceInfo, TsPrecision};
    use crate::capture_file::pcapng::InterfaceDesc;

    fn iface(name: &str, source: Source) -> InterfaceInfo {
        InterfaceInfo {
            desc: InterfaceDesc {
                name: name.into(),
                description: String::new(),
                linktype: 1,
                snaplen: 128,
                filter: String::new(),
            },
            precision: TsPrecision::Nano,
            counters: Arc::new(IfaceCounters::default()),
            source,
        }
    }

    #[test]
    fn an_rdma_sniffer_source_always_gets_the_note_on_uncounted_drops() {
        let live = |rdma_sniffer| Source::Live {
            libpcap: "libpcap version 1.10.3".into(),
            rdma_sniffer,
        };
        let n = notes(&[
            iface("ens1f0np0", live(false)),
            iface("mlx5_0", live(true)),
            iface("f.pcap", Source::File),
        ]);
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].starts_with(
                "`mlx5_0` was read by libpcap's RDMA sniffer, which counts none of its own drops"
            ),
            "{n:?}"
        );
    }
}
