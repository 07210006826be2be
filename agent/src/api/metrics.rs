//! `/metrics`: the agent's counters as OpenMetrics text.
//!
//! A `prometheus-client` [`Collector`] reads the atomics the stages keep
//! (interface counters, ring stats and span, recorder stats, capture counts,
//! spool and upload stats, follower stats) at scrape time, so there is no
//! second set of counters to keep in sync. Counters are named without
//! `_total`; the encoder adds it.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::AgentView;
use crate::deliver::DeliverStats;
use crate::follow::FollowStats;

/// Encode every metric of `view`.
pub fn encode(view: &AgentView) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(AgentCollector(view.clone())));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)?;
    Ok(out)
}

struct AgentCollector(AgentView);

impl std::fmt::Debug for AgentCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentCollector")
    }
}

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    let c = ConstCounter::new(v);
    let m = enc.encode_descriptor(name, help, None, c.metric_type())?;
    c.encode(m)
}

fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    let g = ConstGauge::new(v);
    let m = enc.encode_descriptor(name, help, None, g.metric_type())?;
    g.encode(m)
}

/// A counter family with one label.
fn labelled(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &str,
    values: &[(String, u64)],
) -> std::fmt::Result {
    let proto = ConstCounter::new(0u64);
    let mut m = enc.encode_descriptor(name, help, None, proto.metric_type())?;
    for (l, v) in values {
        let labels = vec![(label.to_string(), l.clone())];
        let fam = m.encode_family(&labels)?;
        ConstCounter::new(*v).encode(fam)?;
    }
    Ok(())
}

impl Collector for AgentCollector {
    /// The families in the order /metrics has always listed them.
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let v = &self.0;
        encode_interfaces(&mut enc, v)?;
        encode_ring(&mut enc, v)?;
        encode_triggers_and_captures(&mut enc, v)?;
        if let Some(d) = &v.deliver {
            encode_delivery(&mut enc, d)?;
        }
        if let Some(f) = &v.follow {
            encode_logs(&mut enc, f)?;
        }
        if let Some(f) = &v.fleet {
            encode_fleet(&mut enc, f)?;
        }
        if let Some(b) = &v.baseline {
            encode_baseline(&mut enc, b)?;
        }
        Ok(())
    }
}

/// Per-interface capture counters: packets, bytes, kernel and interface drops.
fn encode_interfaces(enc: &mut DescriptorEncoder, v: &AgentView) -> std::fmt::Result {
    let r = Ordering::Relaxed;
    let per_if = |f: &dyn Fn(&crate::capture::IfaceCounters) -> u64| -> Vec<(String, u64)> {
        v.interfaces
            .iter()
            .map(|i| (i.desc.name.clone(), f(&i.counters)))
            .collect()
    };
    labelled(
        enc,
        "tripcap_packets_captured",
        "Packets copied into the ring.",
        "interface",
        &per_if(&|c| c.packets.load(r)),
    )?;
    labelled(
        enc,
        "tripcap_bytes_captured",
        "Captured bytes copied into the ring.",
        "interface",
        &per_if(&|c| c.bytes.load(r)),
    )?;
    labelled(
        enc,
        "tripcap_kernel_drops",
        "Packets the kernel dropped (socket buffer full).",
        "interface",
        &per_if(&|c| c.kernel_drops.load(r)),
    )?;
    labelled(
        enc,
        "tripcap_interface_drops",
        "Packets the interface or driver dropped.",
        "interface",
        &per_if(&|c| c.if_drops.load(r)),
    )
}

/// The ring: memory, blocks, the span it covers, evictions and drops.
fn encode_ring(enc: &mut DescriptorEncoder, v: &AgentView) -> std::fmt::Result {
    let r = Ordering::Relaxed;
    let span = v.ring.span();
    let stats = v.ring.stats();
    gauge(
        enc,
        "tripcap_ring_memory_limit_bytes",
        "Bytes the ring may hold.",
        v.ring.memory_limit() as f64,
    )?;
    gauge(
        enc,
        "tripcap_ring_allocated_bytes",
        "Bytes of ring buffers allocated.",
        span.allocated_bytes as f64,
    )?;
    gauge(
        enc,
        "tripcap_ring_blocks",
        "Blocks held by the ring.",
        span.blocks as f64,
    )?;
    let span_s = span.newest_ts.map_or(0.0, |n| {
        n.saturating_sub(span.reaches_back_to).max(0) as f64 / 1e9
    });
    gauge(
        enc,
        "tripcap_ring_span_seconds",
        "Seconds of traffic the ring covers.",
        span_s,
    )?;
    gauge(
        enc,
        "tripcap_ring_history_seconds",
        "Seconds of capture time the ring holds now, from the oldest time it has every packet of to the newest packet.",
        span.history_seconds(),
    )?;
    gauge(
        enc,
        "tripcap_ring_packets",
        "Packets the ring holds.",
        span.packets as f64,
    )?;
    gauge(
        enc,
        "tripcap_ring_bytes_per_packet",
        "Bytes of ring memory per packet held (raw blocks count their whole buffer).",
        span.bytes_per_packet().unwrap_or(0.0),
    )?;
    gauge(
        enc,
        "tripcap_ring_packed_blocks",
        "Blocks the ring holds compressed.",
        span.packed_blocks as f64,
    )?;
    gauge(
        enc,
        "tripcap_ring_compression_ratio",
        "Raw over compressed bytes of the compressed blocks held (0 while none is).",
        span.compression_ratio().unwrap_or(0.0),
    )?;
    counter(
        enc,
        "tripcap_ring_decode_errors",
        "Compressed blocks a capture could not decode (their packets are missing from it).",
        stats.decode_errors.load(r),
    )?;
    counter(
        enc,
        "tripcap_ring_evicted_blocks",
        "Blocks evicted because memory was full.",
        stats.evicted_blocks.load(r),
    )?;
    counter(
        enc,
        "tripcap_ring_evicted_packets",
        "Packets in evicted blocks.",
        stats.evicted_packets.load(r),
    )?;
    counter(
        enc,
        "tripcap_ring_aged_blocks",
        "Blocks dropped for age.",
        stats.aged_blocks.load(r),
    )?;
    counter(
        enc,
        "tripcap_ring_full_drops",
        "Packets dropped because every buffer was held by captures being written.",
        stats.ring_full_drops.load(r),
    )
}

/// Trigger firings (in all and per trigger), captures opened, open windows,
/// running tasks, captures written and failed.
fn encode_triggers_and_captures(enc: &mut DescriptorEncoder, v: &AgentView) -> std::fmt::Result {
    let r = Ordering::Relaxed;
    let rec = v.recorder.stats();
    counter(
        enc,
        "tripcap_triggers_fired",
        "Trigger firings that opened or extended a capture.",
        rec.opened.load(r) + rec.merged.load(r),
    )?;
    counter(
        enc,
        "tripcap_triggers_suppressed",
        "Trigger firings suppressed (cooldown or line cap).",
        rec.suppressed.load(r),
    )?;
    let per_trigger = |list: &[std::sync::atomic::AtomicU64]| -> Vec<(String, u64)> {
        v.recorder
            .specs()
            .iter()
            .zip(list)
            .map(|(s, c)| (s.name.clone(), c.load(r)))
            .collect()
    };
    labelled(
        enc,
        "tripcap_trigger_fired",
        "Firings that opened or were recorded in a capture, per trigger.",
        "trigger",
        &per_trigger(&rec.fired_by_trigger),
    )?;
    labelled(
        enc,
        "tripcap_trigger_suppressed",
        "Firings suppressed (cooldown or line cap), per trigger.",
        "trigger",
        &per_trigger(&rec.suppressed_by_trigger),
    )?;
    counter(
        enc,
        "tripcap_captures_opened",
        "Captures opened.",
        rec.opened.load(r),
    )?;
    gauge(
        enc,
        "tripcap_open_windows",
        "Captures being written.",
        v.recorder.open_windows() as f64,
    )?;
    gauge(
        enc,
        "tripcap_tasks_running",
        "Threads and tasks of the agent (capture, windows, packet triggers, API, logs, delivery).",
        v.tasks.running() as f64,
    )?;
    counter(
        enc,
        "tripcap_captures_written",
        "Captures written (pcapng and sidecar).",
        v.captures.written.load(r),
    )?;
    counter(
        enc,
        "tripcap_captures_failed",
        "Captures that could not be written.",
        v.captures.failed.load(r),
    )
}

/// Uploads and the spool, when delivering.
fn encode_delivery(enc: &mut DescriptorEncoder, d: &DeliverStats) -> std::fmt::Result {
    let r = Ordering::Relaxed;
    counter(
        enc,
        "tripcap_uploads_ok",
        "Captures uploaded completely.",
        d.uploads_ok.load(r),
    )?;
    counter(
        enc,
        "tripcap_uploads_failed",
        "Upload attempts that failed.",
        d.uploads_failed.load(r),
    )?;
    counter(
        enc,
        "tripcap_uploads_parked",
        "Captures the endpoint refused (parked).",
        d.parked.load(r),
    )?;
    {
        let reasons = d
            .parked_reasons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let proto = ConstGauge::new(0.0);
        let mut m = enc.encode_descriptor(
            "tripcap_uploads_parked_units",
            "Captures parked now, by the store's error code (else HTTP status).",
            None,
            proto.metric_type(),
        )?;
        for p in reasons {
            let labels = vec![("reason".to_string(), p.label)];
            let fam = m.encode_family(&labels)?;
            ConstGauge::new(p.units as f64).encode(fam)?;
        }
    }
    gauge(
        enc,
        "tripcap_uploads_pending",
        "Captures waiting to be uploaded.",
        d.pending.load(r) as f64,
    )?;
    counter(
        enc,
        "tripcap_upload_bytes",
        "Bytes of files the endpoint acknowledged.",
        d.bytes_sent.load(r),
    )?;
    gauge(
        enc,
        "tripcap_spool_bytes",
        "Bytes of captures in the spool.",
        d.spool_bytes.load(r) as f64,
    )?;
    gauge(
        enc,
        "tripcap_spool_units",
        "Captures in the spool.",
        d.units.load(r) as f64,
    )?;
    labelled(
        enc,
        "tripcap_spool_dropped",
        "Captures deleted because the spool was over max_spool.",
        "state",
        &[
            ("uploaded".to_string(), d.dropped_uploaded.load(r)),
            ("pending".to_string(), d.dropped_pending.load(r)),
        ],
    )
}

/// The log follower, when following logs.
fn encode_logs(enc: &mut DescriptorEncoder, f: &FollowStats) -> std::fmt::Result {
    let r = Ordering::Relaxed;
    gauge(
        enc,
        "tripcap_log_files_followed",
        "Log files followed now.",
        f.files_followed.load(r) as f64,
    )?;
    counter(
        enc,
        "tripcap_log_lines_read",
        "Log lines read.",
        f.lines_read.load(r),
    )
}

/// `[baseline]`: the history kept and what the thread let go.
fn encode_baseline(
    enc: &mut DescriptorEncoder,
    b: &crate::baseline::keeper::BaselineStats,
) -> std::fmt::Result {
    let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
    gauge(
        enc,
        "tripcap_baseline_summaries",
        "Interval summaries (per interface and traffic class) the baseline profile is made of",
        r(&b.summaries) as f64,
    )?;
    counter(
        enc,
        "tripcap_baseline_summaries_written",
        "Interval summaries appended to the baseline history on disk",
        r(&b.written),
    )?;
    counter(
        enc,
        "tripcap_baseline_write_errors",
        "Appends to the baseline history that failed (kept in memory meanwhile)",
        r(&b.write_errors),
    )?;
    counter(
        enc,
        "tripcap_baseline_skipped_blocks",
        "Ring blocks the baseline thread let go unread because it was behind the capture",
        r(&b.skipped_blocks),
    )
}

/// `[fleet]`: announcements and the NATS connection.
fn encode_fleet(enc: &mut DescriptorEncoder, f: &crate::fleet::FleetStats) -> std::fmt::Result {
    let r = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    counter(
        enc,
        "tripcap_fleet_announcements_sent",
        "Announcements of local captures the NATS stream acknowledged",
        r(&f.sent),
    )?;
    counter(
        enc,
        "tripcap_fleet_announcements_received",
        "Announcements of other agents of the job read",
        r(&f.received),
    )?;
    counter(
        enc,
        "tripcap_fleet_announcements_joined",
        "Announcements this agent captured for (opened or extended a window)",
        r(&f.joined),
    )?;
    counter(
        enc,
        "tripcap_fleet_messages_ignored",
        "Messages ignored: malformed, oversized, another job's, or not for this agent",
        r(&f.ignored),
    )?;
    gauge(
        enc,
        "tripcap_fleet_connected",
        "1 while the NATS connection is up",
        if f.connected.load(Ordering::Relaxed) {
            1.0
        } else {
            0.0
        },
    )?;
    counter(
        enc,
        "tripcap_fleet_disconnects",
        "Times the NATS connection was lost (the agent reconnects with backoff)",
        r(&f.disconnects),
    )?;
    gauge(
        enc,
        "tripcap_fleet_outbox",
        "Messages waiting to be published (NATS away)",
        r(&f.outbox) as f64,
    )?;
    counter(
        enc,
        "tripcap_fleet_outbox_dropped",
        "Messages dropped from a full outbox",
        r(&f.outbox_dropped),
    )
}
