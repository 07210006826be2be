//! One finding of a report: the type the report holds; [`super::findings`] computes them.

use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Traffic stopped or was lost.
    Error,
    /// Traffic was slowed or retried.
    Warning,
    /// Worth knowing.
    Info,
}

/// One thing worth a look.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// When, ns since the epoch (`null`: the whole capture).
    pub at_ns: Option<i64>,
    /// Seconds relative to the report's `reference`.
    pub rel_s: Option<f64>,
    /// How much it matters.
    pub severity: Severity,
    /// Machine-readable kind: `stall`, `go_back_n`, `nak_seq`, `nak_rnr`, `nak_other`,
    /// `psn_gap`, `duplicate`, `unanswered`, `cnp`, `ecn_ce`, `pfc`, `pause`,
    /// `arp_in_silence`, `drops`, `incomplete`, `rdma_counters`.
    pub kind: &'static str,
    /// The connection, as `src > dst 0xQP`.
    pub conn: Option<String>,
    /// The finding in words.
    pub text: String,
}
