//! The agent's baseline: what this host's traffic normally looks like, kept
//! on disk while the agent runs, so that a capture can say which of its
//! numbers are unusual (issue 14, part 1). The summaries and profiles
//! themselves are analysis ([`crate::analyze::baseline`]); this module keeps
//! them:
//!
//! - [`history`]: the rolling history of summaries on disk, bounded by size
//!   and age, written atomically, a corrupt segment set aside;
//! - [`keeper`]: the thread that summarises the ring, appends to the history
//!   and publishes the profile windows compare with;
//! - [`deviation`]: the `deviation` packet trigger (pure);
//! - [`show`]: `tripcap baseline show` and `export`.
//!
//! Configured by `[baseline]` ([`BaselineConfig`]):
//!
//! ```toml
//! [baseline]
//! enabled = true          # default
//! interval = "1m"         # one summary per interface and class per interval
//! max_bytes = "64MiB"     # history bound on disk
//! keep = "7d"             # and in time
//! dir = "/var/lib/tripcap/baseline"   # default: <output.dir>/baseline
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod deviation;
pub mod history;
pub mod keeper;
pub mod show;

pub use history::History;

/// `[baseline]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineConfig {
    /// Keep a baseline at all.
    pub enabled: bool,
    /// Summary interval.
    pub interval: Duration,
    /// Bound of the history on disk.
    pub max_bytes: u64,
    /// How long summaries are kept.
    pub keep: Duration,
    /// History directory (default: `<output.dir>/baseline`).
    pub dir: Option<PathBuf>,
}

impl Default for BaselineConfig {
    fn default() -> BaselineConfig {
        BaselineConfig {
            enabled: true,
            interval: Duration::from_secs(60),
            max_bytes: 64 << 20,
            keep: Duration::from_secs(7 * 24 * 3600),
            dir: None,
        }
    }
}

impl BaselineConfig {
    /// The history directory, given the output directory.
    pub fn dir(&self, output_dir: &Path) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| output_dir.join("baseline"))
    }

    /// The history, opened (its directory created 0700).
    pub fn open(&self, output_dir: &Path) -> std::io::Result<History> {
        let keep = i64::try_from(self.keep.as_nanos()).unwrap_or(i64::MAX);
        History::open(&self.dir(output_dir), self.max_bytes, keep)
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::analyze::baseline::{Profile, Summarizer, Summary};
    use crate::traffic::{frame, Flow, Generator};
    use crate::wire::linktype;

    /// A whole minute (intervals are aligned to multiples of their length).
    const T0: i64 = 1_796_000_040_000_000_000;
    const MINUTE: i64 = 60_000_000_000;

    /// One minute of `n` packets of two flows, a CNP every `cnp_every` packets.
    fn minute(s: &mut Summarizer, start: i64, n: usize, cnp_every: Option<usize>) -> Vec<Summary> {
        let mut g = Generator::new(
            vec![Flow::new(0x11, 0x12, 0, 4), Flow::new(0x21, 0x22, 0, 4)],
            1024,
        );
        let (mut udp, mut f) = (Vec::new(), Vec::new());
        let mut out = Vec::new();
        for i in 0..n {
            let ts = start + (i as i64) * (MINUTE / n as i64);
            if cnp_every.is_some_and(|k| i % k == 0) {
                // A CNP (opcode 0x81) to QP 0x11, as a NIC sends it: BTH + 16 reserved bytes.
                let mut cnp = vec![0u8; 12 + 16];
                cnp[0] = 0x81;
                cnp[2] = 0xff;
                cnp[3] = 0xff;
                cnp[5..8].copy_from_slice(&[0, 0, 0x11]);
                udp.clear();
                udp.extend_from_slice(&cnp);
                udp.extend_from_slice(&[0; 4]); // ICRC
                frame(
                    Ipv4Addr::new(10, 0, 0, 2),
                    Ipv4Addr::new(10, 0, 0, 1),
                    49152,
                    &udp,
                    &mut f,
                );
                out.extend(s.packet("eth0", linktype::ETHERNET, ts, &f, f.len() as u32));
            }
            if g.next_packet(&mut udp).is_some() {
                frame(
                    Ipv4Addr::new(10, 0, 0, 1),
                    Ipv4Addr::new(10, 0, 0, 2),
                    49152,
                    &udp,
                    &mut f,
                );
                out.extend(s.packet("eth0", linktype::ETHERNET, ts, &f, f.len() as u32));
            }
        }
        out
    }

    #[test]
    fn every_metric_a_summary_gives_is_one_a_trigger_may_name() {
        let s = Summary {
            packets: 1,
            ack_us: Some([1.0, 2.0]),
            ..Summary::default()
        };
        let names: Vec<&str> = s.metrics().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, crate::analyze::baseline::summary::METRICS);
    }

    #[test]
    fn summaries_of_generated_minutes_show_a_cnp_storm_against_their_profile() {
        let mut s = Summarizer::new(MINUTE);
        let mut history = Vec::new();
        for m in 0..120 {
            history.extend(minute(
                &mut s,
                T0 + m * MINUTE,
                3000,
                (m % 40 == 0).then_some(1000),
            ));
        }
        history.extend(s.tick(T0 + 121 * MINUTE));
        assert_eq!(history.len(), 120, "one summary a minute (one class)");
        let first = &history[1];
        assert_eq!((first.interface.as_str(), first.class), ("eth0", 0));
        assert_eq!(first.packets, 3000);
        assert_eq!(first.end_ns - first.start_ns, MINUTE);
        assert_eq!(first.max_payload, 1024);
        assert_eq!(first.implied_mtu(), Some(1024));
        assert!(first.qps >= 2, "{first:?}");

        let dir = tempfile::tempdir().expect("tempdir");
        let h = History::open(dir.path(), 64 << 20, i64::MAX).expect("open");
        h.append(&history, T0 + 121 * MINUTE).expect("append");
        let profile = Profile::of(&h.load(0).expect("load"));

        let healthy = minute(&mut s, T0 + 200 * MINUTE, 3000, None);
        let healthy: Vec<Summary> = healthy
            .into_iter()
            .chain(s.tick(T0 + 202 * MINUTE))
            .collect();
        assert!(
            profile.compare(&healthy).is_empty(),
            "{:?}",
            profile.compare(&healthy)
        );
        let storm = minute(&mut s, T0 + 300 * MINUTE, 3000, Some(5));
        let storm: Vec<Summary> = storm.into_iter().chain(s.tick(T0 + 302 * MINUTE)).collect();
        let flagged = profile.compare(&storm);
        assert_eq!(
            flagged.first().map(|d| d.metric.as_str()),
            Some("cnp_per_s"),
            "{flagged:?}"
        );
        assert!(flagged[0].value > 9.0, "{flagged:?}");
    }
}
