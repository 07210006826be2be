//! A capture against a baseline, as its report shows it: where the baseline
//! came from, the window's span, every metric of the window against its band,
//! and the ones that left it, worst first, each with its sentence
//! ([`Deviation::describe`]). Pure: profiles and summaries in, the section out.
//!
//! Interfaces are matched by name. When the window and the baseline each have
//! exactly one interface and the names differ (two captures from different
//! hosts), they are compared anyway, by traffic class, and the section says
//! so; otherwise an interface of the window the baseline does not know is
//! listed as unmatched and not compared.

use std::collections::BTreeSet;

use serde::Serialize;

use super::profile::{deviations, Band, Deviation, Profile, Side};
use super::summary::Summary;
use crate::clock::rfc3339_millis;

/// Where the baseline came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// `profile` (a profile file), `capture` (a capture summarised per
    /// second) or `host` (the agent's baseline of this host).
    pub kind: &'static str,
    /// The file it was read from, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// First and last interval start, RFC 3339 UTC (none for an empty profile).
    pub span: Option<[String; 2]>,
    /// Intervals the bands are made of (the most of any band).
    pub intervals: usize,
    /// Their length in seconds, when the profile says.
    pub interval_s: Option<f64>,
}

impl Source {
    /// The source `kind` of `profile`, read from `file` if any.
    pub fn of(kind: &'static str, file: Option<String>, profile: &Profile) -> Source {
        Source {
            kind,
            file,
            span: profile
                .span_ns
                .map(|[a, b]| [rfc3339_millis(a), rfc3339_millis(b)]),
            intervals: profile.bands.values().map(|b| b.samples).max().unwrap_or(0),
            interval_s: profile.interval_ns.map(|n| n as f64 / 1e9),
        }
    }
}

/// The span the window's rates are over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowSpan {
    /// Start, RFC 3339 UTC.
    pub start: String,
    /// End.
    pub end: String,
    /// Seconds.
    pub seconds: f64,
    /// `sidecar` (the window the file is complete for, widened to its packets)
    /// or `packets` (first to last packet).
    pub basis: &'static str,
}

impl WindowSpan {
    /// `start_ns` to `end_ns`, on `basis`.
    pub fn new(start_ns: i64, end_ns: i64, basis: &'static str) -> WindowSpan {
        WindowSpan {
            start: rfc3339_millis(start_ns),
            end: rfc3339_millis(end_ns),
            seconds: (end_ns - start_ns).max(0) as f64 / 1e9,
            basis,
        }
    }
}

/// One metric of the window against its band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricRow {
    /// Interface (the window's name).
    pub interface: String,
    /// Traffic class (DSCP, or 255).
    pub class: u8,
    /// Metric name.
    pub metric: String,
    /// The window's value.
    pub value: f64,
    /// The baseline's median (0 when it never saw the metric).
    pub median: f64,
    /// Its p99.
    pub p99: f64,
    /// Its p1.
    pub p1: f64,
    /// Intervals of the band (0: never seen).
    pub samples: usize,
    /// `value / median` (`null` when the median is 0 and the value is not).
    pub ratio: f64,
    /// Whether it left its band.
    pub left_band: bool,
    /// Which side, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
}

/// A metric that left its band, with its sentence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviationRow {
    /// The deviation.
    #[serde(flatten)]
    pub deviation: Deviation,
    /// [`Deviation::describe`].
    pub text: String,
}

/// The `baseline` section of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Where the baseline came from.
    pub source: Source,
    /// The window's span.
    pub window: WindowSpan,
    /// `interface` (bands found by interface name) or `class` (one interface
    /// each, names differ: by traffic class only).
    pub matched_by: &'static str,
    /// What the matching did, when it was not by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Interfaces of the window the baseline does not know (not compared).
    pub unmatched_interfaces: Vec<String>,
    /// Every metric of the window against its band.
    pub metrics: Vec<MetricRow>,
    /// The metrics that left their band, worst first.
    pub deviations: Vec<DeviationRow>,
}

impl Comparison {
    /// `window` (whole-window summaries over `span`) against `profile`;
    /// `captured` names interfaces the capture watched (its sidecar's), which
    /// count as the window's even without a packet.
    pub fn new(
        profile: &Profile,
        source: Source,
        window: &[Summary],
        captured: &[String],
        span: WindowSpan,
    ) -> Comparison {
        let ours: BTreeSet<&str> = window
            .iter()
            .map(|s| s.interface.as_str())
            .chain(captured.iter().map(String::as_str))
            .collect();
        let theirs = profile.interfaces();
        let (renamed, matched_by, note) = match (ours.iter().next(), theirs.first()) {
            (Some(w), Some(b)) if ours.len() == 1 && theirs.len() == 1 && w != b => (
                Some(profile.renamed(b, w)),
                "class",
                Some(format!(
                    "the baseline's interface {b} and the window's {w} differ: compared by traffic class"
                )),
            ),
            _ => (None, "interface", None),
        };
        let profile = renamed.as_ref().unwrap_or(profile);
        let known = profile.interfaces();
        let unmatched_interfaces = ours
            .iter()
            .filter(|i| !known.contains(i))
            .map(|i| i.to_string())
            .collect();
        let captured: Vec<String> = ours.iter().map(|i| i.to_string()).collect();
        let assessed = profile.assess_captured(window, &captured);
        let metrics = assessed
            .iter()
            .map(|a| {
                let Band {
                    median,
                    p99,
                    p1,
                    samples,
                } = a.band;
                MetricRow {
                    interface: a.interface.clone(),
                    class: a.class,
                    metric: a.metric.clone(),
                    value: a.value,
                    median,
                    p99,
                    p1,
                    samples,
                    ratio: a.ratio,
                    left_band: a.left.is_some(),
                    side: a.left,
                }
            })
            .collect();
        let deviations = deviations(&assessed)
            .into_iter()
            .map(|d| DeviationRow {
                text: d.describe(),
                deviation: d,
            })
            .collect();
        Comparison {
            source,
            window: span,
            matched_by,
            note,
            unmatched_interfaces,
            metrics,
            deviations,
        }
    }

    /// The source in words: `profile base.json (120 intervals, … to …)`.
    pub fn source_text(&self) -> String {
        let s = &self.source;
        let what = match (s.kind, &s.file) {
            (kind, Some(f)) => format!("{kind} {f}"),
            ("host", None) => "this host's baseline".to_string(),
            (kind, None) => kind.to_string(),
        };
        let of = match s.interval_s {
            Some(i) => format!(" of {} s", super::profile::number(i)),
            None => String::new(),
        };
        match &s.span {
            Some([a, b]) => format!("{what}: {} intervals{of} from {a} to {b}", s.intervals),
            None => format!("{what}: empty"),
        }
    }
}
