//! The JSON sidecar written beside every capture file: why it was taken and how
//! complete it is. Its schema is versioned (`schema`); fields are only added.
//!
//! A capture that could not cover what was asked says so here (`window.complete`
//! is false and `window.shortfall` lists each reason); it is never silent.

use serde::{Deserialize, Serialize};

/// Version of the sidecar schema.
pub const SCHEMA: &str = "tripcap.capture/1";

/// One trigger that fired into this capture.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TriggerRecord {
    /// Trigger name.
    pub name: String,
    /// Class of failure (`nccl_timeout`, …, `manual`, `custom`).
    pub class: String,
    /// When it fired, ns since the Unix epoch (capture clock).
    pub at_ns: i64,
    /// `at_ns` as RFC 3339.
    pub at: String,
    /// When the failure began, if the line said (back-dated window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onset_ns: Option<i64>,
    /// The log file the line came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Line number in that file (1-based, since tripcap started following it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_no: Option<u64>,
    /// The matching line (lossy UTF-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// Named groups the pattern captured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<(String, String)>,
    /// The window this trigger asked for: [start, end] in ns.
    pub asked: [i64; 2],
}

/// The window: asked vs covered.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WindowReport {
    /// Asked window start (ns, earliest of all triggers).
    pub asked_start_ns: i64,
    /// Asked window end (ns, latest of all triggers).
    pub asked_end_ns: i64,
    /// First capture time the file is complete from.
    pub covered_start_ns: i64,
    /// Last capture time the file is complete to.
    pub covered_end_ns: i64,
    /// `asked_*` and `covered_*` as RFC 3339, for people.
    pub asked: [String; 2],
    /// See `asked`.
    pub covered: [String; 2],
    /// Whether every packet of the asked window is in the file.
    pub complete: bool,
    /// Why not, one sentence each.
    pub shortfall: Vec<String>,
}

/// One captured interface in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InterfaceReport {
    /// Name.
    pub name: String,
    /// Link type number.
    pub linktype: u16,
    /// Snapshot length.
    pub snaplen: u32,
    /// BPF filter.
    pub filter: String,
    /// Timestamp precision libpcap really gave (`nano` or `micro`).
    pub tstamp_precision: String,
    /// Packets written from this interface.
    pub packets: u64,
    /// Kernel drops (buffer full) while the window was open.
    pub kernel_drops: u64,
    /// Drops by the NIC/driver while the window was open.
    pub if_drops: u64,
    /// The libpcap that captured it (`pcap_lib_version`); absent for a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub libpcap: Option<String>,
    /// Where timestamps came from: `software` (the host's clock, libpcap's
    /// default and the RDMA sniffer's only kind) or `file` for a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<String>,
    /// Link speed in Mbit/s (`/sys/class/net/IF/speed`) when the window was written;
    /// absent when unknown (a replay, `lo`, a link that is down) or from an older tripcap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// MTU in bytes (`/sys/class/net/IF/mtu`); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}

/// The sidecar document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sidecar {
    /// Schema tag.
    pub schema: String,
    /// tripcap version that wrote it.
    pub tripcap_version: String,
    /// Incident id (also the file stem): unique per capture, the upload idempotency key.
    pub incident: String,
    /// Host name.
    pub host: String,
    /// Capture file name (beside this sidecar).
    pub file: String,
    /// Every trigger recorded in this capture, in firing order.
    pub triggers: Vec<TriggerRecord>,
    /// Matches that fired no capture and were not recorded (cooldown, line cap):
    /// those merged into this window, plus those of its first trigger suppressed
    /// (cooldown, no window open) since that trigger's previous capture.
    pub suppressed_matches: u64,
    /// Asked vs covered.
    pub window: WindowReport,
    /// Packets written.
    pub packets: u64,
    /// Captured bytes written (packet data, without pcapng framing).
    pub bytes: u64,
    /// Bytes of those packets on the wire.
    pub wire_bytes: u64,
    /// Per interface.
    pub interfaces: Vec<InterfaceReport>,
    /// Ring blocks evicted (memory full) while the window was open.
    pub ring_evictions: u64,
    /// Packets dropped because every ring buffer was pinned, while the window was open.
    pub ring_full_drops: u64,
    /// RDMA device counters (`/sys/class/infiniband/*/ports/*/{counters,hw_counters}`)
    /// of the devices behind the captured interfaces, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_counters: Option<RdmaCounters>,
    /// What a reader should know about how the capture was taken (e.g. that
    /// libpcap's RDMA sniffer counts none of its own drops), one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// When the window belongs to an incident shared across a job's nodes
    /// (`[fleet]`): who took part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetReport>,
}

/// A fleet incident as this node saw it when its window closed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FleetReport {
    /// The job.
    pub job: String,
    /// The agreed incident id (the same on every node).
    pub incident: String,
    /// The host whose announcement started it.
    pub announced_by: String,
    /// Announcements merged into it.
    pub announcements: u64,
    /// The hosts that capture for it, with their windows.
    pub hosts: Vec<FleetHost>,
    /// Hosts of the job that were asked and have not answered (down, or
    /// disconnected from NATS).
    pub silent: Vec<String>,
}

/// One host's part in a fleet incident.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FleetHost {
    /// Host name.
    pub host: String,
    /// It announced a trigger into the incident.
    pub announced: bool,
    /// The window it captures [start, end] (ns), once it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<[i64; 2]>,
    /// How far back its ring reached when it answered (ns): packets before are gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring_from_ns: Option<i64>,
}

/// RDMA counters read when the window opened (the trigger) and when it closed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RdmaCounters {
    /// Read when the trigger fired.
    pub at_trigger: crate::counters::CounterSnapshot,
    /// Read when the window closed.
    pub at_end: crate::counters::CounterSnapshot,
    /// `at_end - at_trigger` (wrapping-safe).
    pub delta: crate::counters::CounterSnapshot,
}
