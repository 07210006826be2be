//! `tripcap baseline show` and `tripcap baseline export`: the profile of the
//! history on disk, for people (a table per interface and traffic class) or
//! as JSON (exactly what `export` writes and `tripcap analyze --baseline`
//! reads: a serialised [`Profile`]).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::deviation::class_name;
use super::history::History;
use crate::analyze::baseline::Profile;

/// Why the baseline could not be shown.
#[derive(Debug)]
pub enum ShowError {
    /// No history directory there.
    Missing(PathBuf),
    /// The history is there but holds no interval since the time asked.
    Empty(PathBuf),
    /// Reading or writing failed.
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for ShowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShowError::Missing(d) => write!(
                f,
                "no baseline at {}: the agent keeps one there once it has run for an interval (give the agent's config with -c, or --dir)",
                d.display()
            ),
            ShowError::Empty(d) => write!(
                f,
                "the baseline at {} holds no interval in that time: widen --since, or let the agent run for an interval",
                d.display()
            ),
            ShowError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for ShowError {}

/// The profile of the history in `dir` since `since_ns`.
pub fn load_profile(dir: &Path, since_ns: i64) -> Result<Profile, ShowError> {
    if !dir.is_dir() {
        return Err(ShowError::Missing(dir.to_path_buf()));
    }
    let history =
        History::open(dir, u64::MAX, i64::MAX).map_err(|e| ShowError::Io(dir.to_path_buf(), e))?;
    let summaries = history
        .load(since_ns)
        .map_err(|e| ShowError::Io(dir.to_path_buf(), e))?;
    if summaries.is_empty() {
        return Err(ShowError::Empty(dir.to_path_buf()));
    }
    Ok(Profile::of(&summaries))
}

/// Writes `profile` as JSON to `path`, privately and atomically.
pub fn export(profile: &Profile, path: &Path) -> Result<(), ShowError> {
    let mut json = serde_json::to_vec_pretty(profile)
        .map_err(|e| ShowError::Io(path.to_path_buf(), io::Error::other(e)))?;
    json.push(b'\n');
    crate::private_file::write_private_atomically(path, &json)
        .map_err(|e| ShowError::Io(path.to_path_buf(), e))
}

/// The profile as a table per interface and class: median and p99 of each metric.
pub fn render(profile: &Profile, dir: &Path) -> String {
    let mut s = String::new();
    let samples = profile.bands.values().map(|b| b.samples).max().unwrap_or(0);
    let _ = write!(s, "baseline in {}", dir.display());
    if let Some([a, b]) = profile.span_ns {
        let _ = write!(
            s,
            ": intervals from {} to {}",
            crate::clock::rfc3339(a),
            crate::clock::rfc3339(b)
        );
    }
    let _ = writeln!(s, " (up to {samples} per class)");
    let mut current: Option<(&str, u8)> = None;
    for ((iface, class, metric), band) in &profile.bands {
        if current != Some((iface.as_str(), *class)) {
            current = Some((iface.as_str(), *class));
            let _ = writeln!(s, "\n{iface}, class {}", class_name(*class));
            let _ = writeln!(
                s,
                "  {:<20} {:>14} {:>14} {:>9}",
                "metric", "median", "p99", "intervals"
            );
        }
        let _ = writeln!(
            s,
            "  {:<20} {:>14} {:>14} {:>9}",
            metric,
            number(band.median),
            number(band.p99),
            band.samples
        );
    }
    s
}

/// A number with as many decimals as its size needs.
fn number(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::baseline::Summary;

    #[test]
    fn shows_and_exports_what_the_history_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = load_profile(&dir.path().join("none"), 0).expect_err("missing");
        assert!(missing.to_string().contains("-c"), "{missing}");
        let h = History::open(dir.path(), 1 << 20, i64::MAX).expect("open");
        let t0 = 1_796_000_000_000_000_000i64;
        let s: Vec<Summary> = (0..10)
            .map(|i| Summary {
                start_ns: t0 + i * 60_000_000_000,
                end_ns: t0 + (i + 1) * 60_000_000_000,
                interface: "eth0".into(),
                class: 26,
                packets: 6000 + 60 * i as u64,
                ..Summary::default()
            })
            .collect();
        h.append(&s, t0).expect("append");
        let p = load_profile(dir.path(), 0).expect("profile");
        let text = render(&p, dir.path());
        assert!(text.contains("eth0, class dscp 26"), "{text}");
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("packets_per_s"))
            .expect("packets row");
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["packets_per_s", "105", "109", "10"],
            "rates 100/s … 109/s: median and p99"
        );
        let empty = load_profile(dir.path(), t0 + 3_600_000_000_000).expect_err("empty");
        assert!(empty.to_string().contains("--since"), "{empty}");
        let out = dir.path().join("p.json");
        export(&p, &out).expect("export");
        let back: Profile =
            serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("parse");
        assert_eq!(back, p);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
