//! The baseline's history on disk: one segment per hour of capture time
//! (`hour-<n>.jsonl`, one [`Summary`] a line), each rewritten whole, privately
//! and atomically (temporary, then rename), so a crash leaves the old segment
//! or the new one, never half of one. Bounded by age (`keep`) and size
//! (`max_bytes`): the oldest segments go first. A segment that does not parse
//! is set aside (renamed `corrupt-…`, not read again) and the rest is used.

use std::io;
use std::path::{Path, PathBuf};

use crate::analyze::baseline::Summary;
use crate::private_file::write_private_atomically;

/// Nanoseconds in a segment.
const SEGMENT_NS: i64 = 3_600_000_000_000;

/// The history directory and its bounds.
#[derive(Debug, Clone)]
pub struct History {
    dir: PathBuf,
    max_bytes: u64,
    keep_ns: i64,
}

/// A segment file: its hour and path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment {
    hour: i64,
    path: PathBuf,
    bytes: u64,
}

impl History {
    /// The history in `dir` (created 0700), kept within `max_bytes` and `keep_ns`.
    pub fn open(dir: &Path, max_bytes: u64, keep_ns: i64) -> io::Result<History> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        Ok(History {
            dir: dir.to_path_buf(),
            max_bytes,
            keep_ns,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn segments(&self) -> io::Result<Vec<Segment>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name();
            let Some(hour) = name
                .to_str()
                .and_then(|n| n.strip_prefix("hour-"))
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|n| n.parse::<i64>().ok())
            else {
                continue;
            };
            let bytes = e.metadata().map_or(0, |m| m.len());
            out.push(Segment {
                hour,
                path: e.path(),
                bytes,
            });
        }
        out.sort_by_key(|s| s.hour);
        Ok(out)
    }

    fn segment_path(&self, hour: i64) -> PathBuf {
        self.dir.join(format!("hour-{hour}.jsonl"))
    }

    /// Add `summaries`, then drop what is older than `keep` before `now_ns`
    /// and the oldest segments while over `max_bytes`.
    pub fn append(&self, summaries: &[Summary], now_ns: i64) -> io::Result<()> {
        let mut by_hour: std::collections::BTreeMap<i64, Vec<&Summary>> = Default::default();
        for s in summaries {
            by_hour
                .entry(s.start_ns.div_euclid(SEGMENT_NS))
                .or_default()
                .push(s);
        }
        for (hour, new) in by_hour {
            let path = self.segment_path(hour);
            let mut text = match std::fs::read(&path) {
                Ok(t) if self.parse(&path, &t).is_some() => t,
                Ok(_) => Vec::new(), // set aside by parse
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            for s in new {
                serde_json::to_writer(&mut text, s).map_err(io::Error::other)?;
                text.push(b'\n');
            }
            write_private_atomically(&path, &text)?;
        }
        self.enforce(now_ns)
    }

    /// Drop segments wholly older than `keep` before `now_ns`, then the
    /// oldest while the history is over `max_bytes`.
    fn enforce(&self, now_ns: i64) -> io::Result<()> {
        let mut segs = self.segments()?;
        let oldest_kept = now_ns.saturating_sub(self.keep_ns);
        segs.retain(|s| {
            let ends = (s.hour + 1).saturating_mul(SEGMENT_NS);
            if ends <= oldest_kept {
                let _ = std::fs::remove_file(&s.path);
                false
            } else {
                true
            }
        });
        let mut total: u64 = segs.iter().map(|s| s.bytes).sum();
        for s in &segs {
            if total <= self.max_bytes {
                break;
            }
            std::fs::remove_file(&s.path)?;
            total -= s.bytes;
        }
        Ok(())
    }

    /// Every summary that starts at or after `since_ns`, oldest first.
    pub fn load(&self, since_ns: i64) -> io::Result<Vec<Summary>> {
        let mut out = Vec::new();
        for seg in self.segments()? {
            if (seg.hour + 1).saturating_mul(SEGMENT_NS) <= since_ns {
                continue;
            }
            let text = match std::fs::read(&seg.path) {
                Ok(t) => t,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if let Some(v) = self.parse(&seg.path, &text) {
                out.extend(v.into_iter().filter(|s| s.start_ns >= since_ns));
            }
        }
        out.sort_by_key(|s| s.start_ns);
        Ok(out)
    }

    /// The summaries of a segment's text, or `None` after setting it aside.
    fn parse(&self, path: &Path, text: &[u8]) -> Option<Vec<Summary>> {
        let parsed: Result<Vec<Summary>, _> = text
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(serde_json::from_slice::<Summary>)
            .collect();
        match parsed {
            Ok(v) => Some(v),
            Err(e) => {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let aside = self.dir.join(format!("corrupt-{name}"));
                tracing::warn!(file = %path.display(), error = %e, set_aside = %aside.display(), "a baseline segment does not parse: set aside, the rest of the history is used");
                let _ = std::fs::rename(path, &aside);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(start_ns: i64, packets: u64) -> Summary {
        Summary {
            start_ns,
            end_ns: start_ns + 60_000_000_000,
            interface: "eth0".into(),
            class: 26,
            packets,
            ..Summary::default()
        }
    }

    #[test]
    fn appends_survive_reopening_and_a_corrupt_segment_is_set_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let h = History::open(&dir.path().join("b"), 1 << 30, i64::MAX).expect("open");
        let t0 = 1_796_000_000_000_000_000i64;
        h.append(&[summary(t0, 1), summary(t0 + 60_000_000_000, 2)], t0)
            .expect("append");
        h.append(&[summary(t0 + 2 * SEGMENT_NS, 3)], t0)
            .expect("append");
        let again = History::open(&dir.path().join("b"), 1 << 30, i64::MAX).expect("reopen");
        let all = again.load(0).expect("load");
        assert_eq!(all.iter().map(|s| s.packets).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(again.load(t0 + 60_000_000_000).expect("load").len(), 2);

        let first = again.segments().expect("segments")[0].path.clone();
        std::fs::write(&first, b"{not json\n").expect("corrupt it");
        let left = again.load(0).expect("load");
        assert_eq!(left.iter().map(|s| s.packets).collect::<Vec<_>>(), [3]);
        assert!(dir
            .path()
            .join("b")
            .join(format!(
                "corrupt-{}",
                first.file_name().expect("name").to_string_lossy()
            ))
            .exists());
        // Appending to the hour of a set-aside segment starts it afresh.
        again.append(&[summary(t0, 9)], t0).expect("append");
        assert_eq!(again.load(0).expect("load").len(), 2);
    }

    #[test]
    fn a_long_run_stays_within_its_size_and_age() {
        let dir = tempfile::tempdir().expect("tempdir");
        let keep = 24 * SEGMENT_NS;
        let max = 64 << 10;
        let h = History::open(dir.path(), max, keep).expect("open");
        let t0 = 1_796_000_000_000_000_000i64;
        // Ten simulated days, one summary a minute, in batches of an hour.
        for hour in 0..240i64 {
            let batch: Vec<Summary> = (0..60)
                .map(|m| summary(t0 + hour * SEGMENT_NS + m * 60_000_000_000, 100))
                .collect();
            let now = t0 + (hour + 1) * SEGMENT_NS;
            h.append(&batch, now).expect("append");
            let segs = h.segments().expect("segments");
            let bytes: u64 = segs.iter().map(|s| s.bytes).sum();
            assert!(bytes <= max, "{bytes} bytes after hour {hour}");
            assert!(
                segs.iter().all(|s| (s.hour + 1) * SEGMENT_NS > now - keep),
                "a segment older than keep after hour {hour}"
            );
        }
        let kept = h.load(0).expect("load");
        assert!(!kept.is_empty());
        assert_eq!(
            kept.last().map(|s| s.start_ns),
            Some(t0 + 239 * SEGMENT_NS + 59 * 60_000_000_000)
        );
    }
}
