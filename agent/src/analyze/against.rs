//! `tripcap analyze FILE --baseline BASE`: reading BASE and putting the
//! capture against it.
//!
//! BASE is recognised by its content: a JSON object is a profile, exactly what
//! `tripcap baseline export` writes (`serde_json` of
//! [`Profile`]); a pcap/pcapng file is a capture of healthy traffic, cut into
//! 1-second intervals per interface and class ([`profile_of_capture`]: the
//! seconds without packets inside its span count as idle intervals, and the
//! partial first and last second count over the part the capture covers, at
//! least half a second; see [`whole_seconds`]).
//! [`Report::set_baseline`] then compares the window's whole-capture summaries
//! ([`super::connections::analyze_summarized`]) with it, their rates over the
//! sidecar's covered span when there is one (widened to the packets), else
//! first to last packet.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use super::baseline::comparison::{Comparison, Source, WindowSpan};
use super::baseline::{Profile, Summarizer, Summary};
use super::connections::Report;
use crate::capture_file::reader::Reader;
use crate::wire;

/// Intervals of a baseline capture.
pub const CAPTURE_INTERVAL_NS: i64 = 1_000_000_000;

/// Idle intervals filled in at most (a capture whose timestamps span more is
/// summarised from the seconds that have packets only).
const MAX_FILLED: i64 = 1_000_000;

/// Largest profile file read.
const MAX_PROFILE_BYTES: u64 = 256 << 20;

/// A baseline and where it came from.
#[derive(Debug, Clone)]
pub struct Base {
    /// Its bands.
    pub profile: Profile,
    /// For the report.
    pub source: Source,
}

/// Reads BASE: a profile (JSON) or a capture (pcap/pcapng), by its content.
/// The error is one line naming the fix.
pub fn load_base(path: &Path) -> Result<Base, String> {
    let shown = path.display();
    let fix = "give the profile `tripcap baseline export` writes, or a pcap/pcapng capture of healthy traffic";
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| read_up_to(&mut f, &mut head))
        .map_err(|e| format!("cannot read the baseline {shown}: {e} ({fix})"))?;
    let head = &head[..n];
    let first = head
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace() && !matches!(b, 0xef | 0xbb | 0xbf));
    let file = Some(path.display().to_string());
    if first == Some(b'{') {
        let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if len > MAX_PROFILE_BYTES {
            return Err(format!(
                "the baseline {shown} is {len} bytes, too large for a profile ({fix})"
            ));
        }
        let text = std::fs::read(path)
            .map_err(|e| format!("cannot read the baseline {shown}: {e} ({fix})"))?;
        let profile: Profile = serde_json::from_slice(&text).map_err(|e| {
            format!("the baseline {shown} is JSON but not a baseline profile: {e} ({fix})")
        })?;
        if profile.bands.is_empty() {
            return Err(format!(
                "the baseline profile {shown} has no bands (export it after the agent has summarised some traffic, or give a capture)"
            ));
        }
        let source = Source::of("profile", file, &profile);
        return Ok(Base { profile, source });
    }
    if is_capture_magic(head) {
        let profile = profile_of_capture(path)?;
        let source = Source::of("capture", file, &profile);
        return Ok(Base { profile, source });
    }
    Err(if n == 0 {
        format!("the baseline {shown} is empty ({fix})")
    } else {
        format!(
            "the baseline {shown} is neither a profile (JSON) nor a pcap/pcapng capture ({fix})"
        )
    })
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// pcap (µs or ns, either byte order) or pcapng.
fn is_capture_magic(head: &[u8]) -> bool {
    let Some(m) = head.get(..4) else {
        return false;
    };
    matches!(
        m,
        [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xc3, 0xd4]
            | [0x4d, 0x3c, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d]
            | [0x0a, 0x0d, 0x0d, 0x0a]
    )
}

/// The profile of a capture cut into 1-second intervals per interface and
/// class (see the module documentation).
pub fn profile_of_capture(path: &Path) -> Result<Profile, String> {
    let shown = path.display();
    let fix = "give a readable pcap/pcapng capture of healthy traffic, or a profile";
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot open the baseline capture {shown}: {e} ({fix})"))?;
    let mut reader = Reader::new(std::io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| format!("the baseline capture {shown}: {e} ({fix})"))?;
    let mut s = Summarizer::new(CAPTURE_INTERVAL_NS);
    let mut all = Vec::new();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    loop {
        let p = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(format!("the baseline capture {shown}: {e} ({fix})")),
        };
        let ts = wire::frame_timestamp_ns(p.link_type, p.data).unwrap_or(p.ts_ns);
        first = first.min(ts);
        last = last.max(ts);
        all.extend(s.capture_packet(&p, ts));
    }
    all.extend(s.tick(i64::MAX));
    if all.is_empty() {
        return Err(format!(
            "the baseline capture {shown} has no packets ({fix})"
        ));
    }
    Ok(Profile::of(&whole_seconds(
        all,
        CAPTURE_INTERVAL_NS,
        [first, last],
    )))
}

/// `summaries` of a capture whose packets span `[first, last]` (ns), cut in
/// intervals of `interval_ns`: the idle intervals of that span filled in
/// (zero, for every class seen on the interface), and the partial first and
/// last interval over the part of it the capture covers, at least half an
/// interval (unless the capture is one interval: then over its span), so that
/// the seconds the capture only began or ended in are neither rates of a whole
/// second nor bursts blown up.
pub fn whole_seconds(
    summaries: Vec<Summary>,
    interval_ns: i64,
    [first, last]: [i64; 2],
) -> Vec<Summary> {
    let interval_ns = interval_ns.max(1);
    let floor = |t: i64| t - t.rem_euclid(interval_ns);
    let (first_start, last_start) = (floor(first), floor(last));
    let mut classes: BTreeMap<String, BTreeSet<u8>> = BTreeMap::new();
    for s in &summaries {
        classes
            .entry(s.interface.clone())
            .or_default()
            .insert(s.class);
    }
    let have: BTreeSet<(String, u8, i64)> = summaries
        .iter()
        .map(|s| (s.interface.clone(), s.class, s.start_ns))
        .collect();
    let mut out = summaries;
    if last_start >= first_start && (last_start - first_start) / interval_ns <= MAX_FILLED {
        for (iface, classes) in &classes {
            let mut t = first_start;
            while t <= last_start {
                for &class in classes {
                    if !have.contains(&(iface.clone(), class, t)) {
                        out.push(Summary {
                            start_ns: t,
                            end_ns: t + interval_ns,
                            interface: iface.clone(),
                            class,
                            ..Summary::default()
                        });
                    }
                }
                t += interval_ns;
            }
        }
    }
    let half = interval_ns / 2;
    for s in &mut out {
        if first_start == last_start {
            if last > first {
                (s.start_ns, s.end_ns) = (first, last);
            }
            continue;
        }
        if s.start_ns == first_start {
            s.start_ns = first.min(s.end_ns - half);
        }
        if s.start_ns >= last_start && s.start_ns < last_start + interval_ns {
            s.end_ns = last.max(s.start_ns + half);
        }
    }
    out.sort_by(|a, b| {
        (a.start_ns, &a.interface, a.class).cmp(&(b.start_ns, &b.interface, b.class))
    });
    out
}

impl Report {
    /// Compares the capture with `profile` (from `source`) into
    /// [`Report::baseline`]. Needs the whole-capture summaries
    /// ([`super::connections::analyze_summarized`]; without them the window
    /// is empty). Their rates are over the sidecar's covered span, widened to
    /// the packets, when the context has one; else first to last packet. The
    /// sidecar's interfaces count as the window's even without a packet (so a
    /// link that went quiet shows as traffic below its band).
    pub fn set_baseline(&mut self, profile: &Profile, source: Source) {
        let has_packets = self.frames.total() > 0;
        let (start, end, basis) = match self.capture.as_ref().and_then(|c| c.covered_ns) {
            Some([a, b]) if has_packets => (a.min(self.first_ns), b.max(self.last_ns), "sidecar"),
            Some([a, b]) => (a, b, "sidecar"),
            None => (self.first_ns, self.last_ns, "packets"),
        };
        let mut window = self.summaries.clone().unwrap_or_default();
        for s in &mut window {
            s.start_ns = start;
            s.end_ns = end;
        }
        let captured = self
            .capture
            .as_ref()
            .map(|c| c.interfaces.clone())
            .unwrap_or_default();
        self.baseline = Some(Comparison::new(
            profile,
            source,
            &window,
            &captured,
            WindowSpan::new(start, end, basis),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(i: i64, packets: u64, class: u8) -> Summary {
        Summary {
            start_ns: i * CAPTURE_INTERVAL_NS,
            end_ns: (i + 1) * CAPTURE_INTERVAL_NS,
            interface: "eth0".into(),
            class,
            packets,
            ..Summary::default()
        }
    }

    #[test]
    fn idle_seconds_are_filled_and_partial_edges_count_over_what_was_covered() {
        const S: i64 = CAPTURE_INTERVAL_NS;
        // Packets from 10.9 s to 14.2 s.
        let got = whole_seconds(
            vec![
                sec(10, 5, 0),
                sec(11, 100, 0),
                sec(11, 3, 26),
                sec(14, 7, 0),
            ],
            S,
            [10 * S + 900_000_000, 14 * S + 200_000_000],
        );
        let rows: Vec<(i64, i64, u8, u64)> = got
            .iter()
            .map(|s| (s.start_ns, s.end_ns, s.class, s.packets))
            .collect();
        assert_eq!(
            rows,
            [
                // 0.1 s covered: counted over half a second.
                (10 * S + S / 2, 11 * S, 0, 5),
                (10 * S + S / 2, 11 * S, 26, 0),
                (11 * S, 12 * S, 0, 100),
                (11 * S, 12 * S, 26, 3),
                (12 * S, 13 * S, 0, 0),
                (12 * S, 13 * S, 26, 0),
                (13 * S, 14 * S, 0, 0),
                (13 * S, 14 * S, 26, 0),
                (14 * S, 14 * S + S / 2, 0, 7),
                (14 * S, 14 * S + S / 2, 26, 0),
            ]
        );
        assert_eq!(got[0].metrics()[0], ("packets_per_s", 10.0));
        // Within one second: over the capture's span.
        let got = whole_seconds(vec![sec(1, 5, 0)], S, [S + 100_000_000, S + 200_000_000]);
        assert_eq!(
            (got[0].start_ns, got[0].end_ns),
            (S + 100_000_000, S + 200_000_000)
        );
    }

    #[test]
    fn base_files_are_told_apart_by_content() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").expect("write");
        let e = load_base(&empty).expect_err("empty");
        assert!(e.contains("is empty") && !e.contains('\n'), "{e}");
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, b"hello world\n").expect("write");
        let e = load_base(&text).expect_err("text");
        assert!(
            e.contains("neither a profile (JSON) nor a pcap/pcapng"),
            "{e}"
        );
        let report = dir.path().join("x.summary.json");
        std::fs::write(&report, br#"{"schema": "tripcap.analyze.connections"}"#).expect("write");
        let e = load_base(&report).expect_err("not a profile");
        assert!(e.contains("JSON but not a baseline profile"), "{e}");
        let missing = load_base(&dir.path().join("nope")).expect_err("missing");
        assert!(missing.contains("cannot read the baseline"), "{missing}");
        let profile = Profile::of(&[sec(1, 5, 0), sec(2, 7, 0)]);
        let good = dir.path().join("p.json");
        std::fs::write(&good, serde_json::to_vec(&profile).expect("json")).expect("write");
        let base = load_base(&good).expect("profile");
        assert_eq!(base.profile, profile);
        assert_eq!(base.source.kind, "profile");
        assert_eq!(base.source.intervals, 2);
    }
}
