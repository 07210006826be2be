//! The built-in packs, evidence and perftest parser against the corpus of real log
//! lines kept in the repository (`tests/data/corpus` at the workspace root; where each
//! line was published is in its `source` column, see `tests/data/README.md`).
//!
//! A missing corpus fails the tests, naming where it looked: these tests never pass by
//! finding nothing. Every failing line is listed in the assertion message.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use tripcap_triggers::perftest::{
    Breach, Measure, PerftestEvent, PerftestParser, PerftestResult, Thresholds,
};
mod common;

use common::candidate_lines;
use tripcap_triggers::{all_packs, evidence, LineMatch, TimeContext, TriggerSet};

fn corpus_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/corpus");
    assert!(
        dir.join("positives.tsv").is_file(),
        "corpus not found: looked for {}",
        dir.join("positives.tsv").display()
    );
    dir
}

/// One TSV row: (class, source, line). The line keeps its leading and trailing spaces.
struct Row {
    class: String,
    source: String,
    line: String,
}

fn load_tsv(name: &str) -> Vec<Row> {
    let path = corpus_dir().join(name);
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.split('\n');
    let header = lines.next().unwrap_or_default();
    assert_eq!(
        header.split('\t').count(),
        3,
        "{}: header must have 3 columns",
        path.display()
    );
    let rows: Vec<Row> = lines
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            let mut cols = l.splitn(3, '\t');
            let (Some(class), Some(source), Some(line)) = (cols.next(), cols.next(), cols.next())
            else {
                panic!(
                    "{}:{}: expected 3 tab-separated columns",
                    path.display(),
                    i + 2
                );
            };
            Row {
                class: class.to_string(),
                source: source.to_string(),
                line: line.to_string(),
            }
        })
        .collect();
    assert!(!rows.is_empty(), "{} has no rows", path.display());
    rows
}

fn builtin() -> TriggerSet {
    TriggerSet::new(all_packs()).expect("built-in packs compile")
}

fn fired(set: &TriggerSet, out: &[LineMatch]) -> Vec<String> {
    out.iter()
        .map(|m| {
            format!(
                "{} ({})",
                set.defs()[m.trigger].name,
                set.defs()[m.trigger].class
            )
        })
        .collect()
}

#[test]
fn every_positive_fires_exactly_one_trigger_of_its_class() {
    let set = builtin();
    let rows = load_tsv("positives.tsv");
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for row in &rows {
        if !set.match_line(row.line.as_bytes(), &mut out) {
            failures.push(format!(
                "did not fire [{}] {:?} ({})",
                row.class, row.line, row.source
            ));
            continue;
        }
        let first = &set.defs()[out[0].trigger];
        if first.class != row.class {
            failures.push(format!(
                "fired {} but corpus says {}: {:?}",
                first.class, row.class, row.line
            ));
        } else if out.len() > 1 {
            failures.push(format!(
                "fired {} triggers {:?}: {:?}",
                out.len(),
                fired(&set, &out),
                row.line
            ));
        }
    }
    eprintln!(
        "positives: {} of {} fire exactly one trigger of their class",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} positive lines fail:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// The lines of `rows` that fire any built-in trigger, each described by `describe`.
fn lines_that_fire(rows: &[Row], describe: impl Fn(&Row, Vec<String>) -> String) -> Vec<String> {
    let set = builtin();
    let mut out = Vec::new();
    rows.iter()
        .filter_map(|row| {
            let hit = set.match_line(row.line.as_bytes(), &mut out);
            hit.then(|| describe(row, fired(&set, &out)))
        })
        .collect()
}

#[test]
fn no_negative_fires() {
    let rows = load_tsv("negatives.tsv");
    let failures = lines_that_fire(&rows, |row, fired| {
        format!("fired {fired:?}: {:?} ({})", row.line, row.source)
    });
    eprintln!(
        "negatives: {} of {} stay silent",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} negative lines fire:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// `tripcap triggers test` gives `match_line` only the lines the scan of a whole
/// chunk finds: every corpus line that fires must be one of them (LF or CRLF, any
/// chunk size), and healthy lines should rarely be (each costs a `match_line`).
#[test]
fn the_chunk_scan_finds_every_corpus_line_that_fires() {
    // Both ways a set matches: lazily (the literal gate, each pattern alone) and whole.
    let lazy = builtin().with_lazy_lines(usize::MAX);
    let whole = TriggerSet::new_whole(all_packs()).expect("built-in packs compile");
    for set in [&lazy, &whole] {
        chunk_scan_finds_every_corpus_line_that_fires(set);
    }
    assert!(!lazy.is_whole() && whole.is_whole());
}

fn chunk_scan_finds_every_corpus_line_that_fires(set: &TriggerSet) {
    let mut lines: Vec<String> = Vec::new();
    for name in ["positives.tsv", "negatives.tsv", "ambiguous.tsv"] {
        lines.extend(load_tsv(name).into_iter().map(|r| r.line));
    }
    for name in perftest_files() {
        lines.extend(perftest_file(&name));
    }
    let negatives: Vec<String> = load_tsv("negatives.tsv")
        .into_iter()
        .map(|r| r.line)
        .collect();
    let mut out = Vec::new();
    let firing: Vec<usize> = (0..lines.len())
        .filter(|&i| set.match_line(lines[i].as_bytes(), &mut out))
        .collect();
    assert!(firing.len() > 200, "only {} lines fire", firing.len());
    for (ending, chunk) in [("\n", 1 << 20), ("\r\n", 4096), ("\n", 300)] {
        let log = lines.join(ending);
        let found = candidate_lines(set, log.as_bytes(), chunk);
        let missed: Vec<&str> = firing
            .iter()
            .filter(|i| found.binary_search(i).is_err())
            .map(|&i| lines[i].as_str())
            .collect();
        assert!(
            missed.is_empty(),
            "{ending:?}, chunks of {chunk}: not found:\n{}",
            missed.join("\n")
        );
        let healthy = candidate_lines(set, negatives.join(ending).as_bytes(), chunk).len();
        assert!(
            healthy * 20 <= negatives.len(),
            "{healthy} of {} healthy lines are candidates: a pattern lets the scan through too often",
            negatives.len()
        );
    }
}

/// Policy (see the `packs` module doc): the built-in packs fire on no
/// ambiguous line — error propagation (`-> 6`), teardown, non-fatal WARNs,
/// retries in progress, perftest hints and launcher exit reports all follow or
/// accompany a line that fires, or are harmless.
#[test]
fn ambiguous_lines_do_not_fire_by_policy() {
    let rows = load_tsv("ambiguous.tsv");
    let failures = lines_that_fire(&rows, |row, fired| {
        format!("[{}] fired {fired:?}: {:?}", row.class, row.line)
    });
    eprintln!(
        "ambiguous: {} of {} stay silent (policy)",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(
        failures.is_empty(),
        "{} ambiguous lines fire against the documented policy:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn evidence_reads_every_ran_for_and_never_the_init_timeout() {
    let ctx = TimeContext::utc(1_798_761_600_000_000_000); // 2027-01-01
    let mut failures = Vec::new();
    let mut with_stuck = 0;
    for file in ["positives.tsv", "negatives.tsv", "ambiguous.tsv"] {
        for row in load_tsv(file) {
            let ev = evidence(row.line.as_bytes(), ctx);
            let expect = row
                .line
                .split("ran for ")
                .nth(1)
                // A line cut short after `ran for 360` says nothing of how long: its
                // `Timeout(ms)` stands.
                .and_then(|rest| rest.split_once(" milliseconds").map(|(ms, _)| ms))
                .and_then(|ms| ms.parse::<u64>().ok())
                .map(Duration::from_millis);
            if expect.is_some() && ev.stuck_for != expect {
                failures.push(format!(
                    "stuck_for {:?} != {:?}: {:?}",
                    ev.stuck_for, expect, row.line
                ));
            }
            if row.class == "benign" && ev.stuck_for.is_some() {
                failures.push(format!(
                    "benign line has stuck_for {:?}: {:?}",
                    ev.stuck_for, row.line
                ));
            }
            if let Some(t) = ev.line_time {
                if t > ctx.reference_ns {
                    failures.push(format!("line_time after the reference: {:?}", row.line));
                }
            }
            with_stuck += usize::from(ev.stuck_for.is_some());
        }
    }
    eprintln!("evidence: {with_stuck} corpus lines carry a stuck_for");
    assert!(with_stuck > 20, "too few stuck_for found: {with_stuck}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The lines of a perftest run, without its `#source:` note.
fn perftest_file(name: &str) -> Vec<String> {
    let path = corpus_dir().join("perftest").join(name);
    let text =
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with("#source:"),
        "{}: first line must be #source:",
        path.display()
    );
    lines.map(str::to_string).collect()
}

fn perftest_files() -> Vec<String> {
    let dir = corpus_dir().join("perftest");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 5,
        "expected the 5 perftest runs in {}",
        dir.display()
    );
    names
}

#[test]
fn perftest_runs_fire_only_when_they_failed() {
    let set = builtin();
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for name in perftest_files() {
        let failed = name.contains("_fail");
        let mut fired_lines = Vec::new();
        for line in perftest_file(&name) {
            if set.match_line(line.as_bytes(), &mut out) {
                let def = &set.defs()[out[0].trigger];
                if def.class != "perftest_error" {
                    failures.push(format!("{name}: fired {} on {line:?}", def.class));
                }
                fired_lines.push(line);
            }
        }
        match (failed, fired_lines.is_empty()) {
            (true, true) => failures.push(format!("{name}: failed run did not fire")),
            (false, false) => {
                failures.push(format!("{name}: successful run fired on {fired_lines:?}"))
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn run(name: &str, thresholds: Thresholds) -> Vec<PerftestEvent> {
    let mut parser = PerftestParser::new(thresholds);
    perftest_file(name)
        .iter()
        .filter_map(|l| parser.feed_line(l.as_bytes()))
        .collect()
}

fn results(events: &[PerftestEvent]) -> Vec<&PerftestResult> {
    events
        .iter()
        .filter_map(|e| match e {
            PerftestEvent::Result(r) | PerftestEvent::Breach { result: r, .. } => Some(r),
            PerftestEvent::Error { .. } => None,
        })
        .collect()
}

fn bw(r: &PerftestResult) -> (Option<f64>, Option<f64>, Option<f64>) {
    match r.measure {
        Measure::Bandwidth {
            peak_gbps,
            average_gbps,
            msg_rate_mpps,
        } => (peak_gbps, average_gbps, msg_rate_mpps),
        Measure::Latency { .. } => panic!("expected a bandwidth row: {r:?}"),
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6 * b.abs().max(1.0))
}

#[test]
fn perftest_gbps_sweep_is_parsed_row_by_row() {
    let name = "ib_write_bw_cuda_dmabuf_success_dranet.txt";
    let events = run(name, Thresholds::default());
    assert!(events.iter().all(|e| !e.fires()), "{events:?}");
    let rows = results(&events);
    assert_eq!(rows.len(), 23);
    let h = &rows[0].header;
    assert_eq!(h.test.as_deref(), Some("RDMA_Write BW Test"));
    assert_eq!(h.device.as_deref(), Some("mlx5_3"));
    assert_eq!(
        (h.mtu, h.link_type.as_deref(), h.transport.as_deref()),
        (Some(4096), Some("Ethernet"), Some("IB"))
    );
    assert_eq!((h.connection.as_deref(), h.qps), (Some("RC"), Some(1)));
    // " 2          5000           0.057240            0.056633            3.539560"
    assert_eq!((rows[0].bytes, rows[0].iterations), (2, 5000));
    let (peak, avg, rate) = bw(rows[0]);
    assert!(
        close(peak, 0.057240) && close(avg, 0.056633) && close(rate, 3.539560),
        "{:?}",
        rows[0]
    );
    // " 8388608    5000             140.55             140.40               0.002092"
    let last = rows[22];
    assert_eq!((last.bytes, last.iterations), (8_388_608, 5000));
    let (peak, avg, rate) = bw(last);
    assert!(
        close(peak, 140.55) && close(avg, 140.40) && close(rate, 0.002092),
        "{last:?}"
    );

    // 65536-byte rows and up average 135.43..140.95 Gb/s; 16384 B (135.43) is below the size floor.
    let slow = Thresholds::parse(Some("140.5Gb/s"), None).expect("valid");
    let breaches: Vec<u64> = run(name, slow)
        .iter()
        .filter_map(|e| match e {
            PerftestEvent::Breach {
                result,
                breach: Breach::BandwidthBelow { .. },
            } => Some(result.bytes),
            _ => None,
        })
        .collect();
    assert_eq!(breaches, vec![1_048_576, 2_097_152, 4_194_304, 8_388_608]);
    let fine = Thresholds::parse(Some("100Gb/s"), None).expect("valid");
    assert!(run(name, fine).iter().all(|e| !e.fires()));
}

#[test]
fn perftest_duration_mode_server_and_client() {
    let name = "ib_write_bw_server_and_client_success_hsn_doc.txt";
    let events = run(
        name,
        Thresholds::parse(Some("40Gb/s"), None).expect("valid"),
    );
    assert!(events.iter().all(|e| !e.fires()), "{events:?}");
    let rows = results(&events);
    assert_eq!(rows.len(), 2);
    for r in rows {
        // " 65536      560960           0.00               98.03              0.186974"
        assert_eq!((r.bytes, r.iterations), (65536, 560_960));
        let (peak, avg, rate) = bw(r);
        assert!(
            close(peak, 0.0) && close(avg, 98.03) && close(rate, 0.186974),
            "{r:?}"
        );
        assert_eq!(r.header.device.as_deref(), Some("mlx5_0"));
        assert_eq!(r.header.link_type.as_deref(), Some("Ethernet"));
    }
    let events = run(
        name,
        Thresholds::parse(Some("100Gb/s"), None).expect("valid"),
    );
    assert_eq!(events.iter().filter(|e| e.fires()).count(), 2);
}

#[test]
fn perftest_latency_and_mbps_tables_with_interleaved_warnings() {
    let name = "ib_read_lat_and_ib_write_bw_success_cpufreq_warnings.txt";
    let events = run(name, Thresholds::default());
    assert!(events.iter().all(|e| !e.fires()), "{events:?}");
    let rows = results(&events);
    assert_eq!(rows.len(), 2);
    // " 2       1000          2.64           5.50         2.69               2.69           0.02                2.75                   5.50"
    let lat = rows[0];
    assert_eq!(lat.header.test.as_deref(), Some("RDMA_Read Latency Test"));
    assert_eq!(
        (lat.header.mtu, lat.header.device.as_deref()),
        (Some(1024), Some("mlx5_0"))
    );
    assert_eq!((lat.bytes, lat.iterations), (2, 1000));
    let Measure::Latency {
        min_us,
        max_us,
        typical_us,
        avg_us,
        stdev_us,
        p99_us,
        p999_us,
    } = lat.measure
    else {
        panic!("expected latency: {lat:?}");
    };
    assert!(
        close(min_us, 2.64)
            && close(max_us, 5.50)
            && close(typical_us, 2.69)
            && close(avg_us, 2.69)
    );
    assert!(close(stdev_us, 0.02) && close(p99_us, 2.75) && close(p999_us, 5.50));
    // " 65536      5000             11025.44            11024.71                  0.176395" in MB/sec.
    let w = rows[1];
    assert_eq!(w.header.test.as_deref(), Some("RDMA_Write BW Test"));
    assert_eq!((w.bytes, w.iterations), (65536, 5000));
    let (peak, avg, rate) = bw(w);
    assert!(close(peak, 11025.44 * 1_048_576.0 * 8.0 / 1e9), "{peak:?}");
    assert!(
        close(avg, 11024.71 * 1_048_576.0 * 8.0 / 1e9) && close(rate, 0.176395),
        "{avg:?}"
    );

    let strict = Thresholds::parse(Some("100Gb/s"), Some("2.5us")).expect("valid");
    let fired: Vec<PerftestEvent> = run(name, strict)
        .into_iter()
        .filter(PerftestEvent::fires)
        .collect();
    assert!(
        matches!(
            &fired[0],
            PerftestEvent::Breach {
                breach: Breach::LatencyAbove { .. },
                ..
            }
        ),
        "{fired:?}"
    );
    assert!(
        matches!(
            &fired[1],
            PerftestEvent::Breach {
                breach: Breach::BandwidthBelow { .. },
                ..
            }
        ),
        "{fired:?}"
    );
    assert_eq!(fired.len(), 2);
}

#[test]
fn perftest_failed_runs_fire_errors() {
    for name in perftest_files().iter().filter(|n| n.contains("_fail")) {
        let events = run(name, Thresholds::default());
        let errors: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                PerftestEvent::Error { trigger, .. } => Some(trigger.as_str()),
                _ => None,
            })
            .collect();
        assert!(!errors.is_empty(), "{name}: no error event in {events:?}");
        assert!(
            errors.iter().all(|t| *t == "perftest-connect-error"),
            "{name}: {errors:?}"
        );
        assert!(results(&events).is_empty(), "{name}: {events:?}");
    }
    let events = run("ib_read_bw_server_fail_pib.txt", Thresholds::default());
    let Some(PerftestEvent::Error { line, .. }) = events.first() else {
        panic!("{events:?}")
    };
    assert_eq!(line, "pp_read_keys: Success");
}

/// Triggers for failures whose wording is in the source (`triggers/formats`) but of which
/// no printed line has been published: their example is the format string instantiated,
/// and `tests/formats.rs` checks them like every other row. Each leaves this list when a
/// real line turns up.
const NO_PUBLISHED_LINE: &[&str] = &[
    "nccl-tests-timeout",
    "oneccl-timeout",
    "pscom-deadlock",
    "nvshmem-gpu-timeout",
    "mscclpp-timeout",
    "ucc-timeout",
    "kernel-srp-abort",
];

#[test]
fn every_builtin_example_is_a_real_corpus_line_of_its_class() {
    let rows = load_tsv("positives.tsv");
    let failures: Vec<String> = all_packs()
        .iter()
        .filter(|def| !NO_PUBLISHED_LINE.contains(&def.name.as_str()))
        .filter(|def| {
            !rows
                .iter()
                .any(|r| r.line == def.example && r.class == def.class)
        })
        .map(|def| {
            format!(
                "{}: example is not a {} line of positives.tsv: {:?}",
                def.name, def.class, def.example
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The lazy set (each pattern compiled alone when a line holds its literals) and the
/// whole set answer alike on every corpus line: positives, negatives and ambiguous
/// ones, as published and with their case changed.
#[test]
fn the_lazy_set_answers_as_the_whole_set_on_the_corpus() {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for file in ["positives.tsv", "negatives.tsv", "ambiguous.tsv"] {
        for row in load_tsv(file) {
            lines.push(row.line.to_ascii_uppercase().into_bytes());
            lines.push(row.line.into_bytes());
        }
    }
    common::assert_lazy_and_whole_agree(&lines);
}
