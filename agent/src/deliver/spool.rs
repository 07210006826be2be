//! The spool: the output directory *is* the upload queue.
//!
//! A unit is one capture: `<incident>.pcapng` plus its sidecar `<incident>.json`
//! (written last, so its presence means the capture is complete), and
//! `<incident>.summary.json` / `<incident>.svg` when analysis left them. Files
//! whose name starts with a dot (temporaries such as `.name.tmp`) are never part
//! of a unit. What has been delivered lives on disk beside the unit, in
//! `.<incident>.state` (JSON with a version tag, written to a temporary file,
//! synced and renamed), so nothing is in memory only: a restarted agent scans the
//! directory and resumes where the last one stopped, units left by a crash
//! included.
//!
//! Decisions — which unit to upload next, which units to drop when the spool is
//! over `max_spool` — are pure functions of a [`scan`] ([`next_upload`],
//! [`plan_drops`]) and are unit-tested without I/O; [`scan`], [`save_state`]
//! and [`remove_unit`] are the I/O edges.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::private_file::write_private_atomically;

/// Version tag of the state file.
pub const STATE_SCHEMA: &str = "tripcap.spool/1";

/// The suffixes a unit's files may have, in upload order: the capture first, the
/// sidecar last (so at the far end too, the sidecar's arrival marks a complete unit).
pub const UNIT_SUFFIXES: [&str; 4] = [".pcapng", ".summary.json", ".svg", ".json"];

/// Why a unit is not being retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parked {
    /// HTTP status the endpoint answered, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The store's error code (S3: `NoSuchBucket`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What went wrong and what to do, one line (never a secret).
    pub reason: String,
    /// When it was parked, ns since the epoch.
    pub at_ns: i64,
}

/// What has been delivered of one unit; persisted as `.<incident>.state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitState {
    /// Always [`STATE_SCHEMA`].
    pub schema: String,
    /// File names the endpoint has acknowledged.
    #[serde(default)]
    pub done: BTreeSet<String>,
    /// Failed attempts so far (all rounds).
    #[serde(default)]
    pub attempts: u64,
    /// The last transient failure, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Set when the endpoint refused the unit for good (a 4xx other than 408/429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<Parked>,
    /// S3 multipart uploads in progress: file name → upload id (resumed by
    /// the next attempt or run, aborted when the unit is parked).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub multipart: std::collections::BTreeMap<String, String>,
}

impl Default for UnitState {
    fn default() -> UnitState {
        UnitState {
            schema: STATE_SCHEMA.to_string(),
            done: BTreeSet::new(),
            attempts: 0,
            last_error: None,
            parked: None,
            multipart: std::collections::BTreeMap::new(),
        }
    }
}

/// One file of a unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitFile {
    /// File name (no directory).
    pub name: String,
    /// Size in bytes when scanned.
    pub len: u64,
}

/// Where a unit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Some file is not delivered yet.
    Pending,
    /// Every file present has been delivered.
    Uploaded,
    /// The endpoint refused it; not retried until its state file is removed.
    Parked,
}

/// One capture in the spool, as scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Incident id (the file stem, also the idempotency key).
    pub incident: String,
    /// Files present, in upload order.
    pub files: Vec<UnitFile>,
    /// Sidecar modification time (ns since the epoch): the unit's age.
    pub written_ns: i64,
    /// Persisted delivery state (default when there is no state file yet).
    pub state: UnitState,
    /// The state file could not be read (corrupt or another version): it is
    /// treated as pending from scratch; the collector's idempotency absorbs repeats.
    pub state_unreadable: bool,
}

impl Unit {
    /// Bytes of the unit's files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len).sum()
    }

    /// Where it stands.
    pub fn status(&self) -> Status {
        if self.pending_files().next().is_none() {
            Status::Uploaded
        } else if self.state.parked.is_some() {
            Status::Parked
        } else {
            Status::Pending
        }
    }

    /// Files not yet delivered, in upload order.
    pub fn pending_files(&self) -> impl Iterator<Item = &UnitFile> {
        self.files
            .iter()
            .filter(|f| !self.state.done.contains(&f.name))
    }

    /// Oldest first: by sidecar time, then by name.
    fn age_key(&self) -> (i64, &str) {
        (self.written_ns, &self.incident)
    }
}

/// Path of a unit's state file.
pub fn state_path(dir: &Path, incident: &str) -> PathBuf {
    dir.join(format!(".{incident}.state"))
}

/// The incident of a sidecar file name (`X.json`, not `X.summary.json`, not hidden).
fn sidecar_incident(name: &str) -> Option<&str> {
    if name.starts_with('.') || name.ends_with(".summary.json") {
        return None;
    }
    name.strip_suffix(".json").filter(|s| !s.is_empty())
}

/// Every complete unit in `dir` (pcapng and sidecar both present), oldest first.
/// State files whose unit is gone are removed.
pub fn scan(dir: &Path) -> io::Result<Vec<Unit>> {
    let mut names = BTreeSet::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if let Some(n) = entry.file_name().to_str() {
            names.insert(n.to_string());
        }
    }
    let mut units = Vec::new();
    for name in &names {
        let Some(incident) = sidecar_incident(name) else {
            continue;
        };
        if !names.contains(&format!("{incident}.pcapng")) {
            continue;
        }
        let mut files = Vec::new();
        let mut written_ns = 0;
        for suffix in UNIT_SUFFIXES {
            let file = format!("{incident}{suffix}");
            if !names.contains(&file) {
                continue;
            }
            let Ok(meta) = fs::metadata(dir.join(&file)) else {
                continue; // removed meanwhile
            };
            if !meta.is_file() {
                continue;
            }
            if suffix == ".json" {
                written_ns = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            }
            files.push(UnitFile {
                name: file,
                len: meta.len(),
            });
        }
        if !files.iter().any(|f| f.name.ends_with(".pcapng"))
            || !files.iter().any(|f| f.name == format!("{incident}.json"))
        {
            continue;
        }
        let (state, state_unreadable) = match fs::read(state_path(dir, incident)) {
            Ok(bytes) => match serde_json::from_slice::<UnitState>(&bytes) {
                Ok(s) if s.schema == STATE_SCHEMA => (s, false),
                _ => (UnitState::default(), true),
            },
            Err(_) => (UnitState::default(), false),
        };
        units.push(Unit {
            incident: incident.to_string(),
            files,
            written_ns,
            state,
            state_unreadable,
        });
    }
    // State files of units that are gone (deleted by hand, or after upload).
    for name in &names {
        if let Some(incident) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".state"))
        {
            if !names.contains(&format!("{incident}.json")) {
                let _ = fs::remove_file(dir.join(name));
            }
        }
    }
    units.sort_by(|a, b| a.age_key().cmp(&b.age_key()));
    Ok(units)
}

/// Persist a unit's state (temporary file, sync, rename).
pub fn save_state(dir: &Path, incident: &str, state: &UnitState) -> io::Result<()> {
    let json = serde_json::to_vec_pretty(state).map_err(io::Error::other)?;
    write_private_atomically(&state_path(dir, incident), &json)
}

/// Delete a unit: its sidecar first (so a crash half-way leaves no unit that
/// looks complete), then its other files and its state.
pub fn remove_unit(dir: &Path, unit: &Unit) -> io::Result<()> {
    let sidecar = format!("{}.json", unit.incident);
    match fs::remove_file(dir.join(&sidecar)) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    for f in unit.files.iter().filter(|f| f.name != sidecar) {
        let _ = fs::remove_file(dir.join(&f.name));
    }
    let _ = fs::remove_file(state_path(dir, &unit.incident));
    Ok(())
}

/// The unit to upload next: the oldest pending one. Parked and uploaded units
/// wait; so does a unit in `skip` (e.g. one that just failed this round).
pub fn next_upload<'a>(units: &'a [Unit], skip: &BTreeSet<String>) -> Option<&'a Unit> {
    units
        .iter()
        .filter(|u| u.status() == Status::Pending && !skip.contains(&u.incident))
        .min_by(|a, b| a.age_key().cmp(&b.age_key()))
}

/// Which units to delete so the spool fits in `max_spool` bytes: the oldest
/// uploaded units first, then the oldest parked ones (the endpoint refused them),
/// then the oldest pending ones. Returns the incidents in the order to drop them.
pub fn plan_drops(units: &[Unit], max_spool: u64) -> Vec<(String, Status)> {
    let mut total: u64 = units.iter().map(Unit::bytes).sum();
    if total <= max_spool {
        return Vec::new();
    }
    let mut order: Vec<&Unit> = units.iter().collect();
    let rank = |s: Status| match s {
        Status::Uploaded => 0,
        Status::Parked => 1,
        Status::Pending => 2,
    };
    order.sort_by(|a, b| {
        rank(a.status())
            .cmp(&rank(b.status()))
            .then_with(|| a.age_key().cmp(&b.age_key()))
    });
    let mut drops = Vec::new();
    for u in order {
        if total <= max_spool {
            break;
        }
        total = total.saturating_sub(u.bytes());
        drops.push((u.incident.clone(), u.status()));
    }
    drops
}

/// Bytes and pending units of a scan, for metrics.
pub fn totals(units: &[Unit]) -> (u64, u64, u64) {
    let bytes = units.iter().map(Unit::bytes).sum();
    let pending = units
        .iter()
        .filter(|u| u.status() == Status::Pending)
        .count() as u64;
    let parked = units
        .iter()
        .filter(|u| u.status() == Status::Parked)
        .count() as u64;
    (bytes, pending, parked)
}

/// Parked units grouped by why they were refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParkedReason {
    /// A short, bounded label: the store's error code, else `HTTP <status>`.
    pub label: String,
    /// The newest unit's full reason (one line, no secret).
    pub reason: String,
    /// Units parked for it.
    pub units: u64,
}

/// Parked units grouped by [`ParkedReason::label`], in label order.
pub fn parked_reasons(units: &[Unit]) -> Vec<ParkedReason> {
    let mut by: std::collections::BTreeMap<String, (i64, String, u64)> = Default::default();
    for p in units.iter().filter_map(|u| u.state.parked.as_ref()) {
        let label = match (&p.code, p.status) {
            (Some(c), _) => c.clone(),
            (None, Some(s)) => format!("HTTP {s}"),
            (None, None) => "refused".to_string(),
        };
        let e = by.entry(label).or_insert((i64::MIN, String::new(), 0));
        e.2 += 1;
        if p.at_ns >= e.0 {
            e.0 = p.at_ns;
            e.1 = p.reason.clone();
        }
    }
    by.into_iter()
        .map(|(label, (_, reason, units))| ParkedReason {
            label,
            reason,
            units,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(incident: &str, age: i64, bytes: u64, done: &[&str], parked: bool) -> Unit {
        let files = vec![
            UnitFile {
                name: format!("{incident}.pcapng"),
                len: bytes,
            },
            UnitFile {
                name: format!("{incident}.json"),
                len: 0,
            },
        ];
        let done_all = done == ["*"];
        Unit {
            incident: incident.into(),
            state: UnitState {
                done: if done_all {
                    files.iter().map(|f| f.name.clone()).collect()
                } else {
                    done.iter().map(|d| d.to_string()).collect()
                },
                parked: parked.then(|| Parked {
                    status: Some(413),
                    code: None,
                    reason: "too large".into(),
                    at_ns: 0,
                }),
                ..UnitState::default()
            },
            files,
            written_ns: age,
            state_unreadable: false,
        }
    }

    #[test]
    fn status_follows_the_files_not_delivered() {
        assert_eq!(unit("a", 1, 10, &[], false).status(), Status::Pending);
        assert_eq!(
            unit("a", 1, 10, &["a.pcapng"], false).status(),
            Status::Pending
        );
        assert_eq!(unit("a", 1, 10, &["*"], false).status(), Status::Uploaded);
        assert_eq!(unit("a", 1, 10, &[], true).status(), Status::Parked);
        // A parked unit whose files all arrived anyway counts as uploaded.
        assert_eq!(unit("a", 1, 10, &["*"], true).status(), Status::Uploaded);
    }

    #[test]
    fn next_upload_is_the_oldest_pending_unit() {
        let units = vec![
            unit("c", 3, 10, &[], false),
            unit("a", 1, 10, &["*"], false),
            unit("b", 2, 10, &[], true),
            unit("d", 2, 10, &[], false),
        ];
        let none = BTreeSet::new();
        assert_eq!(next_upload(&units, &none).map(|u| &*u.incident), Some("d"));
        let skip: BTreeSet<String> = ["d".to_string()].into();
        assert_eq!(next_upload(&units, &skip).map(|u| &*u.incident), Some("c"));
        assert!(next_upload(&units[1..3], &none).is_none());
    }

    #[test]
    fn same_age_units_go_by_name() {
        let units = vec![unit("b", 5, 1, &[], false), unit("a", 5, 1, &[], false)];
        assert_eq!(
            next_upload(&units, &BTreeSet::new()).map(|u| &*u.incident),
            Some("a")
        );
    }

    #[test]
    fn parked_units_are_grouped_by_code_or_status() {
        let mut a = unit("a", 1, 10, &[], true);
        let mut b = unit("b", 2, 10, &[], true);
        let c = unit("c", 3, 10, &[], true);
        let d = unit("d", 4, 10, &[], false);
        for (u, at, why) in [(&mut a, 5, "old"), (&mut b, 9, "new")] {
            let p = u.state.parked.as_mut().expect("parked");
            p.code = Some("NoSuchBucket".into());
            p.status = Some(404);
            p.at_ns = at;
            p.reason = why.into();
        }
        let got = parked_reasons(&[a, b, c, d]);
        assert_eq!(
            got,
            vec![
                ParkedReason {
                    label: "HTTP 413".into(),
                    reason: "too large".into(),
                    units: 1
                },
                ParkedReason {
                    label: "NoSuchBucket".into(),
                    reason: "new".into(),
                    units: 2
                },
            ]
        );
    }

    #[test]
    fn drops_uploaded_oldest_first_then_parked_then_pending() {
        let units = vec![
            unit("p1", 1, 100, &[], false),
            unit("u2", 2, 100, &["*"], false),
            unit("k3", 3, 100, &[], true),
            unit("u4", 4, 100, &["*"], false),
            unit("p5", 5, 100, &[], false),
        ];
        assert!(plan_drops(&units, 500).is_empty());
        assert_eq!(
            plan_drops(&units, 450),
            vec![("u2".to_string(), Status::Uploaded)]
        );
        let all: Vec<String> = plan_drops(&units, 0).into_iter().map(|d| d.0).collect();
        assert_eq!(all, ["u2", "u4", "k3", "p1", "p5"]);
        let three: Vec<String> = plan_drops(&units, 200).into_iter().map(|d| d.0).collect();
        assert_eq!(three, ["u2", "u4", "k3"]);
    }

    #[test]
    fn a_single_unit_larger_than_the_spool_is_dropped() {
        let units = vec![unit("big", 1, 1000, &[], false)];
        assert_eq!(plan_drops(&units, 10).len(), 1);
    }

    #[test]
    fn scan_sees_only_complete_units_and_resumes_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        fs::write(d.join("a.pcapng"), b"0123").expect("write");
        fs::write(d.join("a.json"), b"{}").expect("write");
        fs::write(d.join("a.svg"), b"<svg/>").expect("write");
        // Half-written: no sidecar yet, and temporaries.
        fs::write(d.join("b.pcapng"), b"x").expect("write");
        fs::write(d.join(".b.json.tmp"), b"{").expect("write");
        fs::write(d.join(".c.pcapng.tmp"), b"x").expect("write");
        // A sidecar without its capture is not a unit.
        fs::write(d.join("e.json"), b"{}").expect("write");
        // A state file whose unit is gone is cleaned up.
        fs::write(d.join(".gone.state"), b"{}").expect("write");
        let mut st = UnitState::default();
        st.done.insert("a.pcapng".into());
        save_state(d, "a", &st).expect("save");

        let units = scan(d).expect("scan");
        assert_eq!(units.len(), 1);
        let a = &units[0];
        assert_eq!(a.incident, "a");
        let names: Vec<&str> = a.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a.pcapng", "a.svg", "a.json"]);
        assert_eq!(a.bytes(), 4 + 6 + 2);
        assert_eq!(
            a.pending_files()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>(),
            ["a.svg", "a.json"]
        );
        assert!(!d.join(".gone.state").exists());

        // A state file of another version is not trusted.
        fs::write(state_path(d, "a"), br#"{"schema":"tripcap.spool/9"}"#).expect("write");
        let units = scan(d).expect("scan");
        assert!(units[0].state_unreadable);
        assert!(units[0].state.done.is_empty());

        remove_unit(d, &units[0]).expect("remove");
        assert!(scan(d).expect("scan").is_empty());
        assert!(!d.join("a.pcapng").exists() && !d.join("a.svg").exists());
    }
}
