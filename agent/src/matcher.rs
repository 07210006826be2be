//! From a log line to firings: the one matching path shared by followed logs,
//! `tripcap wrap` and `tripcap triggers test`.
//!
//! [`Matcher`] owns what turns bytes into [`Firing`]s: the compiled
//! [`TriggerSet`], one perftest parser per source when `[perftest]` thresholds
//! are configured, and the placement of each hit in time from the line's own
//! evidence ([`tripcap_triggers::evidence`]):
//!
//! - `at_ns` (T) is the line's timestamp when it carries one within
//!   [`tripcap_triggers::evidence::MAX_LINE_SKEW`] of the read time, else the
//!   read time;
//! - `onset_ns` is `T - stuck_for` when the line says how long the operation
//!   was stuck (`ran for 600027 milliseconds`, `Timeout(ms)=600000`), so the
//!   recorder asks for `[onset - pre, T + post]`.
//!
//! [`run`] is the agent's loop: lines from a channel → firings → [`Recorder::fire`].
//! It is also where storms are made quiet: a firing the recorder suppresses
//! (cooldown) is counted, not logged; the counts are logged at most every
//! [`STORM_LOG_EVERY`] and the recorder puts them in the next capture's
//! `suppressed_matches`. Memory stays bounded because nothing per line is kept:
//! the channel is bounded (the follower waits), perftest parsers are capped at
//! [`MAX_PERFTEST_SOURCES`], and a window records at most
//! [`crate::recorder::MAX_TRIGGERS_PER_WINDOW`] lines.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::Receiver;
use tripcap_triggers::perftest::{Breach, Measure, PerftestEvent, PerftestParser, Thresholds};
use tripcap_triggers::{evidence, LineMatch, ScanCache, TimeContext, TriggerSet};

mod docker_json;

use crate::follow::LogLine;
use crate::recorder::{Fired, Firing, Recorder, TriggerId, TriggerSpec, TriggerTable};

/// Name of the trigger that fires when a perftest result row breaks a `[perftest]` threshold.
pub const PERFTEST_THRESHOLD_TRIGGER: &str = "perftest-threshold";
/// Class of [`PERFTEST_THRESHOLD_TRIGGER`].
pub const PERFTEST_THRESHOLD_CLASS: &str = "perftest_threshold";
/// Sources with their own perftest parser at most; beyond, all parsers are reset.
pub const MAX_PERFTEST_SOURCES: usize = 4096;
/// Suppressed matches are summed and logged at most this often.
pub const STORM_LOG_EVERY: Duration = Duration::from_secs(10);

/// Matches lines against the triggers; see the module doc.
#[derive(Debug)]
pub struct Matcher {
    set: TriggerSet,
    specs: Vec<TriggerSpec>,
    perftest: Option<(Thresholds, usize)>,
    parsers: HashMap<Arc<Path>, PerftestParser>,
    matches: Vec<LineMatch>,
    scan: ScanCache,
    /// The id of each of [`Matcher::specs`]: in a table of its own until
    /// [`Matcher::register`] puts them in the recorder's.
    ids: Vec<TriggerId>,
}

impl Matcher {
    /// Register every trigger a firing may name in the recorder's table; the
    /// firings then carry the recorder's ids.
    pub fn register(&mut self, table: &mut TriggerTable) {
        self.ids = self.specs.iter().map(|s| table.add(s.clone())).collect();
    }

    /// The trigger `id` names, if it is one of this matcher's.
    pub fn spec(&self, id: TriggerId) -> Option<&TriggerSpec> {
        self.position(id).map(|i| &self.specs[i])
    }

    fn position(&self, id: TriggerId) -> Option<usize> {
        self.ids.iter().position(|&x| x == id)
    }

    /// A matcher for `set`, plus the [`PERFTEST_THRESHOLD_TRIGGER`] when
    /// `perftest` thresholds are given (its window is the default 30 s + 30 s).
    pub fn new(set: TriggerSet, perftest: Option<Thresholds>) -> Matcher {
        let mut specs: Vec<TriggerSpec> = set
            .defs()
            .iter()
            .map(|d| TriggerSpec {
                name: d.name.clone(),
                class: d.class.clone(),
                pre: d.pre,
                post: d.post,
                cooldown: d.cooldown,
            })
            .collect();
        let perftest = perftest.map(|t| {
            specs.push(TriggerSpec {
                name: PERFTEST_THRESHOLD_TRIGGER.into(),
                class: PERFTEST_THRESHOLD_CLASS.into(),
                pre: tripcap_triggers::DEFAULT_PRE,
                post: tripcap_triggers::DEFAULT_POST,
                cooldown: tripcap_triggers::DEFAULT_COOLDOWN,
            });
            (t, specs.len() - 1)
        });
        let mut own = TriggerTable::default();
        let ids = specs.iter().map(|s| own.add(s.clone())).collect();
        Matcher {
            scan: set.scan_cache(),
            set,
            specs,
            perftest,
            parsers: HashMap::new(),
            matches: Vec::new(),
            ids,
        }
    }

    /// Every trigger a hit may name, in index order (the recorder's list starts with these).
    pub fn specs(&self) -> &[TriggerSpec] {
        &self.specs
    }

    /// Whether nothing can ever fire.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Push onto `out` the range (without its `\n`) of every line of `chunk`
    /// (whole lines, see [`TriggerSet::lines_that_may_fire`]) that
    /// [`Matcher::line`] must be given: the lines that may fire, found in one
    /// pass over the chunk, or every line when `[perftest]` thresholds are set
    /// (their parser reads every line), or when the chunk is Docker's json-file
    /// (the filter reads the raw bytes; [`Matcher::line`] unwraps each line first).
    /// The lines left out fire nothing.
    pub fn lines_to_match(&mut self, chunk: &[u8], out: &mut Vec<Range<usize>>) {
        if self.perftest.is_some() || docker_json::is_envelope(chunk) {
            tripcap_triggers::scan::all_lines(chunk, out)
        } else {
            self.set.lines_that_may_fire(chunk, &mut self.scan, out)
        }
    }

    /// Match one line of `source` read at `read_ns`; pushes a [`Firing`] for
    /// each trigger it fires, placed by the line's evidence, into `out` (cleared
    /// first; the line itself is not copied in) and returns whether there are any.
    /// A line of Docker's json-file log is matched on what the program printed.
    pub fn line(
        &mut self,
        source: &Arc<Path>,
        bytes: &[u8],
        read_ns: i64,
        out: &mut Vec<Firing>,
    ) -> bool {
        out.clear();
        self.matches.clear();
        let unwrapped = docker_json::unwrap(bytes);
        let bytes = unwrapped.as_deref().map_or(bytes, str::as_bytes);
        // The chunk filter first: it rules out most lines for a fraction of what
        // finding which patterns match costs.
        let matched = self.set.may_fire(bytes, &mut self.scan)
            && self.set.match_line(bytes, &mut self.matches);
        let breach = match self.perftest {
            Some((thresholds, index)) => self.perftest_line(source, bytes, thresholds, index),
            None => None,
        };
        if !matched && breach.is_none() {
            return false;
        }
        let ev = evidence(bytes, TimeContext::utc(read_ns));
        let (onset, at) = ev.window(read_ns, Duration::ZERO, Duration::ZERO);
        let onset_ns = ev.stuck_for.map(|_| onset);
        let ids = &self.ids;
        let id = |i: usize| ids.get(i).copied().unwrap_or_default();
        for m in self.matches.drain(..) {
            out.push(Firing {
                trigger: id(m.trigger),
                at_ns: at,
                onset_ns,
                groups: m.groups,
                ..Firing::default()
            });
        }
        out.extend(breach.map(|(trigger, groups)| Firing {
            trigger: id(trigger),
            at_ns: at,
            groups,
            ..Firing::default()
        }));
        true
    }

    fn perftest_line(
        &mut self,
        source: &Arc<Path>,
        bytes: &[u8],
        thresholds: Thresholds,
        index: usize,
    ) -> Option<(usize, Vec<(String, String)>)> {
        if !self.parsers.contains_key(source) && self.parsers.len() >= MAX_PERFTEST_SOURCES {
            self.parsers.clear();
        }
        let parser = self
            .parsers
            .entry(Arc::clone(source))
            .or_insert_with(|| PerftestParser::new(thresholds));
        match parser.feed_line(bytes)? {
            PerftestEvent::Breach { result, breach } => {
                Some((index, breach_groups(&result, &breach)))
            }
            // Error lines fire through the `perftest` pack when it is enabled.
            PerftestEvent::Result(_) | PerftestEvent::Error { .. } => None,
        }
    }
}

/// The parsed perftest row as metadata groups.
fn breach_groups(
    result: &tripcap_triggers::perftest::PerftestResult,
    breach: &Breach,
) -> Vec<(String, String)> {
    let mut g: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            g.push((k.to_string(), v));
        }
    };
    let h = &result.header;
    put("test", h.test.clone());
    put("device", h.device.clone());
    put("transport", h.transport.clone());
    put("connection", h.connection.clone());
    put("mtu", h.mtu.map(|m| m.to_string()));
    put("link_type", h.link_type.clone());
    put("qps", h.qps.map(|q| q.to_string()));
    put("bytes", Some(result.bytes.to_string()));
    put("iterations", Some(result.iterations.to_string()));
    let f = |v: Option<f64>| v.map(|x| format!("{x:.2}"));
    match &result.measure {
        Measure::Bandwidth {
            peak_gbps,
            average_gbps,
            msg_rate_mpps,
        } => {
            put("bw_peak_gbps", f(*peak_gbps));
            put("bw_average_gbps", f(*average_gbps));
            put("msg_rate_mpps", f(*msg_rate_mpps));
        }
        Measure::Latency {
            min_us,
            max_us,
            typical_us,
            avg_us,
            p99_us,
            ..
        } => {
            put("t_min_us", f(*min_us));
            put("t_max_us", f(*max_us));
            put("t_typical_us", f(*typical_us));
            put("t_avg_us", f(*avg_us));
            put("t_p99_us", f(*p99_us));
        }
    }
    match breach {
        Breach::BandwidthBelow { threshold_gbps, .. } => {
            put("breach", Some("bw_below".into()));
            put("threshold_gbps", f(Some(*threshold_gbps)));
        }
        Breach::LatencyAbove { threshold_us, .. } => {
            put("breach", Some("lat_above".into()));
            put("threshold_us", f(Some(*threshold_us)));
        }
    }
    g
}

/// Counts of suppressed matches per trigger, logged at most every [`STORM_LOG_EVERY`].
struct StormLog {
    counts: Vec<u64>,
    since: Instant,
}

impl StormLog {
    fn add(&mut self, trigger: usize) {
        if let Some(c) = self.counts.get_mut(trigger) {
            *c += 1;
        }
    }

    fn flush(&mut self, specs: &[TriggerSpec], force: bool) {
        if !force && self.since.elapsed() < STORM_LOG_EVERY {
            return;
        }
        let secs = self.since.elapsed().as_secs_f64();
        for (i, c) in self.counts.iter_mut().enumerate() {
            if *c > 0 {
                let name = specs.get(i).map_or("?", |s| s.name.as_str());
                tracing::info!(trigger = %name, suppressed = *c, seconds = format!("{secs:.1}"), "matches suppressed (cooldown): counted in the trigger's next capture");
                *c = 0;
            }
        }
        self.since = Instant::now();
    }
}

/// Match every line from `lines` and fire `recorder` (with which `matcher` has
/// registered its triggers); `now` gives the read time. Returns when `lines` closes.
pub async fn run(
    mut lines: Receiver<LogLine>,
    mut matcher: Matcher,
    recorder: Arc<Recorder>,
    now: impl Fn() -> i64 + Send,
) {
    let mut firings = Vec::new();
    let mut storm = StormLog {
        counts: vec![0; matcher.specs().len()],
        since: Instant::now(),
    };
    while let Some(line) = lines.recv().await {
        storm.flush(matcher.specs(), false);
        if !matcher.line(&line.path, &line.bytes, now(), &mut firings) {
            continue;
        }
        for mut firing in firings.drain(..) {
            let Some(index) = matcher.position(firing.trigger) else {
                continue;
            };
            firing.source = Some(line.path.display().to_string());
            firing.line_no = Some(line.line_no);
            firing.line = Some(line.bytes.clone());
            let name = matcher.specs()[index].name.as_str();
            match recorder.fire(firing) {
                Ok(Fired::Suppressed) => storm.add(index),
                Ok(Fired::Merged(incident)) => {
                    tracing::debug!(trigger = %name, file = %line.path.display(), line = line.line_no, incident = %incident, "trigger fired: merged into an open capture")
                }
                Ok(Fired::Opened(incident)) => {
                    tracing::info!(trigger = %name, file = %line.path.display(), line = line.line_no, incident = %incident, "trigger fired")
                }
                Err(e) => {
                    tracing::error!(trigger = %name, error = %e, "trigger fired but no capture could be opened: check the output directory")
                }
            }
        }
    }
    storm.flush(matcher.specs(), true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tripcap_triggers::TriggerDef;

    const S: i64 = 1_000_000_000;

    fn src() -> Arc<Path> {
        Arc::from(Path::new("rank0.log"))
    }

    #[test]
    fn watchdog_line_is_backdated_by_ran_for() {
        let set = TriggerSet::new(tripcap_triggers::all_packs()).expect("packs compile");
        let mut m = Matcher::new(set, None);
        let mut firings = Vec::new();
        let read = 1_750_919_090 * S;
        let line = b"[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.";
        assert!(m.line(&src(), line, read, &mut firings));
        let t = 1_750_919_084 * S + 903_881_913;
        assert_eq!(firings.len(), 1);
        assert_eq!(firings[0].at_ns, t, "T is the line's own time");
        assert_eq!(firings[0].onset_ns, Some(t - 600_020_000_000));
        // Without a timestamp, T is the read time.
        let line = b"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 5000 milliseconds before timing out.";
        assert!(m.line(&src(), line, read, &mut firings));
        assert_eq!(firings[0].at_ns, read);
        assert_eq!(firings[0].onset_ns, Some(read - 5 * S));
        assert!(!m.line(
            &src(),
            b"NCCL INFO Bootstrap : Using eth0",
            read,
            &mut firings
        ));
    }

    #[test]
    fn only_lines_that_may_fire_are_matched_unless_perftest_reads_every_line() {
        let chunk = b"NCCL INFO Bootstrap : Using eth0\n[Rank 1] Watchdog caught collective operation timeout\n #bytes #iterations\n";
        let mut lines = Vec::new();
        let mut m = Matcher::new(
            TriggerSet::new(tripcap_triggers::all_packs()).expect("packs compile"),
            None,
        );
        m.lines_to_match(chunk, &mut lines);
        assert_eq!(lines, vec![33..86]);
        let t = Thresholds::parse(Some("40Gb/s"), None).expect("valid");
        let mut m = Matcher::new(TriggerSet::empty(), Some(t));
        lines.clear();
        m.lines_to_match(chunk, &mut lines);
        assert_eq!(lines, vec![0..32, 33..86, 87..106]);
    }

    /// Docker's json-file: the wording that ends a line and the quote inside one are
    /// matched as the program printed them, in the chunk path as in the line path.
    #[test]
    fn docker_json_file_lines_are_matched_on_what_the_program_printed() {
        let set = TriggerSet::new(tripcap_triggers::all_packs()).expect("packs compile");
        let mut m = Matcher::new(set, None);
        let lines: [&[u8]; 3] = [
            br#"{"log":"RuntimeError: Socket Timeout\n","stream":"stderr","time":"2026-12-07T10:00:00.1Z"}"#,
            br#"{"log":"NCCL INFO Bootstrap : Using eth0\n","stream":"stdout","time":"2026-12-07T10:00:00.2Z"}"#,
            br#"{"log":"[rank1]:[W1229 22:06:38.480071392 ProcessGroupNCCL.cpp:1662] [PG ID 0 PG GUID 0 Rank 1] Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Broken pipe\n","stream":"stderr","time":"2026-12-07T10:00:00.3Z"}"#,
        ];
        let mut firings = Vec::new();
        let fired: Vec<bool> = lines
            .iter()
            .map(|l| m.line(&src(), l, 0, &mut firings))
            .collect();
        assert_eq!(fired, [true, false, true]);
        // As one chunk: every line reaches `line` (the filter would read the envelope).
        let chunk = lines.join(&b'\n');
        let mut ranges = Vec::new();
        m.lines_to_match(&chunk, &mut ranges);
        assert_eq!(ranges.len(), 3);
        // The same lines unwrapped fire the same way: the envelope changes nothing else.
        assert!(m.line(&src(), b"RuntimeError: Socket Timeout", 0, &mut firings));
    }

    #[test]
    fn slow_perftest_row_fires_the_threshold_trigger_with_the_result() {
        let set =
            TriggerSet::new(vec![TriggerDef::new("x", vec!["never-here".into()])]).expect("valid");
        let t = Thresholds::parse(Some("40Gb/s"), None).expect("valid");
        let mut m = Matcher::new(set, Some(t));
        assert_eq!(m.specs()[1].name, PERFTEST_THRESHOLD_TRIGGER);
        let run = [
            "                    RDMA_Write BW Test",
            " Device         : mlx5_0",
            " Link type      : Ethernet",
            " Mtu            : 4096[B]",
            "---------------------------------------------------------------------------------------",
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
            " 65536      5000             23.10              22.95                0.043772",
            "---------------------------------------------------------------------------------------",
        ];
        let mut firings = Vec::new();
        let mut fired = Vec::new();
        for l in run {
            if m.line(&src(), l.as_bytes(), 0, &mut firings) {
                fired.append(&mut firings);
            }
        }
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(
            m.spec(fired[0].trigger).map(|s| s.name.as_str()),
            Some(PERFTEST_THRESHOLD_TRIGGER)
        );
        let g = &fired[0].groups;
        for (k, v) in [
            ("device", "mlx5_0"),
            ("mtu", "4096"),
            ("bw_average_gbps", "22.95"),
            ("breach", "bw_below"),
            ("threshold_gbps", "40.00"),
        ] {
            assert!(g.contains(&(k.to_string(), v.to_string())), "{k} in {g:?}");
        }
    }
}
