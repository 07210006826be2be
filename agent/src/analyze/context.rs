//! What the sidecar says about how a capture was taken: the trigger (the reference finding
//! times are relative to), drops, window coverage and RDMA counter deltas.
//!
//! The sidecar (`<stem>.json` beside the capture, see [`crate::sidecar`]) is read through
//! a lenient view of only the fields used here, every one optional: a sidecar from an older
//! or newer tripcap, or one without `rdma_counters`, still gives what it has.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::counters::CounterSnapshot;

/// What finding times are relative to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reference {
    /// `trigger` or `capture_start`.
    pub kind: &'static str,
    /// Trigger name (empty for `capture_start`).
    pub name: String,
    /// The instant, ns since the epoch.
    pub at_ns: i64,
    /// When the failure began, if the trigger said (ns since the epoch).
    pub onset_ns: Option<i64>,
}

impl Reference {
    /// The first packet as reference.
    pub fn capture_start(first_ns: i64) -> Reference {
        Reference {
            kind: "capture_start",
            name: String::new(),
            at_ns: first_ns,
            onset_ns: None,
        }
    }
}

/// RDMA counters the agent read at trigger time and at the end of the post-window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RdmaCounters {
    /// At the trigger.
    pub at_trigger: Option<CounterSnapshot>,
    /// At the end of the window.
    pub at_end: Option<CounterSnapshot>,
    /// `at_end - at_trigger`.
    pub delta: Option<CounterSnapshot>,
}

/// What the sidecar says about how the capture was taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CaptureContext {
    /// The first trigger.
    pub reference: Option<Reference>,
    /// Triggers recorded.
    pub triggers: usize,
    /// Whether every packet of the asked window is in the file.
    pub complete: Option<bool>,
    /// Why not.
    pub shortfall: Vec<String>,
    /// Kernel drops over all interfaces while the window was open.
    pub kernel_drops: u64,
    /// NIC/driver drops.
    pub if_drops: u64,
    /// Ring blocks evicted while the window was open.
    pub ring_evictions: u64,
    /// Packets dropped because every ring buffer was pinned.
    pub ring_full_drops: u64,
    /// RDMA counters, when the agent read them.
    pub rdma_counters: Option<RdmaCounters>,
    /// The fastest captured interface's link speed in Mbit/s, when the sidecar recorded
    /// one (`/sys/class/net/IF/speed`; sidecars before schema 3 of the report have none).
    pub link_speed_mbps: Option<u64>,
    /// The smallest captured interface's MTU (Ethernet, bytes), when recorded.
    pub mtu: Option<u32>,
    /// The span the file is complete for (the sidecar's `covered_*`), when it
    /// has one: what a baseline comparison takes the window's rates over.
    #[serde(skip)]
    pub covered_ns: Option<[i64; 2]>,
    /// The captured interfaces' names (the sidecar's `interfaces[].name`).
    #[serde(skip)]
    pub interfaces: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SidecarView {
    triggers: Vec<TriggerView>,
    window: Option<WindowView>,
    interfaces: Vec<InterfaceView>,
    ring_evictions: u64,
    ring_full_drops: u64,
    rdma_counters: Option<RdmaCounters>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TriggerView {
    name: String,
    at_ns: i64,
    onset_ns: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WindowView {
    complete: Option<bool>,
    shortfall: Vec<String>,
    covered_start_ns: Option<i64>,
    covered_end_ns: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InterfaceView {
    name: String,
    kernel_drops: u64,
    if_drops: u64,
    speed_mbps: Option<u64>,
    mtu: Option<u32>,
}

/// `<stem>.json` beside `capture`.
pub fn sidecar_path(capture: &Path) -> PathBuf {
    let stem = capture
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    capture.with_file_name(format!("{stem}.json"))
}

/// The context from a sidecar document (any JSON value; missing fields are empty).
pub fn context_from_json(v: serde_json::Value) -> Result<CaptureContext, serde_json::Error> {
    let s: SidecarView = serde_json::from_value(v)?;
    Ok(CaptureContext {
        reference: s.triggers.first().map(|t| Reference {
            kind: "trigger",
            name: t.name.clone(),
            at_ns: t.at_ns,
            onset_ns: t.onset_ns,
        }),
        triggers: s.triggers.len(),
        complete: s.window.as_ref().and_then(|w| w.complete),
        covered_ns: s.window.as_ref().and_then(|w| {
            let (a, b) = (w.covered_start_ns?, w.covered_end_ns?);
            (a > 0 && b > a).then_some([a, b])
        }),
        shortfall: s.window.map(|w| w.shortfall).unwrap_or_default(),
        interfaces: s
            .interfaces
            .iter()
            .map(|i| i.name.clone())
            .filter(|n| !n.is_empty())
            .collect(),
        kernel_drops: s.interfaces.iter().map(|i| i.kernel_drops).sum(),
        if_drops: s.interfaces.iter().map(|i| i.if_drops).sum(),
        ring_evictions: s.ring_evictions,
        ring_full_drops: s.ring_full_drops,
        rdma_counters: s.rdma_counters,
        link_speed_mbps: s
            .interfaces
            .iter()
            .filter_map(|i| i.speed_mbps)
            .filter(|&m| m > 0)
            .max(),
        mtu: s
            .interfaces
            .iter()
            .filter_map(|i| i.mtu)
            .filter(|&m| m > 0)
            .min(),
    })
}

/// The context of a sidecar the agent holds in memory (not yet on disk).
pub fn context_from_sidecar(s: &crate::sidecar::Sidecar) -> Result<CaptureContext, String> {
    let v = serde_json::to_value(s).map_err(|e| e.to_string())?;
    context_from_json(v).map_err(|e| e.to_string())
}

/// Reads the sidecar beside `capture`: `Ok(None)` when there is none.
pub fn load_context(capture: &Path) -> Result<Option<CaptureContext>, String> {
    let path = sidecar_path(capture);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the sidecar {}: {e}", path.display())),
    };
    let v: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| format!("the sidecar {} is not JSON: {e}", path.display()))?;
    context_from_json(v).map(Some).map_err(|e| {
        format!(
            "the sidecar {} is not a tripcap sidecar: {e}",
            path.display()
        )
    })
}
