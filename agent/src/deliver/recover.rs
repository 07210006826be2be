//! Recovery at start: what a crash or a full disk left in the spool.
//!
//! A window renames its pcapng into place before it writes the sidecar, whose
//! presence marks the unit complete. If the agent died (or the disk filled)
//! between the two, the pcapng sits alone: no unit, so it would never be
//! uploaded, counted or dropped. And a crash mid-write leaves temporaries
//! (`.NAME.tmp`) that nothing else removes.
//!
//! [`recover`] runs once at start, before any window can open: it removes the
//! temporaries and completes each lone pcapng with a sidecar built from the
//! file itself (packets, bytes, interfaces, time covered), marked incomplete
//! with the reason, so the unit joins the spool like any other. A pcapng it
//! cannot read is left alone and reported.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use crate::capture_file::reader::Reader;
use crate::clock::rfc3339;
use crate::private_file::{is_tmp_name, write_private_atomically};
use crate::sidecar::{InterfaceReport, Sidecar, WindowReport, SCHEMA};

/// What [`recover`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Temporaries removed (file names).
    pub swept: Vec<String>,
    /// Lone captures given a recovered sidecar (incidents).
    pub completed: Vec<String>,
    /// Lone captures that could not be completed: (file name, why).
    pub unreadable: Vec<(String, String)>,
}

/// Sweep temporaries and complete lone captures in `dir`; `host` goes in the
/// recovered sidecars. Errors only when `dir` cannot be listed.
pub fn recover(dir: &Path, host: &str) -> std::io::Result<Recovered> {
    let mut out = Recovered::default();
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in &names {
        if is_tmp_name(name) && std::fs::remove_file(dir.join(name)).is_ok() {
            out.swept.push(name.clone());
        }
    }
    for name in &names {
        let Some(incident) = name.strip_suffix(".pcapng").filter(|s| !s.starts_with('.')) else {
            continue;
        };
        if names.iter().any(|n| n == &format!("{incident}.json")) {
            continue;
        }
        let pcapng = dir.join(name);
        match recovered_sidecar(&pcapng, incident, host) {
            Ok(sidecar) => {
                let path = dir.join(format!("{incident}.json"));
                let json = serde_json::to_vec_pretty(&sidecar).map_err(std::io::Error::other)?;
                match write_private_atomically(&path, &json) {
                    Ok(()) => out.completed.push(incident.to_string()),
                    Err(e) => out
                        .unreadable
                        .push((name.clone(), format!("cannot write its sidecar: {e}"))),
                }
            }
            Err(why) => out.unreadable.push((name.clone(), why)),
        }
    }
    Ok(out)
}

/// A sidecar for a capture whose own was never written, from the file alone.
fn recovered_sidecar(pcapng: &Path, incident: &str, host: &str) -> Result<Sidecar, String> {
    let file = File::open(pcapng).map_err(|e| format!("cannot open it: {e}"))?;
    let mut reader = Reader::new(BufReader::new(file)).map_err(|e| e.to_string())?;
    let (mut packets, mut bytes, mut wire_bytes) = (0u64, 0u64, 0u64);
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    let mut per_iface: Vec<u64> = Vec::new();
    let mut read_error = None;
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                packets += 1;
                bytes += p.data.len() as u64;
                wire_bytes += u64::from(p.orig_len);
                first = first.min(p.ts_ns);
                last = last.max(p.ts_ns);
                let i = p.interface_id as usize;
                if per_iface.len() <= i {
                    per_iface.resize(i + 1, 0);
                }
                per_iface[i] += 1;
            }
            Ok(None) => break,
            Err(e) => {
                read_error = Some(e.to_string());
                break;
            }
        }
    }
    if packets == 0 {
        (first, last) = (0, 0);
    }
    let interfaces = reader
        .interfaces()
        .iter()
        .enumerate()
        .map(|(i, f)| InterfaceReport {
            name: f.name.clone().unwrap_or_default(),
            linktype: u16::try_from(f.link_type).unwrap_or(u16::MAX),
            snaplen: f.snaplen,
            filter: String::new(),
            tstamp_precision: String::new(),
            packets: per_iface.get(i).copied().unwrap_or(0),
            kernel_drops: 0,
            if_drops: 0,
            libpcap: None,
            timestamps: None,
            speed_mbps: None,
            mtu: None,
        })
        .collect();
    let mut shortfall = vec![format!(
        "recovered at start: the agent stopped (or its disk filled) after writing {} but before its sidecar; the trigger lines are in the capture's section-header comment (capinfos shows them), drops and counters are unknown",
        file_name(pcapng).display()
    )];
    if let Some(e) = read_error {
        shortfall.push(format!(
            "the file ends early ({e}): packets read up to there are counted"
        ));
    }
    Ok(Sidecar {
        schema: SCHEMA.to_string(),
        tripcap_version: env!("CARGO_PKG_VERSION").to_string(),
        incident: incident.to_string(),
        host: host.to_string(),
        file: file_name(pcapng).display().to_string(),
        triggers: Vec::new(),
        suppressed_matches: 0,
        window: WindowReport {
            asked_start_ns: first,
            asked_end_ns: last,
            covered_start_ns: first,
            covered_end_ns: last,
            asked: [rfc3339(first), rfc3339(last)],
            covered: [rfc3339(first), rfc3339(last)],
            complete: false,
            shortfall,
        },
        packets,
        bytes,
        wire_bytes,
        interfaces,
        ring_evictions: 0,
        ring_full_drops: 0,
        rdma_counters: None,
        notes: Vec::new(),
        fleet: None,
    })
}

fn file_name(path: &Path) -> PathBuf {
    path.file_name().map(PathBuf::from).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_temporaries_and_completes_a_lone_capture() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        // A real capture (the reader tells formats by their magic): 3 packets.
        let mut bytes = Vec::new();
        let frames = [(1_000, 60), (2_000, 60), (3_000, 70)].map(|(t, n)| (t, vec![0u8; n]));
        crate::traffic::write_pcap(&mut bytes, 128, frames).expect("write");
        std::fs::write(d.join("20260101T000000Z-h-t.pcapng"), &bytes).expect("pcapng");
        std::fs::write(d.join(".20260101T000001Z-h-t.pcapng.tmp"), b"half").expect("tmp");
        std::fs::write(d.join("done.pcapng"), &bytes).expect("pcapng");
        std::fs::write(d.join("done.json"), b"{}").expect("sidecar");
        std::fs::write(d.join("junk.pcapng"), b"not a capture").expect("junk");
        let r = recover(d, "h").expect("recover");
        assert_eq!(r.swept, [".20260101T000001Z-h-t.pcapng.tmp"]);
        assert_eq!(r.completed, ["20260101T000000Z-h-t"]);
        assert_eq!(r.unreadable.len(), 1);
        assert_eq!(r.unreadable[0].0, "junk.pcapng");
        let s: Sidecar = serde_json::from_slice(
            &std::fs::read(d.join("20260101T000000Z-h-t.json")).expect("written"),
        )
        .expect("a sidecar");
        assert_eq!((s.packets, s.wire_bytes), (3, 190));
        assert_eq!(
            (s.window.covered_start_ns, s.window.covered_end_ns),
            (1_000, 3_000)
        );
        assert!(!s.window.complete && s.window.shortfall[0].starts_with("recovered at start"));
        assert!(!d.join(".20260101T000001Z-h-t.pcapng.tmp").exists());
    }
}
