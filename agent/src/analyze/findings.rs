//! What a capture says, in words: the list of findings with times relative to the trigger,
//! and the readable summary of `tripcap analyze`. The sidecar's context they use is read by
//! [`super::context`]; the [`Finding`] type is in [`super::finding`].
//!
//! Times: with a trigger, findings (and each connection's longest silence) are placed at
//! `T±s` from the first trigger's `at_ns` (and the onset, when the line gave one, is
//! shown); without one, at `+s` from the first packet. Findings without a time (drops,
//! counters, an incomplete window) come first. Instants (the capture's span, the trigger)
//! are RFC 3339 in UTC, to the millisecond; never raw epoch seconds.

use std::io::{self, Write};

use super::baseline::comparison::Comparison;
use super::connections::{ConnStats, Report, STALL_MIN_NS};
use super::context::CaptureContext;
use super::finding::{Finding, Severity};
use super::throughput::{self, ConnInput, Link, Throughput};
use crate::clock::rfc3339_millis;

impl Report {
    /// Attaches what the sidecar says (trigger, drops, counters; `None`: nothing) and
    /// computes the findings, with times relative to the trigger when there is one.
    pub fn set_context(&mut self, ctx: Option<CaptureContext>) {
        self.reference = ctx.as_ref().and_then(|c| c.reference.clone());
        self.capture = ctx;
        self.throughput = throughput_of(self);
        self.findings = findings(self);
    }

    /// Uses `gbps` as the link speed (`--link-speed`) instead of the sidecar's and
    /// recomputes the throughput section.
    pub fn set_link_speed(&mut self, gbps: f64) {
        self.link_speed_gbps = Some(gbps);
        self.throughput = throughput_of(self);
    }

    /// Writes a readable summary: frame classes, the capture's context, whole-capture
    /// figures, "why slow", the capture against its baseline (when it has one), the
    /// findings in time order, then one line per connection, worst first.
    pub fn write_summary(&self, out: &mut dyn Write) -> io::Result<()> {
        write_summary(self, out)
    }
}

/// The throughput section of a report, with the link speed from `--link-speed`, else the
/// sidecar, else assumed.
pub fn throughput_of(r: &Report) -> Throughput {
    let sidecar = r
        .capture
        .as_ref()
        .and_then(|c| c.link_speed_mbps)
        .map(|m| m as f64 / 1000.0);
    let link = match (r.link_speed_gbps, sidecar) {
        (Some(gbps), _) => Link {
            gbps,
            source: "flag",
        },
        (None, Some(gbps)) => Link {
            gbps,
            source: "sidecar",
        },
        (None, None) => Link {
            gbps: throughput::ASSUMED_LINK_GBPS,
            source: "assumed",
        },
    };
    let conns = r.connections.iter().map(|c| ConnInput {
        src: &c.src,
        dst: &c.dst,
        dest_qp: &c.dest_qp,
        wire_bytes: c.bytes,
        cnps: c.cnps,
        resends: c.psn_regressions + c.duplicates,
        stalls: c.stalls,
        volume: &c.volume,
    });
    throughput::compute(
        conns,
        (&r.pauses, &r.roce_priorities),
        (r.first_ns, r.last_ns),
        link,
        r.capture.as_ref().and_then(|c| c.mtu),
        &r.fragments,
    )
}

/// Every finding of a report, untimed first, then in time order.
pub fn findings(r: &Report) -> Vec<Finding> {
    let reference = r.reference.as_ref().map_or(r.first_ns, |x| x.at_ns);
    let mut f = Findings {
        reference,
        out: Vec::new(),
    };
    if let Some(c) = &r.capture {
        f.capture(c);
    }
    for c in &r.connections {
        f.connection(c);
    }
    f.pauses(r);
    f.why_slow(&r.throughput);
    for &t in &r.arp.in_silence_at_ns {
        f.add(
            Some(t),
            Severity::Info,
            "arp_in_silence",
            None,
            "ARP while a queue pair was silent (neighbour resolution during a pause?)".to_owned(),
        );
    }
    let mut out = f.out;
    out.sort_by(|a, b| {
        a.at_ns
            .is_some()
            .cmp(&b.at_ns.is_some())
            .then(a.at_ns.cmp(&b.at_ns))
            .then(a.severity.cmp(&b.severity))
    });
    out
}

/// The findings so far, with times relative to `reference` (ns since the epoch).
struct Findings {
    reference: i64,
    out: Vec<Finding>,
}

impl Findings {
    fn add(
        &mut self,
        at: Option<i64>,
        severity: Severity,
        kind: &'static str,
        conn: Option<String>,
        text: String,
    ) {
        let reference = self.reference;
        self.out.push(Finding {
            at_ns: at,
            rel_s: at.map(|ts| (ts - reference) as f64 / 1e9),
            severity,
            kind,
            conn,
            text,
        })
    }

    /// What the sidecar says: an incomplete window, drops, RDMA counters that moved.
    fn capture(&mut self, c: &CaptureContext) {
        if c.complete == Some(false) {
            self.add(
                None,
                Severity::Warning,
                "incomplete",
                None,
                format!(
                    "the capture does not cover the asked window: {}",
                    c.shortfall.join("; ")
                ),
            );
        }
        if c.kernel_drops + c.if_drops + c.ring_evictions + c.ring_full_drops > 0 {
            self.add(
                None,
                Severity::Warning,
                "drops",
                None,
                format!(
                    "packets missing from the capture itself: {} kernel drops, {} NIC drops, {} ring blocks evicted, {} ring-full drops",
                    c.kernel_drops, c.if_drops, c.ring_evictions, c.ring_full_drops
                ),
            );
        }
        if let Some(d) = c.rdma_counters.as_ref().and_then(|r| r.delta.as_ref()) {
            let nz: Vec<String> = d.non_zero().map(|(n, v)| format!("{n} +{v}")).collect();
            if !nz.is_empty() {
                self.add(
                    None,
                    Severity::Info,
                    "rdma_counters",
                    None,
                    format!("RDMA counters from trigger to end: {}", nz.join(", ")),
                );
            }
        }
    }

    /// One connection's stalls, first go-back-N, first problem of each kind and
    /// unanswered requests.
    fn connection(&mut self, c: &ConnStats) {
        let label = Some(c.label());
        for s in c
            .silences
            .iter()
            .filter(|s| s.outstanding && (s.end_ns - s.start_ns) >= STALL_MIN_NS)
        {
            let text = if s.open {
                format!("stalled with requests outstanding: silent {:.1} ms until the end of the capture", s.ms)
            } else {
                format!("stalled {:.1} ms with requests outstanding", s.ms)
            };
            self.add(
                Some(s.start_ns),
                Severity::Error,
                "stall",
                label.clone(),
                text,
            );
        }
        if let Some(e) = c.regression_episodes.first() {
            self.add(
                Some(e.at_ns),
                Severity::Warning,
                "go_back_n",
                label.clone(),
                format!(
                    "go-back-N: PSN {} back to {} ({} episodes in all)",
                    e.from_psn, e.to_psn, c.psn_regressions
                ),
            );
        }
        self.firsts(c, &label);
        if c.ackreq_unanswered > 0 {
            self.add(
                c.oldest_unanswered_ns,
                Severity::Error,
                "unanswered",
                label,
                format!(
                    "{} of {} AckReq requests never answered (oldest here)",
                    c.ackreq_unanswered, c.ackreq
                ),
            );
        }
    }

    /// Per kind of problem on a connection: how many, at the first one.
    fn firsts(&mut self, c: &ConnStats, label: &Option<String>) {
        let f = &c.firsts;
        let kinds = [
            (
                f.nak_seq,
                c.naks_seq,
                Severity::Warning,
                "nak_seq",
                "NAK PSN sequence error",
            ),
            (
                f.nak_rnr,
                c.naks_rnr,
                Severity::Warning,
                "nak_rnr",
                "RNR NAK",
            ),
            (
                f.nak_other,
                c.naks_other,
                Severity::Error,
                "nak_other",
                "NAK (invalid request / access / operational error)",
            ),
            (
                f.gap,
                c.psn_gaps,
                Severity::Warning,
                "psn_gap",
                "PSN gaps (packets missing at the capture point)",
            ),
            (
                f.duplicate,
                c.duplicates,
                Severity::Warning,
                "duplicate",
                "re-sent requests (timeout or RNR retry)",
            ),
            (
                f.cnp,
                c.cnps,
                Severity::Info,
                "cnp",
                "CNPs (congestion notifications)",
            ),
            (
                f.ecn_ce,
                c.ecn_ce,
                Severity::Info,
                "ecn_ce",
                "ECN-CE marked packets",
            ),
        ];
        for (at, n, severity, kind, what) in kinds {
            if let (Some(at), true) = (at, n > 0) {
                self.add(
                    Some(at),
                    severity,
                    kind,
                    label.clone(),
                    format!("{n} {what} (first here)"),
                );
            }
        }
    }

    /// IPv4 fragments carrying RoCE, and address pairs whose directions use different MTUs.
    fn why_slow(&mut self, t: &Throughput) {
        let frag = &t.fragments;
        if frag.packets > 0 {
            self.add(
                frag.first_ns,
                Severity::Error,
                "roce_fragment",
                None,
                format!(
                    "{} IPv4 fragments carrying RoCE (first {}): RoCE v2 must not be fragmented, a hop's MTU is below the RoCE path MTU",
                    frag.packets,
                    frag.first.as_deref().unwrap_or("-")
                ),
            );
        }
        for m in &t.mtu_mismatches {
            self.add(
                None,
                Severity::Warning,
                "mtu_mismatch",
                None,
                format!(
                    "MTU mismatch: {} > {} segments at {} B, {} > {} at {} B",
                    m.a, m.b, m.a_to_b, m.b, m.a, m.b_to_a
                ),
            );
        }
    }

    /// PFC per priority and 802.3x PAUSE, at their first XOFF.
    fn pauses(&mut self, r: &Report) {
        for (prio, p) in r.pauses.pfc.iter().enumerate() {
            if p.xoff > 0 {
                self.add(
                    p.first_xoff_ns,
                    Severity::Warning,
                    "pfc",
                    None,
                    format!(
                        "PFC priority {prio}: {} XOFF, {} XON frames, {} pause quanta",
                        p.xoff, p.xon, p.quanta
                    ),
                );
            }
        }
        let p = &r.pauses.pause_8023x;
        if p.xoff > 0 {
            self.add(
                p.first_xoff_ns,
                Severity::Warning,
                "pause",
                None,
                format!(
                    "802.3x PAUSE: {} XOFF, {} XON frames, {} quanta",
                    p.xoff, p.xon, p.quanta
                ),
            );
        }
    }
}

/// `T+1.234567 s` (trigger) or `+1.234567 s` (capture start).
fn stamp(r: &Report, f: &Finding) -> String {
    match f.rel_s {
        Some(s) => relative(r, s),
        None => "capture".to_owned(),
    }
}

/// An instant as [`stamp`] shows it: relative to the trigger, else to the first packet.
fn stamp_at(r: &Report, ns: i64) -> String {
    let at = r.reference.as_ref().map_or(r.first_ns, |x| x.at_ns);
    relative(r, (ns - at) as f64 / 1e9)
}

fn relative(r: &Report, s: f64) -> String {
    if r.reference.as_ref().is_some_and(|x| x.kind == "trigger") {
        format!("T{s:+.6} s")
    } else {
        format!("{s:+.6} s")
    }
}

/// The readable summary.
pub fn write_summary(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    write_frames(r, out)?;
    write_reference(r, out)?;
    write_figures(r, out)?;
    if let Some(c) = &r.capture {
        write_capture(c, out)?;
    }
    if r.pfc_pause_frames > 0 {
        writeln!(
            out,
            "{} PFC/PAUSE frames paused traffic",
            r.pfc_pause_frames
        )?;
    }
    if r.arp.packets > 0 {
        writeln!(
            out,
            "ARP: {} packets, {} inside a QP silence ({} inside a stall)",
            r.arp.packets, r.arp.in_silence, r.arp.in_stall
        )?;
    }
    throughput::write_text(&r.throughput, out)?;
    if let Some(b) = &r.baseline {
        write_baseline(b, out)?;
    }
    write_findings(r, out)?;
    write_connections(r, out)
}

/// "Against the baseline": where it came from, then the metrics that left their band,
/// worst first, or that none did.
fn write_baseline(b: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let empty = b.metrics.is_empty() && b.unmatched_interfaces.is_empty();
    let window = if empty && b.window.basis == "packets" {
        "window without packets".to_string()
    } else {
        format!(
            "window {} s from {}, {}",
            crate::analyze::baseline::profile::number(b.window.seconds),
            b.window.start,
            match b.window.basis {
                "sidecar" => "the sidecar's covered span",
                _ => "first to last packet",
            }
        )
    };
    writeln!(out, "Against the baseline ({}; {window}):", b.source_text())?;
    if let Some(note) = &b.note {
        writeln!(out, "  note: {note}")?;
    }
    if !b.unmatched_interfaces.is_empty() {
        writeln!(
            out,
            "  not compared (not in the baseline): {}",
            b.unmatched_interfaces.join(", ")
        )?;
    }
    if b.metrics.is_empty() {
        writeln!(
            out,
            "  nothing to compare: the window has no packets on an interface the baseline knows"
        )
    } else if b.deviations.is_empty() {
        writeln!(
            out,
            "  every metric within its band ({} compared)",
            b.metrics.len()
        )
    } else {
        for d in &b.deviations {
            writeln!(out, "  {}", d.text)?;
        }
        Ok(())
    }
}

/// Frame classes and the capture's span.
fn write_frames(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let f = &r.frames;
    writeln!(
        out,
        "{} frames: {} RoCE v2, {} RoCE v1, {} native IB, {} PFC, {} PAUSE, {} ARP, {} other, {} malformed",
        f.total(),
        f.roce_v2,
        f.roce_v1,
        f.native_ib,
        f.pfc,
        f.pause,
        f.arp,
        f.other,
        f.malformed
    )?;
    if f.truncated_ib_headers > 0 {
        writeln!(
            out,
            "{} RoCE packets have extended headers cut by the snaplen",
            f.truncated_ib_headers
        )?;
    }
    writeln!(
        out,
        "time: {} .. {} ({:.3} s)",
        rfc3339_millis(r.first_ns),
        rfc3339_millis(r.last_ns),
        (r.last_ns - r.first_ns) as f64 / 1e9
    )
}

/// What times are relative to: the trigger (and its onset), or the first packet.
fn write_reference(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    match &r.reference {
        Some(x) if x.kind == "trigger" => {
            write!(
                out,
                "trigger `{}` at {} (T); times below are relative to it",
                x.name,
                rfc3339_millis(x.at_ns)
            )?;
            match x.onset_ns {
                Some(o) => writeln!(out, "; onset at T{:+.6} s", (o - x.at_ns) as f64 / 1e9),
                None => writeln!(out),
            }
        }
        _ => writeln!(
            out,
            "no trigger (no sidecar): times below are relative to the first packet"
        ),
    }
}

/// Throughput and sizes.
fn write_figures(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let t = &r.timeline;
    let mean = if r.last_ns > r.first_ns {
        t.bytes.iter().sum::<u64>() as f64 * 8.0 / (r.last_ns - r.first_ns) as f64
    } else {
        0.0
    };
    writeln!(
        out,
        "throughput: peak {:.3} Gbit/s in {} ms bins, mean {:.3} Gbit/s",
        t.peak_gbps(),
        t.bin_ms,
        mean
    )?;
    let s = &r.sizes;
    match (s.implied_mtu, s.mtu_basis) {
        (Some(m), Some("segments")) => writeln!(
            out,
            "sizes: largest frame {} B; path MTU {m} (from multi-packet messages)",
            s.max_frame
        ),
        (Some(m), _) => writeln!(
            out,
            "sizes: largest frame {} B; path MTU at least {m} (no multi-packet message seen)",
            s.max_frame
        ),
        _ => writeln!(out, "sizes: largest frame {} B", s.max_frame),
    }
}

/// What the sidecar says: triggers, window coverage, drops, RDMA counters.
fn write_capture(c: &CaptureContext, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "capture: {} trigger(s), {}; kernel drops {}, NIC drops {}, ring evictions {}, ring-full drops {}",
        c.triggers,
        match c.complete {
            Some(true) => "window complete",
            Some(false) => "window INCOMPLETE",
            None => "window coverage unknown",
        },
        c.kernel_drops,
        c.if_drops,
        c.ring_evictions,
        c.ring_full_drops
    )?;
    match c.rdma_counters.as_ref().and_then(|x| x.delta.as_ref()) {
        Some(d) => {
            let nz: Vec<String> = d.non_zero().map(|(n, v)| format!("{n} +{v}")).collect();
            if nz.is_empty() {
                writeln!(out, "RDMA counters: no change from trigger to end")
            } else {
                writeln!(out, "RDMA counters (trigger to end): {}", nz.join(", "))
            }
        }
        None => writeln!(out, "RDMA counters: not recorded"),
    }
}

/// The findings in time order.
fn write_findings(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{} findings:", r.findings.len())?;
    for f in &r.findings {
        writeln!(
            out,
            "  {:<16} {:<7} {}{}",
            stamp(r, f),
            match f.severity {
                Severity::Error => "ERROR",
                Severity::Warning => "warn",
                Severity::Info => "info",
            },
            f.conn
                .as_ref()
                .map(|c| format!("{c}: "))
                .unwrap_or_default(),
            f.text
        )?;
    }
    Ok(())
}

/// One line per connection, worst first.
fn write_connections(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{} connections (src > dst QP), worst first:",
        r.connections.len()
    )?;
    for c in &r.connections {
        let when = match c.max_silence_start {
            Some(at) if c.max_silence_open => {
                format!("from {} to the end of the capture", stamp_at(r, at))
            }
            Some(at) => format!("at {}", stamp_at(r, at)),
            None => "at -".to_owned(),
        };
        writeln!(
            out,
            "  {} > {} {}: {} packets, {} bytes, longest silence {:.3} ms {when}; {}",
            c.src,
            c.dst,
            c.dest_qp,
            c.packets,
            c.bytes,
            c.max_silence_ms,
            problems(c)
        )?;
    }
    Ok(())
}

/// A connection's problem counters in words (`ok` without any).
fn problems(c: &ConnStats) -> String {
    let mut problems = Vec::new();
    let mut add = |n: u64, what: &str| {
        if n > 0 {
            problems.push(format!("{n} {what}"));
        }
    };
    add(c.stalls, "stalls");
    add(c.psn_gaps, "PSN gaps");
    add(c.psn_regressions, "go-back-N");
    add(c.duplicates, "duplicates");
    add(c.naks_seq, "NAK seq");
    add(c.naks_rnr, "RNR NAK");
    add(c.naks_other, "other NAK");
    add(c.ackreq_unanswered, "unanswered AckReq");
    add(c.cnps, "CNP");
    add(c.ecn_ce, "ECN-CE");
    if problems.is_empty() {
        "ok".to_owned()
    } else {
        problems.join(", ")
    }
}
